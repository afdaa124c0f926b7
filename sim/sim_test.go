package sim

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/proto"
	"github.com/flare-net/flare/wire"
)

// flareHPU is the unit of the paper's switch: enough cores that 512 KiB of
// 1 KiB packets gives one block per core.
var flareHPU = hpu.Config{Clusters: 64, CoresPerCluster: 8}

// design is one dense design under test, named as the model's rows name it.
type design struct {
	algo wire.Algo
	b    int
}

func (d design) String() string { return DesignName(d.algo, d.b) }

// designs are the four designs of the paper's Figure 10.
var designs = []design{{wire.AlgoSingle, 0}, {wire.AlgoMulti, 2}, {wire.AlgoMulti, 4}, {wire.AlgoTree, 0}}

func simulate(t testing.TB, cfg Config) Result {
	t.Helper()
	r, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Every design gives the reference result for several dtypes, with P not a
// power of two, a short last block, and with and without a window.
func TestSimulateExact(t *testing.T) {
	for _, dg := range designs {
		for _, dt := range []wire.DType{wire.Int32, wire.Float32, wire.Int8, wire.BFloat16, wire.Float16, wire.Float64} {
			for _, win := range []int{0, 3} {
				t.Run(fmt.Sprintf("%s/%s/w%d", dg, dt, win), func(t *testing.T) {
					cfg := Config{
						HPU: hpu.Config{Clusters: 2, CoresPerCluster: 4}, Hosts: 5, Bytes: 37*1024 + 8*dt.Size(),
						DType: dt, Algo: dg.algo, Buffers: dg.b, Seed: 3, Window: win,
					}
					r := simulate(t, cfg)
					if r.Blocks != 38 || r.Packets != 5*38 || r.Algo != DesignName(dg.algo, dg.b) {
						t.Fatalf("%d blocks, %d packets, algo %q", r.Blocks, r.Packets, r.Algo)
					}
					if r.TauCycles <= 0 || r.Cycles <= 0 || r.LatencyCycles <= 0 || r.MemoryBuffers <= 0 {
						t.Fatalf("implausible measurements: %+v", r)
					}
					if r.QueueOccupancyMax > int64(hpu.DefaultQueueDepth) {
						t.Fatalf("queue occupancy %d above the depth %d", r.QueueOccupancyMax, hpu.DefaultQueueDepth)
					}
				})
			}
		}
	}
	// Other operators, on one design each.
	for _, op := range []wire.Op{wire.OpMax, wire.OpProd, wire.OpXor} {
		cfg := Config{HPU: hpu.Config{Clusters: 1, CoresPerCluster: 4}, Hosts: 3, Bytes: 9000, Op: op, Algo: wire.AlgoMulti, Seed: 1}
		simulate(t, cfg)
	}
}

// Rounds run allreduces back to back: every round's result is checked, the
// blocks are numbered on (round r's block b is r·N + b, on the clusters
// after round r−1's), every host staggers inside a round, and the rates
// count each round's bytes.
func TestSimulateRounds(t *testing.T) {
	for _, dg := range designs {
		cfg := Config{HPU: hpu.Config{Clusters: 4, CoresPerCluster: 4}, Hosts: 6, Bytes: 4096, Algo: dg.algo, Buffers: dg.b, Seed: 2, Rounds: 5}
		r := simulate(t, cfg)
		if r.Rounds != 5 || r.Blocks != 4 || r.StaggerBlocks != 4 || r.Packets != 6*4*5 {
			t.Fatalf("%s: %d rounds of %d blocks staggered over %d, %d packets", r.Algo, r.Rounds, r.Blocks, r.StaggerBlocks, r.Packets)
		}
		one := simulate(t, Config{HPU: cfg.HPU, Hosts: 6, Bytes: 5 * 4096, Algo: dg.algo, Buffers: dg.b, Seed: 2})
		if one.StaggerBlocks != 20 || r.BandwidthGbps <= 0 {
			t.Fatalf("%s: one allreduce of 5 rounds' bytes staggers over %d blocks; rounds: %.1f Gbit/s", r.Algo, one.StaggerBlocks, r.BandwidthGbps)
		}
	}
	if got := SteadyRounds(512, 4096, 1024); got != 128 {
		t.Errorf("SteadyRounds(512 cores, 4KiB) = %d, want 128", got)
	}
	if got := SteadyRounds(512, 1<<20, 1024); got != 1 {
		t.Errorf("SteadyRounds(512 cores, 1MiB) = %d, want 1", got)
	}
	if got := SteadyRounds(512, 3072, 1024); got != 171 {
		t.Errorf("SteadyRounds(512 cores, 3KiB) = %d, want 171 (rounded up)", got)
	}
	if got := SteadyRounds(512, 4000, 1024); got != 1 {
		t.Errorf("SteadyRounds(512 cores, 4000 bytes) = %d, want 1 (not whole packets)", got)
	}
}

// Where no two handlers of a block ever run at once (S = 1, or the tree's
// locks, which no handler holds across a charge), τ is the cost model's
// per-packet cycles exactly, with no lock waiting.
func TestSimulateTauContentionFree(t *testing.T) {
	const p = 8
	cost := hpu.PsPINCost()
	cp, l := float64(cost.Copy(1024)), float64(cost.Aggregate(wire.Int32, 256))
	for _, tc := range []struct {
		dg   design
		s    int
		want float64 // cycles per block over P packets
	}{
		// First packet copies, P−1 fold, the last one copies the result out.
		{design{wire.AlgoSingle, 0}, 1, cp + (p-1)*l + cp},
		// B copies (children cover every buffer), P−B folds, B−1 folds by
		// the last handler, one copy out.
		{design{wire.AlgoMulti, 2}, 1, 2*cp + (p-2)*l + l + cp},
		{design{wire.AlgoMulti, 4}, 1, 4*cp + (p-4)*l + 3*l + cp},
		// Every packet copies into its leaf, P−1 folds, one copy out.
		{design{wire.AlgoTree, 0}, 1, p*cp + (p-1)*l + cp},
		{design{wire.AlgoTree, 0}, 8, p*cp + (p-1)*l + cp},
	} {
		hc := flareHPU
		hc.SubsetS = tc.s
		r := simulate(t, Config{HPU: hc, Hosts: p, Bytes: 64 << 10, Algo: tc.dg.algo, Buffers: tc.dg.b, Seed: 9})
		if want := tc.want / p; r.TauCycles != want || r.LockWaitCycles != 0 {
			t.Errorf("%s S=%d: τ = %v cycles (lock wait %v), want %v", tc.dg, tc.s, r.TauCycles, r.LockWaitCycles, want)
		}
	}
}

// With one buffer and the packets of a block arriving together on C cores,
// handlers wait for the lock: τ grows with C towards the paper's L(C+1)/2,
// and is far above the contention-free τ.
func TestSimulateSingleContention(t *testing.T) {
	cost := hpu.PsPINCost()
	cp, l := float64(cost.Copy(1024)), float64(cost.Aggregate(wire.Int32, 256))
	prev := 0.0
	for _, c := range []int{2, 4, 8} {
		cfg := Config{
			HPU: hpu.Config{Clusters: 1, CoresPerCluster: c}, Hosts: c, Bytes: 1024,
			Algo: wire.AlgoSingle, MeanInterArrival: 1, Seed: 5,
		}
		r := simulate(t, cfg)
		free := (cp + float64(c-1)*l + cp) / float64(c)
		// Fully serialized: the i-th (from 0) waits for the copy and i−1 folds.
		var full float64
		for i := range c {
			if i > 0 {
				full += cp + float64(i-1)*l + l
			} else {
				full += cp
			}
		}
		full = (full + cp) / float64(c)
		t.Logf("C=%d: τ = %.0f (contention-free %.0f, serialized %.0f, L(C+1)/2 = %.0f), lock wait %.0f",
			c, r.TauCycles, free, full, l*float64(c+1)/2, r.LockWaitCycles)
		if r.LockWaitCycles <= 0 || r.TauCycles <= prev || r.TauCycles < free+r.LockWaitCycles-1 {
			t.Fatalf("C=%d: τ = %v, lock wait %v: want waiting that grows with C", c, r.TauCycles, r.LockWaitCycles)
		}
		if r.TauCycles > full+float64(cost.LockBackoff)+float64(c)*2 {
			t.Fatalf("C=%d: τ = %v above the fully serialized %v", c, r.TauCycles, full)
		}
		prev = r.TauCycles
		// S = 1 puts the block on one core: no waiting at all.
		cfg.HPU.SubsetS = 1
		if r1 := simulate(t, cfg); r1.LockWaitCycles != 0 || r1.TauCycles != free {
			t.Fatalf("C=%d S=1: τ = %v, lock wait %v; want %v, 0", c, r1.TauCycles, r1.LockWaitCycles, free)
		}
	}
}

func TestSimulateDeterministic(t *testing.T) {
	for _, arr := range []Arrivals{ArrivalsSwitch, ArrivalsHosts} {
		cfg := Config{HPU: hpu.Config{Clusters: 4, CoresPerCluster: 4}, Bytes: 96 << 10, Algo: wire.AlgoMulti, Buffers: 2, Seed: 11, Window: 8, Arrivals: arr}
		a, b := simulate(t, cfg), simulate(t, cfg)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("arrivals %d: two runs with one seed differ:\n%+v\n%+v", arr, a, b)
		}
		cfg.Seed++
		if c := simulate(t, cfg); reflect.DeepEqual(a, c) {
			t.Fatalf("arrivals %d: two seeds gave identical runs", arr)
		}
	}
}

