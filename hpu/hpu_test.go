package hpu

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flare-net/flare/wire"
)

// recorder is a handler that records where each packet ran and can hold
// cores busy until released.
type recorder struct {
	mu       sync.Mutex
	ran      map[uint32][][2]int // block -> (cluster, core) of each run
	hold     chan struct{}       // when not nil, handlers wait on it
	started  chan struct{}
	complete atomic.Int64
}

func newRecorder() *recorder { return &recorder{ran: map[uint32][][2]int{}} }

func (r *recorder) Payload(t *Task) {
	if r.started != nil {
		r.started <- struct{}{}
	}
	if r.hold != nil {
		<-r.hold
	}
	r.mu.Lock()
	r.ran[t.Pkt.Hdr.Block] = append(r.ran[t.Pkt.Hdr.Block], [2]int{t.Cluster, t.Core})
	r.mu.Unlock()
	t.Charge(100)
	if t.Pkt.Hdr.Flags&wire.FlagLast != 0 {
		t.Complete()
	}
}

func (r *recorder) Completion(t *Task) { r.complete.Add(1) }

type nopEgress struct{ n atomic.Int64 }

func (e *nopEgress) Emit(*wire.Header, []byte) { e.n.Add(1) }

// startUnit runs a unit until the test ends; done counts finished packets.
func startUnit(t *testing.T, cfg Config) (*HPU, *sync.WaitGroup) {
	return startUnitProcs(t, cfg, 0)
}

// startUnitProcs is startUnit with the unit believing the Go runtime runs
// procs goroutines at once (0: GOMAXPROCS, as New found it).
func startUnitProcs(t *testing.T, cfg Config, procs int32) (*HPU, *sync.WaitGroup) {
	t.Helper()
	var wg sync.WaitGroup
	u, err := New(cfg, &nopEgress{}, func(*Packet, int) { wg.Done() })
	if err != nil {
		t.Fatal(err)
	}
	if procs > 0 {
		u.procs = procs
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { u.Run(ctx); close(stopped) }()
	t.Cleanup(func() { cancel(); <-stopped })
	return u, &wg
}

func pkt(h Handler, block uint32) *Packet {
	return &Packet{Hdr: wire.Header{Type: wire.TypeData, Block: block}, Handler: h}
}

func TestConfigValidateNamesField(t *testing.T) {
	cases := []struct {
		mut  func(*Config)
		want string
	}{
		{func(c *Config) { c.Clusters = -1 }, "clusters = -1: must be in 1..1024"},
		{func(c *Config) { c.CoresPerCluster = 1000 }, "cores per cluster = 1000: must be in 1..256"},
		{func(c *Config) { c.SubsetS = 9 }, "policy S = 9: must be in 1..8"},
		{func(c *Config) { c.QueueDepth = -3 }, "queue depth = -3"},
		{func(c *Config) { c.BufferBytes = 1001 }, "buffer size = 1001 bytes: must be a multiple of 8"},
		{func(c *Config) { c.L1Bytes = MaxL1Bytes + 1 }, "L1 = 1073741825 bytes: must be in"},
		{func(c *Config) { c.Submitters = -2 }, "submitters = -2: must be in 0..1024"},
	}
	for _, tc := range cases {
		c := Config{}.WithDefaults()
		tc.mut(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want it to contain %q", err, tc.want)
		}
	}
	if err := (Config{}).WithDefaults().Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
}

func TestHomeClusterAndSubset(t *testing.T) {
	for _, s := range []int{1, 2, 8} {
		u, wg := startUnit(t, Config{Clusters: 4, CoresPerCluster: 8, SubsetS: s, QueueDepth: 1000})
		r := newRecorder()
		for i := 0; i < 20; i++ {
			for b := uint32(0); b < 16; b++ {
				wg.Add(1)
				if err := u.SubmitWait(context.Background(), pkt(r, b)); err != nil {
					t.Fatal(err)
				}
			}
		}
		wg.Wait()
		for b, runs := range r.ran {
			cores := map[int]bool{}
			for _, cc := range runs {
				if cc[0] != int(b)%4 {
					t.Fatalf("S=%d: block %d ran on cluster %d, home is %d (no queue was full)", s, b, cc[0], b%4)
				}
				cores[cc[1]] = true
			}
			if len(cores) > s {
				t.Fatalf("S=%d: block %d ran on %d cores", s, b, len(cores))
			}
		}
	}
}

// waitParked waits until every core's goroutine has parked.
func waitParked(t *testing.T, u *HPU) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); u.awake.Load() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d cores still awake after 10 s with nothing queued", u.awake.Load())
		}
	}
}

