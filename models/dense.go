package models

import (
	"math"

	"github.com/flare-net/flare/wire"
)

// Row is the dense model's answer for one design and one message size.
// Times are in core cycles, memory in aggregation buffers of PacketBytes.
type Row struct {
	Algo         string  `json:"algo"`              // Design.String of the evaluated design
	Buffers      int     `json:"buffers,omitempty"` // B, for multi
	Bytes        int64   `json:"bytes"`             // Z, bytes per host
	Hosts        int     `json:"hosts"`             // P
	Blocks       int64   `json:"blocks"`            // packets per host
	Tau          float64 `json:"tau_cycles"`        // τ, mean service time of a core per packet
	Work         float64 `json:"work_cycles"`       // τ without contention (the handler's own work)
	Contenders   float64 `json:"contenders"`        // n, handlers of one block that meet at one buffer
	DeltaC       float64 `json:"same_block_interarrival_cycles"`
	Bandwidth    float64 `json:"bandwidth_pkts_per_cycle"` // 𝓑 = min(K/τ, 1/δ)
	Gbps         float64 `json:"bandwidth_gbps"`           // 𝓑 in Gbit/s of packet payload into the switch
	ElementsPerS float64 `json:"elements_per_s"`           // elements aggregated per second
	LinkBound    bool    `json:"link_bound"`               // 1/δ < K/τ: the hosts' links, not the cores, bound 𝓑
	Utilization  float64 `json:"utilization"`              // ρ = 𝓑τ/K
	Latency      float64 `json:"latency_cycles"`           // 𝓛, first packet of a block in to its result out
	M            float64 `json:"buffers_per_block"`        // M
	R            float64 `json:"memory_buffers"`           // 𝓡 = M·(𝓑/P)·𝓛 (Little's law)
	MemoryBytes  float64 `json:"memory_bytes"`             // 𝓡 × PacketBytes
	Occupancy    float64 `json:"queue_occupancy"`          // packets in one cluster's input buffers, queued or running
	QueueWait    float64 `json:"queue_wait_cycles"`        // time a packet waits for a core
}

// shape is what a design contributes to the model (§6).
type shape struct {
	work   float64 // w: the handler's own cycles per packet, amortised over a block
	crit   float64 // c: cycles spent inside a shared buffer's critical section
	nmax   float64 // most handlers that can meet at one buffer
	spread float64 // δc multiplier: B buffers see B·δc (§6, multi-buffer)
	fold   float64 // cycles the block's last handler adds beyond its share (multi: (B−1)·L)
	m      float64 // M, buffers a block holds
}

// shapeOf returns the per-design quantities for p (resolved) and d
// (resolved: never AlgoAuto).
func shapeOf(p Params, d Design) shape {
	L, D, P := p.CyclesPerPacket, p.DMACycles, float64(p.Hosts)
	conc := math.Min(float64(p.SubsetS), P) // handlers of one block that can run at once
	switch d.Algo {
	case wire.AlgoMulti:
		// §6: "the last handler needs to aggregate the data from the other
		// B−1 buffers, and this costs (B−1)L additional cycles", shared by
		// the P packets of the block; "we have M = B". A block cannot use
		// more buffers than it has packets.
		B := math.Min(float64(d.Buffers), P)
		s := shape{work: L + (B-1)*L/P, crit: L, nmax: math.Max(1, conc/B), spread: B, fold: (B - 1) * L, m: float64(d.Buffers)}
		if p.CountCopies {
			// The first packet into each of the B buffers is a DMA copy,
			// not a fold; the result leaves by one more copy.
			s.work = ((P-B)*L + B*D + (B-1)*L + D) / P
		}
		return s
	case wire.AlgoTree:
		// §6: "A total of P−1 aggregations are executed ... τ = (P−1)L/P";
		// "on average we have M = (P−1)/log P active buffers".
		s := shape{work: (P - 1) * L / P, nmax: 1, spread: 1, m: (P - 1) / math.Log2(P)}
		if p.CountCopies {
			s.work = ((P-1)*L + (P+1)*D) / P // every leaf is copied in, the root out
		}
		return s
	}
	// Single buffer (§6): every packet folds L cycles into the one buffer,
	// M = 1.
	s := shape{work: L, crit: L, nmax: conc, spread: 1, m: 1}
	if p.CountCopies {
		s.work = ((P-1)*L + 2*D) / P // the first packet is copied in, the result out
	}
	return s
}

// serviceTime is τ for n contenders under the chosen reading. With n
// handlers at one buffer the i-th spins (i−1)·c cycles before its own work,
// so (§6) the mean service time is w + c(n−1)/2 — Σ_{i=1..n} i·L/n = L(n+1)/2
// for the single buffer. The waiting-only reading takes the printed
// L(n−1)/2 as τ itself, floored at the own work (L ≤ τ, §6).
func (s shape) serviceTime(r Reading, n float64) float64 {
	if r == ReadWaitingOnly {
		return s.work + s.crit*math.Max(0, (n-3)/2)
	}
	return s.work + s.crit*(n-1)/2
}

// contenders is n for a same-block inter-arrival δc: the packets of one
// block that arrive while one of them holds the buffer, L/(spread·δc),
// at least 1 and at most nmax. §6: "If δc ≥ L, on average there is never
// more than one packet of the same block processed concurrently"; with B
// buffers δc is replaced by B·δc.
func (s shape) contenders(deltaC float64) float64 {
	if s.crit == 0 || deltaC <= 0 {
		return math.Min(1, s.nmax)
	}
	return math.Min(s.nmax, math.Max(1, s.crit/(s.spread*deltaC)))
}