// The switch's stream keeps the hosts in step, so the packets of a block
// stay the stagger's 1024 packets apart (2L at the cores' rate); hosts
// with independent gaps drift apart, bunch and contend (docs/MODEL.md).
func TestSimulateArrivals(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("64 hosts x 1 MiB")
	}
	cfg := Config{HPU: flareHPU, Hosts: 64, Bytes: 1 << 20, Algo: wire.AlgoSingle, Seed: 1}
	sw := simulate(t, cfg)
	cfg.Arrivals = ArrivalsHosts
	ho := simulate(t, cfg)
	t.Logf("switch stream: τ %.0f, %.0f Gbit/s; independent hosts: τ %.0f, %.0f Gbit/s", sw.TauCycles, sw.BandwidthGbps, ho.TauCycles, ho.BandwidthGbps)
	if sw.TauCycles >= ho.TauCycles || sw.BandwidthGbps <= ho.BandwidthGbps {
		t.Errorf("the switch's stream should contend less than independent hosts")
	}
}

// Arrivals faster than the cores drain them fill the cluster queues to
// their depth and no further; the rest wait for room.
func TestSimulateQueueBounded(t *testing.T) {
	for _, s := range []int{1, 2} {
		cfg := Config{
			HPU: hpu.Config{Clusters: 2, CoresPerCluster: 2, QueueDepth: 4, SubsetS: s}, Hosts: 4, Bytes: 32 << 10,
			Algo: wire.AlgoTree, MeanInterArrival: 20, Seed: 2,
		}
		r := simulate(t, cfg)
		if r.QueueOccupancyMax != 4 || r.QueueOccupancy > 4 || r.IngressWaitCycles <= 0 {
			t.Fatalf("S=%d: queue occupancy mean %v max %d, ingress wait %v: want the depth, 4, reached and waiting",
				s, r.QueueOccupancy, r.QueueOccupancyMax, r.IngressWaitCycles)
		}
		// A packet's mean wait is shorter than the whole run.
		if r.IngressWaitCycles >= float64(r.Cycles) {
			t.Fatalf("S=%d: a mean ingress wait of %v cycles in a run of %d", s, r.IngressWaitCycles, r.Cycles)
		}
	}
}

