package swtch

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/flare-net/flare/conn"
)

// TestRegionPoolLastBackFirstOut checks the order a reader's regions are
// handed out in: the one given back last first, so that the next receive
// lands in memory still in the cache (region.go); and that a reader whose
// regions are all lent waits for one and ends with its context.
func TestRegionPoolLastBackFirstOut(t *testing.T) {
	const n = 4
	p := newRegionPool(n)
	for range n {
		p.free.put(&inRegion{pool: p})
	}
	ctx := context.Background()
	var lent []*inRegion
	for range n {
		r, err := p.get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		lent = append(lent, r)
	}
	for _, i := range []int{2, 0, 3} { // given back out of order
		lent[i].refs.Store(1)
		lent[i].release()
	}
	for _, want := range []int{3, 0, 2} {
		if r, _ := p.get(ctx); r != lent[want] {
			t.Fatalf("got region %p, want the one given back last of those free (%p)", r, lent[want])
		}
	}

	got := make(chan *inRegion)
	go func() { r, _ := p.get(ctx); got <- r }()
	select {
	case r := <-got:
		t.Fatalf("got region %p while all were lent", r)
	case <-time.After(20 * time.Millisecond):
	}
	lent[1].refs.Store(1)
	lent[1].release()
	if r := <-got; r != lent[1] {
		t.Fatalf("the waiting reader got %p, want the region given back (%p)", r, lent[1])
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if r, err := p.get(cctx); r != nil || err == nil {
		t.Fatalf("with all lent and the context ended: %p, %v; want nil and the context's error", r, err)
	}
}

// TestHeldRefsGiveBackToTheirOwn drops finished packets of two jobs and
// two regions, interleaved as a core runs them, into one heldRefs: each
// job's count in flight and each region's holds fall by its own packets
// alone, so a job's teardown neither waits forever for another's packets
// nor frees the job while its own are in flight, and a region goes back
// to its reader when its last packet is done, not before.
func TestHeldRefsGiveBackToTheirOwn(t *testing.T) {
	var a, b readerCounts
	a.inflight.Store(4) // one more than the packets below: one still runs
	b.inflight.Store(2)
	p := newRegionPool(2)
	g1, g2 := &inRegion{pool: p}, &inRegion{pool: p}
	g1.refs.Store(3)
	g2.refs.Store(3) // one more than its packets: the reader still holds it
	var h heldRefs
	for _, d := range []struct {
		c *readerCounts
		g *inRegion
	}{{&a, g1}, {&a, g1}, {&b, g1}, {&a, g2}, {&b, g2}} {
		h.drop(d.c, d.g)
	}
	h.flush()
	if n, m := a.inflight.Load(), b.inflight.Load(); n != 1 || m != 0 {
		t.Errorf("in flight after the packets were done: job a %d, job b %d; want 1 and 0", n, m)
	}
	if n, m := g1.refs.Load(), g2.refs.Load(); n != 0 || m != 1 {
		t.Errorf("region holds after the packets were done: %d and %d, want 0 and 1 (the reader's)", n, m)
	}
	if r := p.free.get(); r != g1 || p.free.get() != nil {
		t.Errorf("the regions back with the reader: %p first, want the first region (%p) alone", r, g1)
	}
	h.drop(&a, nil) // the last, received into a packet buffer: it holds no region
	h.flush()
	if n := a.inflight.Load(); n != 0 {
		t.Errorf("job a's count is %d after its last packet was done, want 0", n)
	}
}

// failingLender is a RegionReader whose first fails receives fail.
type failingLender struct{ fails int }

func (f *failingLender) ReadInto(region []byte, msgs []conn.Datagram) (int, error) {
	if f.fails > 0 {
		f.fails--
		return 0, errors.New("injected receive error")
	}
	msgs[0].Buf, msgs[0].N = region[:1], 1
	return 1, nil
}

// A receive that fails gives its region back: a reader survives more
// failed receives than it has regions, and a region received into comes
// back with the caller's one release.
func TestRegionsFailedReadGivesBack(t *testing.T) {
	const n = 3
	g := &regions{rr: &failingLender{fails: 2 * n}, pool: newRegionPool(n), msgs: make([]conn.Datagram, 1)}
	for range n {
		g.pool.free.put(&inRegion{buf: make([]byte, 8), pool: g.pool})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 2 * n {
		if r, _, err := g.read(ctx); r != nil || err == nil || ctx.Err() != nil {
			t.Fatalf("receive %d: %p, %v; want the injected error (and no wait for a region)", i, r, err)
		}
	}
	r, k, err := g.read(ctx)
	if err != nil || k != 1 {
		t.Fatalf("the receive after %d failures: %d datagrams, %v; want 1 (a failed receive kept its region)", 2*n, k, err)
	}
	r.release()
	if got := len(g.pool.free.free); got != n {
		t.Errorf("%d of %d regions free after the caller's release, want all", got, n)
	}
}
