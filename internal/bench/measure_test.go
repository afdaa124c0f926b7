package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flare-net/flare/internal/inproctest"
	swtch "github.com/flare-net/flare/switch"
	"github.com/flare-net/flare/wire"
)

// referenceRanks reduce by computing the reference from the patterns, as
// a correct switch would, and count per call 100 bytes up, 200 down, 3
// retransmissions and 5 spilled pairs; bad, when set, is the (call, rank,
// element) whose result they get wrong. In bounded time each block's
// contributors are counts (nil: unknown), and a call has len(counts)
// blocks (1 without); packet is the payload per packet they report.
type referenceRanks struct {
	c      Config
	calls  []int // per local rank
	bad    *[3]int
	counts []uint16
	packet int
}

func (f *referenceRanks) reduce(_ context.Context, i int, p *payload) error {
	it := f.calls[i]
	f.calls[i]++
	sz := f.c.DType.Size()
	for e := 0; e < f.c.Count; e++ {
		var sum int64
		for r := range p.world {
			sum += patternValue(f.c.Op, r, e, it)
		}
		if f.bad != nil && *f.bad == [3]int{it, p.local[i], e} {
			sum++
		}
		putValue(f.c.DType, p.bufs[i][e*sz:], sum)
	}
	return nil
}

func (f *referenceRanks) traffic() []traffic {
	t := make([]traffic, len(f.calls))
	for i, n := range f.calls {
		t[i] = traffic{tx: uint64(n * 100), rx: uint64(n * 200), retransmits: uint64(n * 3), spilled: uint64(n * 5)}
	}
	return t
}

func (f *referenceRanks) contributors(int) ([]uint16, int) {
	if f.counts == nil {
		return nil, 0
	}
	return f.counts, (f.c.Count + len(f.counts) - 1) / len(f.counts)
}
func (f *referenceRanks) packetBytes(wire.DType) int { return f.packet }
func (f *referenceRanks) blocks() int                { return max(1, len(f.counts)) }
func (f *referenceRanks) algo() string               { return "reference" }
func (f *referenceRanks) close()                     {}

// referenceConfig is the measurement the reference ranks' tests run:
// 3 ranks of 5000 float32 sums, 2 warmup and 3 measured calls, verified.
func referenceConfig() Config {
	return Config{Ranks: 3, Count: 5000, DType: wire.Float32, Op: wire.OpSum, Algo: "auto", Iters: 3, Warmup: 2,
		Verify: true, Timeout: time.Second}
}

func referenceMeasurement(c Config, bad *[3]int) *measurement {
	p := newPayload(c)
	return &measurement{c: c, ranks: &referenceRanks{c: c, calls: make([]int, len(p.local)), bad: bad}, p: p,
		waited: make([]time.Duration, len(p.local))}
}

// The loop runs warmup and measured calls, checks every call's result
// element by element, and counts the measured calls' traffic; a wrong
// element in any call, warmup included, fails it naming the rank and call.
func TestLoopChecksEveryCall(t *testing.T) {
	c := referenceConfig()
	m := referenceMeasurement(c, nil)
	if err := m.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	res := m.result()
	if res.Ranks != 3 || res.Bytes != 20000 || res.Iters != 3 || !res.Verified || res.Algo != "reference" ||
		res.TxBytes != 3*100 || res.RxBytes != 3*200 || len(m.times) != 3 || res.MedianS <= 0 || res.BusbwGBps <= 0 {
		t.Errorf("result %+v, times %v", res, m.times)
	}
	for _, bad := range [][3]int{{0, 0, 0}, {1, 2, 4999}, {4, 1, 77}} {
		m := referenceMeasurement(c, &bad)
		err := m.run(context.Background())
		want := fmt.Sprintf("verify: rank %d, call %d: at element offset", bad[1], bad[0])
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("wrong element %v: %v, want %q", bad, err, want)
		}
	}
	c.Verify = false
	if err := referenceMeasurement(c, &[3]int{1, 1, 1}).run(context.Background()); err != nil {
		t.Errorf("an unverified run checked its results: %v", err)
	}
}