// A burst wakes no more core goroutines than the runtime can run at once
// while an awake core of the block's subset can queue the packets; with
// as many procs as cores every idle core takes one, as the placement
// policy says.
func TestBurstWakesFewCores(t *testing.T) {
	for _, tc := range []struct {
		procs int32
		cores int // distinct cores the burst may run on
	}{{1, 1}, {2, 2}, {8, 8}} {
		u, wg := startUnitProcs(t, Config{Clusters: 1, CoresPerCluster: 8, QueueDepth: 64}, tc.procs)
		waitParked(t, u)
		r := newRecorder()
		r.hold = make(chan struct{})
		ps := make([]*Packet, 8)
		for i := range ps {
			ps[i] = pkt(r, uint32(i))
		}
		wg.Add(len(ps))
		if n, err := u.SubmitBatch(context.Background(), ps); n != len(ps) || err != nil {
			t.Fatalf("procs %d: SubmitBatch = %d, %v", tc.procs, n, err)
		}
		close(r.hold)
		wg.Wait()
		cores := map[int]bool{}
		for _, runs := range r.ran {
			for _, cc := range runs {
				cores[cc[1]] = true
			}
		}
		if len(cores) != tc.cores {
			t.Errorf("procs %d: a burst of 8 packets on 8 parked cores ran on %d cores, want %d", tc.procs, len(cores), tc.cores)
		}
		if st := u.Stats(); st.Total().Packets != 8 {
			t.Errorf("procs %d: %d packets counted, want 8", tc.procs, st.Total().Packets)
		}
	}
}

