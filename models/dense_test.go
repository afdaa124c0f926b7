package models

import (
	"math"
	"testing"

	"github.com/flare-net/flare/wire"
)

// TestTreeFormula: §6, "τ = (P−1)L/P" and "M = (P−1)/log P".
func TestTreeFormula(t *testing.T) {
	for _, preset := range Presets() {
		for _, hosts := range []int{2, 3, 8, 64, 100} {
			p := mustPreset(t, preset)
			p.Hosts, p.InterArrival = hosts, 0
			for _, z := range []int64{4 << 10, 1 << 20} {
				p.Bytes = z
				r := Evaluate(p, Tree)
				P, L := float64(hosts), p.CyclesPerPacket
				if want := (P - 1) * L / P; beyond(r.Tau-want, 1e-9) {
					t.Errorf("%s P=%d Z=%d: tree τ = %g, want (P−1)L/P = %g", preset, hosts, z, r.Tau, want)
				}
				if want := (P - 1) / math.Log2(P); beyond(r.M-want, 1e-12) {
					t.Errorf("%s P=%d: tree M = %g, want (P−1)/log2 P = %g", preset, hosts, r.M, want)
				}
				if r.Contenders != 1 {
					t.Errorf("tree has %g contenders, want 1 (no shared buffer)", r.Contenders)
				}
				// The block's last packet climbs every level, ⌈log2 P⌉ of them.
				last := math.Ceil(math.Log2(P)) * L
				if p.CountCopies {
					last += 2 * p.DMACycles
				}
				if got := r.Latency - (P-1)*r.DeltaC - r.QueueWait; beyond(got-last, 1e-9*last) {
					t.Errorf("%s P=%d: the tree's last packet takes %g cycles after its arrival and wait, want ⌈log2 P⌉·L = %g", preset, hosts, got, last)
				}
			}
		}
	}
}

// TestSingleContention: the worst case of §6, C handlers at one buffer, in
// both readings of the printed formula.
func TestSingleContention(t *testing.T) {
	p := mustPreset(t, PresetFlare)
	L, C := p.CyclesPerPacket, float64(p.CoresPerCluster)
	var sum float64
	for i := 1; i <= p.CoresPerCluster; i++ {
		sum += float64(i) * L
	}
	cases := []struct {
		name    string
		reading Reading
		deltaC  float64
		subset  int
		n, tau  float64
	}{
		{"worst case, service", ReadService, 1, 8, C, sum / C},                  // Σ iL/C = L(C+1)/2
		{"worst case, waiting-only", ReadWaitingOnly, 1, 8, C, L * (C - 1) / 2}, // as printed
		{"δc = L", ReadService, L, 8, 1, L},
		{"δc = L/3, service", ReadService, L / 3, 8, 3, 2 * L},
		{"δc = L/3, waiting-only", ReadWaitingOnly, L / 3, 8, 3, L}, // floored: L ≤ τ
		{"S = 1", ReadService, 1, 1, 1, L},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := p
			q.Reading, q.SameBlockInterArrival, q.SubsetS = tc.reading, tc.deltaC, tc.subset
			r := Evaluate(q, Single)
			if beyond(r.Contenders-tc.n, 1e-12) || beyond(r.Tau-tc.tau, 1e-9) {
				t.Errorf("n = %g, τ = %g; want %g, %g", r.Contenders, r.Tau, tc.n, tc.tau)
			}
		})
	}
	if want := L * (C + 1) / 2; sum/C != want {
		t.Errorf("Σ_{i=1..C} iL/C = %g, L(C+1)/2 = %g", sum/C, want)
	}
}

// TestMultiBuffers: §6, "replacing δc with Bδc" and "(B−1)L additional
// cycles" for the last handler; M = B.
func TestMultiBuffers(t *testing.T) {
	p := mustPreset(t, PresetFlare)
	L, P := p.CyclesPerPacket, float64(p.Hosts)
	p.SameBlockInterArrival = L / 4
	for _, tc := range []struct {
		d      Design
		n, tau float64
	}{
		{Single, 4, 2.5 * L},
		{Multi2, 2, 1.5*L + L/P},
		{Multi4, 1, L + 3*L/P},
	} {
		r := Evaluate(p, tc.d)
		if beyond(r.Contenders-tc.n, 1e-12) || beyond(r.Tau-tc.tau, 1e-9) {
			t.Errorf("%s: n = %g, τ = %g; want %g, %g", tc.d, r.Contenders, r.Tau, tc.n, tc.tau)
		}
		if tc.d.Algo == wire.AlgoMulti && r.M != float64(tc.d.Buffers) {
			t.Errorf("%s: M = %g, want B", tc.d, r.M)
		}
	}
	// At most S/B handlers meet at one of the B buffers.
	p.SameBlockInterArrival = 1e-3
	if r := Evaluate(p, Multi2); r.Contenders != 4 {
		t.Errorf("multi2 with S = 8: %g contenders, want 4", r.Contenders)
	}
}

