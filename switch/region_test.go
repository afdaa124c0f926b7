package swtch

import (
	"context"
	"testing"
	"time"
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