// A window bounds the memory: at most min(n, W·P) open blocks.
func TestSimulateWindowMemory(t *testing.T) {
	for _, dg := range designs {
		cfg := Config{HPU: hpu.Config{Clusters: 4, CoresPerCluster: 8}, Hosts: 4, Bytes: 128 << 10, Algo: dg.algo, Buffers: dg.b, Window: 2, Seed: 4}
		r := simulate(t, cfg)
		if bound := buffersFor(dg.algo, dg.b, 4, r.Blocks, 2); r.MemoryBuffersMax > bound || r.Window != 2 {
			t.Fatalf("%s: %d buffers at the peak, window %d; want at most %d", dg, r.MemoryBuffersMax, r.Window, bound)
		}
	}
	// Hosts with their own gaps keep to the window too: the quota is the
	// window's, so one block too many in flight finds no buffer.
	for _, dg := range designs {
		cfg := Config{HPU: hpu.Config{Clusters: 4, CoresPerCluster: 8}, Hosts: 4, Bytes: 128 << 10, Algo: dg.algo, Buffers: dg.b, Window: 2, Seed: 4, Arrivals: ArrivalsHosts}
		if r := simulate(t, cfg); r.MemoryBuffersMax > buffersFor(dg.algo, dg.b, 4, r.Blocks, 2) {
			t.Fatalf("%s, independent hosts: %d buffers at the peak, above the window's", dg, r.MemoryBuffersMax)
		}
	}
	// A window wider than the vector is the vector's blocks.
	if r := simulate(t, Config{HPU: hpu.Config{Clusters: 1, CoresPerCluster: 4}, Hosts: 2, Bytes: 8 << 10, Window: 100, Seed: 1}); r.Window != 8 {
		t.Fatalf("a window of 100 over 8 blocks: %d, want 8", r.Window)
	}
	// Without a window the run picks the largest one L1 holds.
	cfg := Config{HPU: hpu.Config{Clusters: 1, CoresPerCluster: 8, L1Bytes: 64 << 10}, Hosts: 4, Bytes: 512 << 10, Algo: wire.AlgoTree, Seed: 4}
	if r := simulate(t, cfg); r.Window != 16 || r.MemoryBuffersMax > 64 {
		t.Fatalf("window %d, %d buffers at the peak; want 16 (64 buffers / 4 hosts), at most 64", r.Window, r.MemoryBuffersMax)
	}
}

func TestSimulateConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Bytes: 1022}, "bytes = 1022"},
		{Config{Bytes: 4096, Hosts: proto.MaxChildren + 1}, "hosts = 65537: must be in 1..65536"},
		{Config{Bytes: 0}, "bytes = 0"},
		{Config{Bytes: 4096, DType: wire.Float32, Op: wire.OpAnd}, "operator and on float32"},
		{Config{Bytes: 4096, PacketBytes: 2048, HPU: hpu.Config{BufferBytes: 1024}}, "packet bytes = 2048"},
		{Config{Bytes: 4096, MeanInterArrival: -1}, "inter-arrival"},
		{Config{Bytes: 4096, Window: -1}, "window = -1"},
		{Config{Bytes: 4096, Rounds: -1}, "rounds = -1"},
		{Config{Bytes: 4000, Rounds: 2}, "whole 1024-byte packets"},
		{Config{Bytes: 4096, HPU: hpu.Config{Clusters: -1}}, "clusters = -1"},
		{Config{Bytes: 1 << 20, HPU: hpu.Config{Clusters: 1, L1Bytes: 16 << 10}, Algo: wire.AlgoTree, Window: 64}, "needs 512 buffers of 1 KiB, 16 free"},
	} {
		if _, err := Run(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one that says %q", tc.cfg, err, tc.want)
		}
	}
}

// A run allocates nothing per packet: its allocations (coroutines, one per
// core that runs, the event heap's and the packet pool's growth) do not
// grow with the vector.
func TestSimulateRunAllocations(t *testing.T) {
	mallocs := func(size int) (uint64, int) {
		cfg := Config{HPU: flareHPU, Hosts: 8, Bytes: size, Algo: wire.AlgoSingle, Seed: 1}.withDefaults()
		s, err := newSim(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer s.close()
		var a, b runtime.MemStats
		runtime.ReadMemStats(&a)
		if err := s.run(); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&b)
		return b.Mallocs - a.Mallocs, cfg.Hosts * s.nblocks
	}
	// Both sizes spread over every core of the unit, so both start all
	// 512 coroutines.
	small, ps := mallocs(1 << 20)
	big, pb := mallocs(8 << 20)
	t.Logf("%d allocations for %d packets, %d for %d", small, ps, big, pb)
	if big > small+1000 {
		t.Fatalf("%d allocations for %d packets but %d for %d: the run allocates per packet", big, pb, small, ps)
	}
}