// TestStaggerFixedPoint: with staggering over G blocks the single buffer's
// τ solves τ = L(n+1)/2 with n = K·L/(G·τ): τ = L(1 + √(1 + 8K/G))/4; at
// G = K (512 KiB on the flare switch, "one block per core") that is L.
func TestStaggerFixedPoint(t *testing.T) {
	p := mustPreset(t, PresetFlare)
	L, K := p.CyclesPerPacket, float64(p.Cores())
	for _, tc := range []struct {
		bytes  int64
		window int
	}{{512 << 10, 0}, {256 << 10, 0}, {128 << 10, 0}, {1 << 20, 64}, {1 << 20, 256}} {
		q := p
		q.Bytes, q.Window = tc.bytes, tc.window
		g := float64(q.Blocks())
		if tc.window > 0 {
			g = float64(tc.window)
		}
		r := Evaluate(q, Single)
		want := L * (1 + math.Sqrt(1+8*K/g)) / 4
		if beyond(r.Tau-want, 1e-6*want) {
			t.Errorf("Z=%s W=%d: τ = %.4f, want %.4f", FormatBytes(float64(tc.bytes)), tc.window, r.Tau, want)
		}
		if de := math.Max(q.InterArrival, r.Tau/K); beyond(r.DeltaC-g*de, 1e-9*r.DeltaC) {
			t.Errorf("δc = %g, want G·max(δ, τ/K) = %g", r.DeltaC, g*de)
		}
	}
	p.Bytes = 512 << 10
	if r := Evaluate(p, Single); r.Tau != L || r.Contenders != 1 || r.DeltaC != L {
		t.Errorf("512 KiB on 512 cores: τ = %g, n = %g, δc = %g; want L, 1, L", r.Tau, r.Contenders, r.DeltaC)
	}
	p.Staggered = false
	if r := Evaluate(p, Single); r.Contenders != float64(p.SubsetS) {
		t.Errorf("unstaggered: %g contenders, want S = %d", r.Contenders, p.SubsetS)
	}
}

// TestLittlesLaw checks 𝓡 = M·(𝓑/P)·𝓛 (§4) and 𝓑 = min(K/τ, 1/δ) on every
// row of many sweeps.
func TestLittlesLaw(t *testing.T) {
	variants := map[string]func(*Params){
		"default":      func(*Params) {},
		"waiting-only": func(p *Params) { p.Reading = ReadWaitingOnly },
		"copies":       func(p *Params) { p.CountCopies = true },
		"unstaggered":  func(p *Params) { p.Staggered = false },
		"window 64":    func(p *Params) { p.Window = 64 },
		"S=1":          func(p *Params) { p.SubsetS = 1 },
		"link-bound":   func(p *Params) { p.HostGbps, p.InterArrival = 10, 0 },
		"int8":         func(p *Params) { p.DType, p.CyclesPerPacket = wire.Int8, 0 },
		"P=5":          func(p *Params) { p.Hosts, p.InterArrival = 5, 0 },
	}
	designs := append(Designs(), Design{Algo: wire.AlgoMulti, Buffers: 8})
	n := 0
	for _, preset := range Presets() {
		for name, mut := range variants {
			p := mustPreset(t, preset)
			mut(&p)
			p = p.Resolve()
			K := float64(p.Cores())
			for _, r := range Sweep(p, designs, 1<<10, 16<<20) {
				n++
				want := r.M * (r.Bandwidth / float64(r.Hosts)) * r.Latency
				if beyond(r.R-want, 1e-9*want) || beyond(r.MemoryBytes-r.R*float64(p.PacketBytes), 1e-6) {
					t.Fatalf("%s/%s %s %d: R = %g, M·(𝓑/P)·𝓛 = %g", preset, name, r.Algo, r.Bytes, r.R, want)
				}
				if bw := math.Min(K/r.Tau, 1/p.InterArrival); beyond(r.Bandwidth-bw, 1e-12*bw) {
					t.Fatalf("%s/%s %s %d: 𝓑 = %g, min(K/τ, 1/δ) = %g", preset, name, r.Algo, r.Bytes, r.Bandwidth, bw)
				}
				if r.Tau < r.Work-1e-9 || r.Latency <= 0 || r.Occupancy <= 0 || r.Occupancy > float64(p.QueueDepth) {
					t.Fatalf("%s/%s %s %d: τ %g < work %g, or latency %g, occupancy %g out of range",
						preset, name, r.Algo, r.Bytes, r.Tau, r.Work, r.Latency, r.Occupancy)
				}
			}
		}
	}
	if n < 500 {
		t.Fatalf("only %d rows checked", n)
	}
}