// Run measures through a switch in this process, dense and sparse, and
// the host ring over the same ranks: verified results with their traffic.
func TestRun(t *testing.T) {
	g := inproctest.Group(t)
	cfg := swtch.Config{}
	cfg.HPU.Clusters, cfg.HPU.CoresPerCluster = 2, 2
	sw, err := g.Switch(cfg)
	if err != nil {
		t.Fatal(err)
	}
	base := Config{Switch: sw.Addr().String(), Ranks: 3, Count: 20_011, DType: wire.Int32, Op: wire.OpSum, Algo: "auto",
		Iters: 2, Warmup: 1, Verify: true, Timeout: 20 * time.Second, Density: 0.05, Overlap: 0.5}
	for i, tc := range []struct {
		name string
		edit func(*Config)
		algo string
	}{
		{"dense", func(*Config) {}, "tree"},
		{"sparse hash", func(c *Config) { c.Sparse, c.Storage = true, wire.StorageHash }, "single"},
		{"ring", func(c *Config) { c.Algo = "ring" }, "ring"},
		{"sparse ring", func(c *Config) { c.Algo, c.Sparse = "ring", true }, "ring"},
	} {
		c := base
		c.Job, c.Token = uint32(10+i), 99
		tc.edit(&c)
		res, err := Run(context.Background(), c)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !res.Verified || res.Algo != tc.algo || res.TxBytes <= 0 || res.RxBytes <= 0 || res.MedianS <= 0 || res.Ranks != 3 {
			t.Errorf("%s: %+v", tc.name, res)
		}
	}
}

// A row's counters are per measured call, summed over the local ranks:
// bytes each way and spilled pairs over the measured calls alone, the
// retransmissions over every call, warmup included (as Result says), the
// ranks' CPU over the measured calls divided among them. A dense row
// names the switch's packet size, a sparse one none and its storage, and
// a sparse ring row's storage is the hosts'.
func TestResultPerMeasuredCall(t *testing.T) {
	c := referenceConfig()
	m := referenceMeasurement(c, nil)
	m.ranks.(*referenceRanks).packet = 1024
	if err := m.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	res := m.result()
	if res.TxBytes != 3*100 || res.RxBytes != 3*200 || res.SpilledPairs != 3*5 || res.Retransmits != 5*3*3 ||
		res.PacketBytes != 1024 || res.Storage != "" || res.DeadlineMS != 0 || res.PartialBlocks != 0 || res.DroppedFraction != 0 {
		t.Errorf("dense row %+v: want 300 B up, 600 down, 15 pairs spilled a call, 45 retransmissions, 1 KiB packets", res)
	}
	if _, readable := processTimes(); m.cpu.ok != readable {
		t.Errorf("ranks' CPU %+v, want it taken (where this system reads it: %v)", m.cpu, readable)
	}
	if u, s := m.cpu.spent.user.Seconds()/3, m.cpu.spent.sys.Seconds()/3; res.RanksUserS != u || res.RanksSysS != s {
		t.Errorf("ranks' CPU a call %v+%v s, want %v+%v: the measured calls' %+v over 3", res.RanksUserS, res.RanksSysS, u, s, m.cpu.spent)
	}

	for _, tc := range []struct {
		algo, storage string
	}{{"auto", "array"}, {"single", "array"}, {"ring", "host"}} {
		c := c
		c.Sparse, c.Storage, c.Density, c.Algo = true, wire.StorageArray, 0.25, tc.algo
		m := referenceMeasurement(c, nil)
		m.ranks.(*referenceRanks).packet = 1024
		m.times = []float64{0.002}
		res := m.result()
		if res.PacketBytes != 0 || res.Storage != tc.storage || res.Density != 0.25 || res.MedianS != 0.002 {
			t.Errorf("sparse row, algo %s: %+v, want no packet size, storage %q, density 0.25", tc.algo, res, tc.storage)
		}
	}
}

// In bounded time a row counts the partial blocks of a measured call,
// summed over the local ranks, and the share of every contribution to
// every block of the measured calls that the partial ones left out; the
// warmup's are not counted, and the complete blocks are still checked.
func TestResultBoundedTime(t *testing.T) {
	c := referenceConfig()
	c.Algo, c.Deadline = "single", 5*time.Millisecond
	counts := []uint16{3, 2, 3, 1} // 2 partial blocks of 4, missing 1 + 2 contributions of 3
	m := referenceMeasurement(c, nil)
	m.ranks.(*referenceRanks).counts = counts
	if err := m.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	res := m.result()
	// A call: 3 ranks × 2 partial blocks; 3 × 3 of 3 ranks × 3 ranks × 4 blocks missed.
	if res.DeadlineMS != 5 || res.PartialBlocks != 6 || res.DroppedFraction != 9.0/36 {
		t.Errorf("bounded row %+v: want a 5 ms deadline, 6 partial blocks a call, 1/4 of the contributions dropped", res)
	}
	// Block 2 is complete: a wrong element in it fails the call; one in a
	// partial block (1) does not.
	for _, tc := range []struct {
		bad  [3]int
		fail bool
	}{{[3]int{3, 1, 2*1250 + 7}, true}, {[3]int{3, 1, 1250 + 7}, false}} {
		m := referenceMeasurement(c, &tc.bad)
		m.ranks.(*referenceRanks).counts = counts
		if err := m.run(context.Background()); (err != nil) != tc.fail {
			t.Errorf("a wrong element at %v: %v, want an error: %v", tc.bad, err, tc.fail)
		}
	}
}