// The JSON names are the model's.
func TestSimResultJSON(t *testing.T) {
	b, err := json.Marshal(Result{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"algo", "bytes", "hosts", "tau_cycles", "bandwidth_pkts_per_cycle", "bandwidth_gbps",
		"latency_cycles", "memory_buffers", "memory_bytes", "memory_buffers_max", "queue_occupancy",
		"queue_occupancy_max", "packets", "cycles"} {
		if !strings.Contains(string(b), `"`+k+`":`) {
			t.Errorf("no %q in %s", k, b)
		}
	}
}

// The paper's sweep: four designs × 4 KiB..4 MiB, P = 8, on the 64 × 8-core
// unit, in virtual time. It prints the table and how long it took.
func TestSimulateSweep(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("full sweep: not with -short or -race")
	}
	start := time.Now()
	var rows []Result
	for _, dg := range designs {
		for size := 4 << 10; size <= 4<<20; size *= 2 {
			rows = append(rows, simulate(t, Config{HPU: flareHPU, Hosts: 8, Bytes: size, Algo: dg.algo, Buffers: dg.b, Seed: 1}))
		}
	}
	elapsed := time.Since(start)
	var sb strings.Builder
	fmt.Fprintf(&sb, "%-7s %8s %9s %9s %10s %11s %9s\n", "design", "bytes", "tau", "Gbit/s", "latency", "memory B", "queue")
	for _, r := range rows {
		fmt.Fprintf(&sb, "%-7s %8d %9.1f %9.1f %10.1f %11.0f %9.2f\n",
			r.Algo, r.Bytes, r.TauCycles, r.BandwidthGbps, r.LatencyCycles, r.MemoryBytes, r.QueueOccupancy)
	}
	t.Logf("sweep of %d runs in %v:\n%s", len(rows), elapsed.Round(time.Millisecond), sb.String())
	if elapsed > time.Minute {
		t.Errorf("sweep took %v, want under a minute", elapsed)
	}
	cost := hpu.PsPINCost()
	treeTau := float64(8*cost.Copy(1024)+7*cost.Aggregate(wire.Int32, 256)+cost.Copy(1024)) / 8
	for _, r := range rows {
		if r.Algo == "tree" && r.TauCycles != treeTau {
			t.Errorf("tree %d bytes: τ = %v, want %v at every size", r.Bytes, r.TauCycles, treeTau)
		}
		// Exponential gaps realize the mean rate to within a few tenths of
		// a percent over tens of thousands of packets.
		if r.BandwidthGbps > 8*DefaultHostGbps*1.02 {
			t.Errorf("%s %d bytes: %v Gbit/s above what 8 hosts send", r.Algo, r.Bytes, r.BandwidthGbps)
		}
	}
	// Single buffer: contention at small sizes, none once a block per core.
	if small, big := rows[0], rows[10]; small.LockWaitCycles <= 0 || big.TauCycles >= small.TauCycles {
		t.Errorf("single: τ %v at 4 KiB (lock wait %v), %v at 4 MiB: want contention that vanishes",
			small.TauCycles, small.LockWaitCycles, big.TauCycles)
	}
}

// BenchmarkSimulate runs one 1 MiB single-buffer allreduce on the 512-core
// unit per iteration.
func BenchmarkSimulate(b *testing.B) {
	cfg := Config{HPU: flareHPU, Hosts: 8, Bytes: 1 << 20, Algo: wire.AlgoSingle, Seed: 1}
	var r Result
	for b.Loop() {
		r = simulate(b, cfg)
	}
	b.ReportMetric(float64(r.Packets)*float64(b.N)/b.Elapsed().Seconds(), "packets/s")
}