// With Overflow a packet whose home cluster is full goes to the
// least-loaded one; without it (Flare's scheduling, the default) a block's
// packets stay in their home cluster.
func TestOverflowToLeastLoaded(t *testing.T) {
	home, hwg := startUnit(t, Config{Clusters: 2, CoresPerCluster: 2, QueueDepth: 3})
	hr := newRecorder()
	hr.hold = make(chan struct{})
	for range 3 {
		hwg.Add(1)
		if err := home.Submit(pkt(hr, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := home.Submit(pkt(hr, 2)); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("without Overflow, home full: %v, want ErrQueueFull", err)
	}
	close(hr.hold)
	hwg.Wait()

	u, wg := startUnit(t, Config{Clusters: 2, CoresPerCluster: 2, QueueDepth: 3, Overflow: true})
	r := newRecorder()
	r.hold = make(chan struct{})
	// Fill cluster 0 (home of even blocks): 3 requests.
	for i := 0; i < 3; i++ {
		wg.Add(1)
		if err := u.Submit(pkt(r, 0)); err != nil {
			t.Fatalf("submit %d: %v", i, err)
		}
	}
	wg.Add(1)
	if err := u.Submit(pkt(r, 2)); err != nil {
		t.Fatalf("overflow submit: %v", err)
	}
	// Fill cluster 1 too: now nothing fits.
	for i := 0; i < 2; i++ {
		wg.Add(1)
		if err := u.Submit(pkt(r, 1)); err != nil {
			t.Fatalf("submit to cluster 1: %v", err)
		}
	}
	if err := u.Submit(pkt(r, 4)); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("submit with all queues full = %v, want ErrQueueFull", err)
	}
	close(r.hold)
	wg.Wait()
	if got := r.ran[2][0][0]; got != 1 {
		t.Fatalf("block 2 ran on cluster %d, want 1 (home full)", got)
	}
	st := u.Stats()
	if st.Clusters[1].Overflow != 1 || st.Clusters[0].QueueMax != 3 {
		t.Fatalf("stats: overflow=%d, queue max=%d; want 1 and 3", st.Clusters[1].Overflow, st.Clusters[0].QueueMax)
	}
	if st.QueueMean() <= 1 {
		t.Fatalf("mean queue occupancy %.2f, want > 1 with held cores", st.QueueMean())
	}
}

func TestSubsetOneNeverOverflows(t *testing.T) {
	u, wg := startUnit(t, Config{Clusters: 2, CoresPerCluster: 2, QueueDepth: 2, SubsetS: 1})
	r := newRecorder()
	r.hold = make(chan struct{})
	for i := 0; i < 2; i++ {
		wg.Add(1)
		if err := u.Submit(pkt(r, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := u.Submit(pkt(r, 0)); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("S=1 with home full: %v, want ErrQueueFull", err)
	}
	// SubmitWait waits for room at home instead.
	wg.Add(1)
	done := make(chan error)
	go func() { done <- u.SubmitWait(context.Background(), pkt(r, 0)) }()
	close(r.hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for _, cc := range r.ran[0] {
		if cc != r.ran[0][0] {
			t.Fatalf("S=1: block 0 ran on %v and %v", r.ran[0][0], cc)
		}
	}
}

func TestCompletionStage(t *testing.T) {
	u, wg := startUnit(t, Config{})
	r := newRecorder()
	for i := 0; i < 10; i++ {
		p := pkt(r, uint32(i))
		if i%2 == 0 {
			p.Hdr.Flags = wire.FlagLast
		}
		wg.Add(1)
		if err := u.SubmitWait(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if n := r.complete.Load(); n != 5 {
		t.Fatalf("completion ran %d times, want 5", n)
	}
	if tau := u.Stats().TauCycles(); tau != 100 {
		t.Fatalf("tau = %.1f cycles, want the 100 charged", tau)
	}
}

// gatekeeper is a recorder with a header stage that rejects odd blocks.
type gatekeeper struct{ *recorder }

func (g gatekeeper) Header(t *Task) bool { return t.Pkt.Hdr.Block%2 == 0 }

// A packet the header stage rejects runs neither Payload nor Completion,
// is given back all the same, and is counted rejected, not handled.
func TestHeaderStageRejects(t *testing.T) {
	u, wg := startUnit(t, Config{})
	g := gatekeeper{newRecorder()}
	for i := range 10 {
		p := pkt(g, uint32(i))
		p.Hdr.Flags = wire.FlagLast
		wg.Add(1)
		if err := u.SubmitWait(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	g.mu.Lock()
	for blk := range g.ran {
		if blk%2 != 0 {
			t.Errorf("Payload ran for block %d, which the header stage rejected", blk)
		}
	}
	g.mu.Unlock()
	if n := g.complete.Load(); n != 5 {
		t.Errorf("completion ran %d times, want 5 (the accepted packets)", n)
	}
	if st := u.Stats().Total(); st.Packets != 5 || st.Rejected != 5 {
		t.Errorf("stats: %d packets handled, %d rejected; want 5 and 5", st.Packets, st.Rejected)
	}
}

func TestSubmitAfterStop(t *testing.T) {
	u, err := New(Config{}, &nopEgress{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { u.Run(ctx); close(done) }()
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if err := u.Submit(pkt(newRecorder(), 0)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Submit after stop = %v, want ErrClosed", err)
	}
}

// The scheduler and core loop allocate nothing per packet.
func TestSubmitZeroAlloc(t *testing.T) {
	u, wg := startUnit(t, Config{})
	h := HandlerFunc(func(t *Task) { t.Charge(1) })
	ps := make([]*Packet, 64)
	for i := range ps {
		ps[i] = pkt(h, uint32(i))
	}
	ctx := context.Background()
	allocs := testing.AllocsPerRun(50, func() {
		wg.Add(len(ps))
		for _, p := range ps {
			if err := u.SubmitWait(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		wg.Wait()
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per 64 packets, want 0", allocs)
	}
}

func TestHistBucket(t *testing.T) {
	for _, tc := range []struct {
		ns   int64
		want int
	}{{0, 0}, {127, 0}, {128, 1}, {255, 1}, {256, 2}, {HistBound(11) - 1, 11}, {HistBound(11), 12}, {1 << 40, 12}} {
		if got := histBucket(tc.ns); got != tc.want {
			t.Errorf("histBucket(%d) = %d, want %d", tc.ns, got, tc.want)
		}
	}
}

// SubmitWait on a full unit waits for room, and gives up when its context
// does, leaving nothing queued and no waiter counted; Run runs once.
func TestSubmitWaitGivesUp(t *testing.T) {
	r := newRecorder()
	r.hold, r.started = make(chan struct{}), make(chan struct{}, 4)
	u, wg := startUnit(t, Config{Clusters: 1, CoresPerCluster: 1, QueueDepth: 1})
	release := sync.OnceFunc(func() { close(r.hold) })
	t.Cleanup(release) // before the unit's own cleanup waits for its core
	wg.Add(1)
	if err := u.Submit(pkt(r, 0)); err != nil {
		t.Fatal(err)
	}
	<-r.started // the one core holds it: the cluster is full
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := u.SubmitWait(ctx, pkt(r, 0)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("SubmitWait on a full unit = %v, want its context's deadline", err)
	}
	if n := u.clusters[0].waiting.Load(); n != 0 {
		t.Fatalf("%d waiters counted after SubmitWait gave up", n)
	}
	if err := u.Run(context.Background()); err == nil || err.Error() != "hpu: Run called twice" {
		t.Fatalf("a second Run = %v", err)
	}
	release()
	wg.Wait()
	if got := len(r.ran[0]); got != 1 {
		t.Fatalf("block 0 ran %d times; want once (the packet that gave up never ran)", got)
	}
}
