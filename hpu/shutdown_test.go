package hpu

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
)

// TestPlacedAfterCoresExit reproduces a packet placed just before the unit
// stops and queued just after its cores exited: place checked stopped
// while it was false, the cores then found their queues empty and left,
// and the push queued the packet where nobody runs it, so the submitter's
// done hook never ran (its memory and the job's in-flight count leaked,
// and the daemon's job teardown waited forever). Submit's contract is that
// a packet it accepts is run and given back.
func TestPlacedAfterCoresExit(t *testing.T) {
	var done atomic.Int64
	u, err := New(Config{Clusters: 1, CoresPerCluster: 1}, &nopEgress{}, func(*Packet, int) { done.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { u.Run(ctx); close(stopped) }()
	p := pkt(newRecorder(), 0)
	co, err := u.place(p, &arrivals{}, nil) // Submit's first half, while the unit runs
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	<-stopped // every core has exited
	if u.commit(co, p) == nil && done.Load() == 0 {
		t.Fatal("a packet placed before the unit stopped was queued after its cores exited: accepted, never run, never given back")
	}
	if n := u.clusters[0].occ.Load(); n != 0 {
		t.Errorf("cluster occupancy %d after the refused packet, want 0", n)
	}
}

// TestSubmitRacingStop submits from several goroutines while the unit
// stops: every packet Submit or SubmitBatch accepted must be given back,
// whether SubmitBatch wakes the cores or borrows them (Submitters).
func TestSubmitRacingStop(t *testing.T) {
	rounds := 50
	if testing.Short() {
		rounds = 10
	}
	for r := range rounds {
		var done atomic.Int64
		cfg := Config{Clusters: 2, CoresPerCluster: 2, Submitters: 3 * (r % 2)}
		u, err := New(cfg, &nopEgress{}, func(*Packet, int) { done.Add(1) })
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan struct{})
		go func() { u.Run(ctx); close(stopped) }()
		var accepted atomic.Int64
		var wg sync.WaitGroup
		h := newRecorder()
		for g := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 2000 {
					if g == 0 {
						ps := []*Packet{pkt(h, uint32(i)), pkt(h, uint32(i+1))}
						n, _ := u.SubmitBatch(context.Background(), ps)
						accepted.Add(int64(n))
						continue
					}
					if u.Submit(pkt(h, uint32(i))) == nil {
						accepted.Add(1)
					}
				}
			}()
		}
		cancel()
		wg.Wait()
		<-stopped
		if a, d := accepted.Load(), done.Load(); a != d {
			t.Fatalf("%d packets accepted, %d given back: %d lost in the shutdown", a, d, a-d)
		}
	}
}
