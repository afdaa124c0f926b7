package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flare-net/flare/internal/inproctest"
	swtch "github.com/flare-net/flare/switch"
	"github.com/flare-net/flare/wire"
)

// referenceRanks reduce by computing the reference from the patterns, as
// a correct switch would, and count one packet each way per call; bad,
// when set, is the (call, rank, element) whose result they get wrong.
type referenceRanks struct {
	c     Config
	calls []int // per local rank
	bad   *[3]int
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
		t[i] = traffic{tx: uint64(n * 100), rx: uint64(n * 200)}
	}
	return t
}

func (f *referenceRanks) contributors(int) ([]uint16, int) { return nil, 0 }
func (f *referenceRanks) packetBytes(wire.DType) int       { return 0 }
func (f *referenceRanks) blocks() int                      { return 1 }
func (f *referenceRanks) algo() string                     { return "reference" }
func (f *referenceRanks) close()                           {}

func referenceMeasurement(c Config, bad *[3]int) *measurement {
	p := newPayload(c)
	return &measurement{c: c, ranks: &referenceRanks{c: c, calls: make([]int, len(p.local)), bad: bad}, p: p,
		waited: make([]time.Duration, len(p.local))}
}

// The loop runs warmup and measured calls, checks every call's result
// element by element, and counts the measured calls' traffic; a wrong
// element in any call, warmup included, fails it naming the rank and call.
func TestLoopChecksEveryCall(t *testing.T) {
	c := Config{Ranks: 3, Count: 5000, DType: wire.Float32, Op: wire.OpSum, Algo: "auto", Iters: 3, Warmup: 2,
		Verify: true, Timeout: time.Second}
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