// staggerGroup is G, the blocks of one stagger group: the window when it
// is smaller than the vector, else the whole vector; 1 without staggering.
func staggerGroup(p Params) float64 {
	switch {
	case !p.Staggered:
		return 1
	case p.Window > 0 && int64(p.Window) < p.Blocks():
		return float64(p.Window)
	}
	return float64(p.Blocks())
}

// operatingPoint solves for τ, n, δc and the effective inter-arrival δe.
//
// Hosts keep a window of blocks in flight, so packets cannot arrive faster
// than the switch serves them: δe = max(δ, τ/K). With staggered sending the
// G blocks of a stagger group are sent in rotation, so two packets of one
// block are G packet times apart: δc = G·δe (§5). A slower switch spreads
// the packets of a block further and so contends less; τ is the fixed
// point of τ = serviceTime(n(δc(δe(τ)))), which exists and is unique
// because the right side does not grow with τ. At G = K it gives δc = L
// and τ = L for the single buffer: the paper's "one block per core" rule.
func operatingPoint(p Params, s shape) (tau, n, deltaC, deltaE float64) {
	K := float64(p.Cores())
	g := staggerGroup(p)
	at := func(tau float64) (n, dc, de float64) {
		de = math.Max(p.InterArrival, tau/K)
		dc = g * de
		if p.SameBlockInterArrival > 0 {
			dc = p.SameBlockInterArrival
		}
		return s.contenders(dc), dc, de
	}
	T := func(tau float64) float64 {
		n, _, _ := at(tau)
		return s.serviceTime(p.Reading, n)
	}
	if p.SameBlockInterArrival > 0 { // δc given: no fixed point to solve
		tau = T(s.work)
		n, deltaC, deltaE = at(tau)
		return tau, n, deltaC, deltaE
	}
	lo, hi := s.work, s.serviceTime(p.Reading, s.nmax)
	if T(lo) <= lo {
		hi = lo
	}
	for i := 0; i < 200 && hi-lo > 1e-13*hi; i++ {
		mid := (lo + hi) / 2
		if mid-T(mid) >= 0 {
			hi = mid
		} else {
			lo = mid
		}
	}
	tau = hi
	n, deltaC, deltaE = at(tau)
	return tau, n, deltaC, deltaE
}

// Evaluate runs the dense model for one design at p.Bytes. p must pass
// Validate; an AlgoAuto design is resolved with ChoosePaper.
//
// The formulas, each from the Flare paper (§ numbers are the paper's):
//
//	τ        per design, shapeOf and operatingPoint (§6)
//	𝓑        = min(K/τ, 1/δ) packets per cycle (§4)
//	𝓛        = (P−1)·δc + W_q + the last handler's work: the block's first
//	           packet arrives, the other P−1 follow δc apart, the last one
//	           waits W_q for a core and runs (§4, "the time between ... ")
//	𝓡        = M·(𝓑/P)·𝓛 buffers (§4, Little's law)
//	occupancy per cluster, queue (§4–5: "the time the packet spends in the
//	           queue plus the time it spends while being processed")
func Evaluate(p Params, d Design) Row {
	p = p.Resolve()
	d = d.resolve(p)
	s := shapeOf(p, d)
	tau, n, deltaC, deltaE := operatingPoint(p, s)

	K := float64(p.Cores())
	P := float64(p.Hosts)
	bw := K / tau
	linkBound := false
	if p.InterArrival > 0 && 1/p.InterArrival < bw {
		bw, linkBound = 1/p.InterArrival, true
	}
	occ, wait := queue(p, tau, bw)

	var last float64
	switch d.Algo {
	case wire.AlgoTree:
		// The last packet of a block finds every other subtree complete and
		// climbs all ⌈log2 P⌉ levels (§6, Figure 9).
		last = math.Ceil(math.Log2(P)) * p.CyclesPerPacket
		if p.CountCopies {
			last += 2 * p.DMACycles
		}
	default:
		// Its mean service time, with the whole fold instead of a share.
		last = tau + s.fold*(1-1/P)
	}
	latency := (P-1)*deltaC + wait + last
	if d.Algo == wire.AlgoTree && p.TreeArrivalOrder {
		// M is the mean of the buffers a block holds over its latency: its
		// buffer-cycles for the staggered arrival order over 𝓛.
		s.m = treeBufferCycles(p, staggerGroup(p), deltaE) / latency
	}
	r := s.m * (bw / P) * latency

	return Row{
		Algo: d.String(), Buffers: d.Buffers, Bytes: p.Bytes, Hosts: p.Hosts, Blocks: p.Blocks(),
		Tau: tau, Work: s.work, Contenders: n, DeltaC: deltaC,
		Bandwidth: bw, Gbps: bw * float64(p.PacketBytes) * 8 * p.ClockHz / 1e9,
		ElementsPerS: bw * p.ClockHz * float64(p.ElementsPerPacket()),
		LinkBound:    linkBound, Utilization: bw * tau / K,
		Latency: latency, M: s.m, R: r, MemoryBytes: r * float64(p.PacketBytes),
		Occupancy: occ, QueueWait: wait,
	}
}

// Sweep evaluates every design at sizes from, 2·from, 4·from, ... up to
// and including to (bytes per host), size by size. p.Bytes is ignored.
func Sweep(p Params, designs []Design, from, to int64) []Row {
	var rows []Row
	for _, z := range Sizes(from, to) {
		p.Bytes = z
		for _, d := range designs {
			rows = append(rows, Evaluate(p, d))
		}
	}
	return rows
}

// Sizes are the sizes a sweep walks: from, 2·from, 4·from, ... up to and
// including to; none when from < 1.
func Sizes(from, to int64) []int64 {
	var sizes []int64
	if from < 1 {
		return nil
	}
	for z := from; z <= to && z > 0; z *= 2 {
		sizes = append(sizes, z)
	}
	return sizes
}