// The injected tail: each rank's delay before each call is its own draw,
// the same for the same rank and call in every process, from a lognormal
// with the median and p99/p50 asked for.
func TestTailDelay(t *testing.T) {
	c := Config{TailRatio: 3, TailMedian: 10 * time.Millisecond}
	var ds []float64
	for r := range 50 {
		for it := range 400 {
			d := c.tailDelay(r, it)
			if d != c.tailDelay(r, it) {
				t.Fatalf("rank %d, call %d: two draws of one delay differ", r, it)
			}
			ds = append(ds, d.Seconds())
		}
	}
	if c.tailDelay(0, 1) == c.tailDelay(0, 2) || c.tailDelay(1, 1) == c.tailDelay(2, 1) {
		t.Error("two calls, or two ranks, drew the same delay")
	}
	slices.Sort(ds)
	p50, p99 := ds[len(ds)/2], ds[len(ds)*99/100]
	if math.Abs(p50/0.010-1) > 0.05 || math.Abs(p99/p50/3-1) > 0.08 {
		t.Errorf("p50 %.2f ms, p99/p50 %.2f over 20000 draws: want 10 ms and 3", p50*1e3, p99/p50)
	}
}

// slowRanks reduce at once, but for rank 0, which takes slow, and for
// every rank that hangs, which waits for the call's context to end.
type slowRanks struct {
	referenceRanks
	slow time.Duration
	hang bool
}

func (f *slowRanks) reduce(ctx context.Context, i int, p *payload) error {
	if f.hang {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Second):
			return errors.New("the call's context never ended")
		}
	}
	if i == 0 {
		time.Sleep(f.slow)
	}
	return nil
}

// A call's time is its wall time; with an injected tail it is what the
// slowest rank took from its own delayed start (so never the delay
// itself); a call that does not end is cut at Config.Timeout.
func TestCallTime(t *testing.T) {
	const slow, delay = 30 * time.Millisecond, 40 * time.Millisecond
	c := Config{Ranks: 3, Count: 10, DType: wire.Float32, Op: wire.OpSum, Algo: "auto", Iters: 1, Timeout: 10 * time.Second}
	for _, tail := range []bool{false, true} {
		c := c
		if tail {
			c.TailRatio, c.TailMedian = 1, delay // every rank waits exactly delay
		}
		m := referenceMeasurement(c, nil)
		m.ranks = &slowRanks{slow: slow}
		t0 := time.Now()
		el, err := m.call(context.Background(), 0)
		wall := time.Since(t0)
		if err != nil {
			t.Fatal(err)
		}
		if el < slow || el > wall {
			t.Errorf("tail %v: a call of %v with a rank %v slow, in %v", tail, el, slow, wall)
		}
		if tail && (el != slices.Max(m.waited) || el+delay > wall) {
			t.Errorf("a call of %v, ranks waited %v, in %v: want the longest wait, from each rank's start %v later", el, m.waited, wall, delay)
		}
	}
	c.Timeout = 50 * time.Millisecond
	m := referenceMeasurement(c, nil)
	m.ranks = &slowRanks{hang: true}
	if _, err := m.call(context.Background(), 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a call that never ends: %v, want it cut at the timeout", err)
	}
}

// A rank process whose parent ends the run while it is in a call stops
// with an error naming the call, instead of going on to check it.
func TestRunEndsWithTheBarrier(t *testing.T) {
	b, err := newParentBarrier(1)
	if err != nil {
		t.Fatal(err)
	}
	side := rankSides(t, b)[0]
	defer side.release.Close()
	defer side.ready.Close()
	go func() { // start call 0, then end
		if b.allReady() {
			b.releaseAll()
		}
		b.close()
	}()
	c := Config{Ranks: 1, Count: 10, DType: wire.Float32, Op: wire.OpSum, Algo: "auto", Iters: 3, Verify: true, Timeout: time.Second}
	m := referenceMeasurement(c, nil)
	m.barrier = side
	if err := m.run(context.Background()); err == nil || !strings.Contains(err.Error(), "call 0: barrier") {
		t.Errorf("run after the parent ended: %v, want call 0's barrier to fail", err)
	}
}

// What the measured calls moved is the change of every counter over
// them, summed over the local ranks (the tree's rows read it whole).
func TestMeasuredIsTheChange(t *testing.T) {
	m := &measurement{
		before: []traffic{{1, 2, 3, 4, 5, 6}, {10, 20, 30, 40, 50, 60}},
		after:  []traffic{{2, 4, 6, 8, 10, 12}, {30, 60, 90, 120, 150, 180}},
	}
	if got, want := m.measured(), (traffic{21, 42, 63, 84, 105, 126}); got != want {
		t.Errorf("measured %+v, want %+v", got, want)
	}
}