func TestBandwidthUnits(t *testing.T) {
	p := mustPreset(t, PresetFlare)
	r := Evaluate(p, Single) // 1 MiB: τ = L, 512 cores
	if r.Bandwidth != 0.5 || r.Gbps != 4096 || r.ElementsPerS != 128e9 || r.LinkBound {
		t.Errorf("flare single 1 MiB: %g pkt/cycle, %g Gbit/s, %g elem/s, link-bound %v; want 0.5, 4096, 128e9, false",
			r.Bandwidth, r.Gbps, r.ElementsPerS, r.LinkBound)
	}
	if r.Gbps <= SHARPGbps || SHARPGbps <= SwitchMLGbps {
		t.Errorf("flare's %g Gbit/s should exceed SHARP's %d (paper, Figure 11)", r.Gbps, SHARPGbps)
	}
	// Figure 11, right: narrower types aggregate more elements per second.
	for _, tc := range []struct {
		d     wire.DType
		ratio float64
	}{{wire.Int16, 2}, {wire.Int8, 4}, {wire.Float32, 1}, {wire.Float64, 0.5}, {wire.BFloat16, 1}, {wire.Float16, 1}} {
		q := p
		q.DType, q.CyclesPerPacket = tc.d, 0
		if got := Evaluate(q, Single).ElementsPerS / r.ElementsPerS; beyond(got-tc.ratio, 1e-12) {
			t.Errorf("%s: %g× the int32 elements/s, want %g×", tc.d, got, tc.ratio)
		}
	}
	p.HostGbps, p.InterArrival = 10, 0
	r = Evaluate(p, Single)
	if !r.LinkBound || beyond(r.Gbps-640, 1e-9) {
		t.Errorf("64 hosts at 10 Gbit/s: %g Gbit/s, link-bound %v; want 640, true", r.Gbps, r.LinkBound)
	}
}

// TestQueueMD1: with S = 1 each core is an M/D/1 queue, for which the
// model's formula is exact (Pollaczek–Khinchine): L_q = ρ²/(2(1−ρ)).
func TestQueueMD1(t *testing.T) {
	p := mustPreset(t, PresetFlare)
	p.SubsetS = 1
	L, K := p.CyclesPerPacket, float64(p.Cores())
	p.InterArrival = 2 * L / K // ρ = 0.5 at τ = L
	r := Evaluate(p, Single)
	rho := 0.5
	lq := rho * rho / (2 * (1 - rho))
	if r.Tau != L || beyond(r.Utilization-rho, 1e-12) {
		t.Fatalf("τ = %g, ρ = %g; want L, 0.5", r.Tau, r.Utilization)
	}
	if want := float64(p.CoresPerCluster) * (lq + rho); beyond(r.Occupancy-want, 1e-9) {
		t.Errorf("occupancy %g, want C·(L_q + ρ) = %g", r.Occupancy, want)
	}
	if want := lq / (rho / L); beyond(r.QueueWait-want, 1e-9) {
		t.Errorf("wait %g, want L_q/λ = %g", r.QueueWait, want)
	}
	if got := erlangC(2, 1); beyond(got-1.0/3, 1e-12) {
		t.Errorf("erlangC(2, 1) = %g, want 1/3", got)
	}
	if got := erlangC(1, 0.7); beyond(got-0.7, 1e-12) {
		t.Errorf("erlangC(1, ρ) = %g, want ρ", got)
	}
}

// A cluster of C = 4 cores in subsets of S = 2 is two M/M/2 queues, each
// fed λ·S/K: at ρ = ½ (τ = 1000 cycles, 𝓑 = 0.002 packets a cycle) each
// subset has a = 1 busy core and C(2, 1) = ⅓, so L_q = C(2, 1)·ρ/(1−ρ)·½
// = ⅙ (the ½ is Allen–Cunneen's for constant service): the cluster holds
// C/S·(L_q + a) = 7/3 and a packet waits L_q/λ_S = ⅙/0.001 cycles.
func TestQueueSubsets(t *testing.T) {
	p := mustPreset(t, PresetPsPIN)
	p.Clusters, p.CoresPerCluster, p.SubsetS, p.QueueDepth = 1, 4, 2, 100
	occ, wait := queue(p, 1000, 0.002)
	if beyond(occ-7.0/3, 1e-9) || beyond(wait-1000.0/6, 1e-9) {
		t.Errorf("occupancy %g, wait %g cycles; want 7/3 and 1000/6", occ, wait)
	}
	// Saturated (ρ = 1) with room for 2 requests on 4 cores: the cluster
	// holds its 2, and nothing waits.
	p.QueueDepth = 2
	if occ, wait := queue(p, 1000, 0.004); occ != 2 || wait != 0 {
		t.Errorf("Q = 2 < C: occupancy %g, wait %g cycles; want 2 and 0", occ, wait)
	}
}

// TestOccupancyTradeoff: §6, a lower τ lowers the occupancy; so does a
// larger S at the same τ (pooling); a saturated switch sits at Q.
func TestOccupancyTradeoff(t *testing.T) {
	p := mustPreset(t, PresetFlare)
	p.InterArrival = 4 // 0.25 packets per cycle: below capacity for τ ≤ 2048
	occ := func(mut func(*Params)) Row {
		q := p
		mut(&q)
		return Evaluate(q, Single)
	}
	fast := occ(func(q *Params) { q.CyclesPerPacket = 512 })
	slow := occ(func(q *Params) { q.CyclesPerPacket = 1536 })
	if !(fast.Occupancy < slow.Occupancy) {
		t.Errorf("occupancy with L=512: %g, L=1536: %g; want lower for lower τ", fast.Occupancy, slow.Occupancy)
	}
	s1 := occ(func(q *Params) { q.SubsetS = 1 })
	s8 := occ(func(*Params) {})
	if s1.Tau != s8.Tau || !(s8.Occupancy < s1.Occupancy) {
		t.Errorf("S=1: τ %g occupancy %g; S=8: τ %g occupancy %g; want equal τ, lower occupancy for S=8",
			s1.Tau, s1.Occupancy, s8.Tau, s8.Occupancy)
	}
	sat := Evaluate(mustPreset(t, PresetFlare), Single)
	lambdaC := sat.Bandwidth / 64
	if sat.Occupancy != 20 || beyond(sat.QueueWait-(20/lambdaC-sat.Tau), 1e-9) || sat.Utilization != 1 {
		t.Errorf("saturated: occupancy %g, wait %g, ρ %g; want Q = 20, Q/λ − τ, 1", sat.Occupancy, sat.QueueWait, sat.Utilization)
	}
}

func TestCountCopies(t *testing.T) {
	p := mustPreset(t, PresetFlare)
	p.CountCopies = true
	L, D, P := p.CyclesPerPacket, p.DMACycles, float64(p.Hosts)
	if r, want := Evaluate(p, Tree), ((P-1)*L+(P+1)*D)/P; beyond(r.Tau-want, 1e-9) {
		t.Errorf("tree with copies: τ = %g, want %g", r.Tau, want)
	}
	if r, want := Evaluate(p, Single), ((P-1)*L+2*D)/P; beyond(r.Tau-want, 1e-9) {
		t.Errorf("single with copies at 1 MiB: τ = %g, want %g", r.Tau, want)
	}
	if r, want := Evaluate(p, Multi4), ((P-4)*L+4*D+3*L+D)/P; beyond(r.Tau-want, 1e-9) {
		t.Errorf("multi4 with copies: τ = %g, want %g", r.Tau, want)
	}
}

func TestSweep(t *testing.T) {
	p := mustPreset(t, PresetPsPIN)
	rows := Sweep(p, Designs(), 4<<10, 4<<20)
	if len(rows) != 11*4 {
		t.Fatalf("%d rows, want 44", len(rows))
	}
	for i, r := range rows {
		if want := int64(4<<10) << (i / 4); r.Bytes != want || r.Algo != Designs()[i%4].String() {
			t.Errorf("row %d: %s %d, want %s %d", i, r.Algo, r.Bytes, Designs()[i%4], want)
		}
		if r.Blocks != r.Bytes/1024 || r.Hosts != 8 {
			t.Errorf("row %d: %d blocks, %d hosts", i, r.Blocks, r.Hosts)
		}
	}
	if Sweep(p, Designs(), 0, 10) != nil || len(Sweep(p, Designs(), 8, 4)) != 0 {
		t.Error("empty ranges should give no rows")
	}
}

// TestZeroParams: the model never panics on parameters that do not
// Validate; it returns meaningless numbers, which is why callers validate.
func TestZeroParams(t *testing.T) {
	for _, d := range append(Designs(), Auto, Design{Algo: wire.AlgoMulti}) {
		Evaluate(Params{}, d)
		JobMemory(Params{}, d)
	}
	ChooseModel(Params{}, 1, 0)
	Sweep(Params{}, Designs(), 1, 4)
	if r := SparseEvaluate(Params{}, StorageHash, 0.1); r.Err == "" {
		t.Error("SparseEvaluate accepted zero params")
	}
}
