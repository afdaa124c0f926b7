package hpu

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/flare-net/flare/wire"
)

// When the submitters take every CPU, a burst to parked cores runs on the
// submitter, as the cores the policy chose: every packet has run, been
// counted and had its emit flushed when SubmitBatch returns, each emit
// made while HPU.Borrowed said so, and the cores are parked again, their
// goroutines never woken.
func TestBorrowRunsOnTheSubmitter(t *testing.T) {
	cfg := Config{Clusters: 2, CoresPerCluster: 4, Submitters: runtime.GOMAXPROCS(0)}
	var done sync.WaitGroup
	u, e, _ := startCoreEgress(t, cfg, &done)
	waitParked(t, u)
	const packets = 64
	ps := make([]*Packet, packets)
	for i := range ps {
		ps[i] = pkt(emitter{cfg.CoresPerCluster}, uint32(i))
	}
	done.Add(packets)
	if n, err := u.SubmitBatch(context.Background(), ps); n != packets || err != nil {
		t.Fatalf("SubmitBatch = %d, %v", n, err)
	}
	// No wait: what a borrowed core runs is done when SubmitBatch returns.
	if got := u.Stats().Total().Packets; got != packets {
		t.Errorf("%d packets counted when SubmitBatch returned, want %d: they did not all run on the submitter", got, packets)
	}
	flushed := 0
	for c := range e.flushed {
		flushed += e.flushed[c]
		if e.borrowed[c] != e.flushed[c] {
			t.Errorf("core %d: %d of its %d emits said borrowed (HPU.Borrowed), want all", c, e.borrowed[c], e.flushed[c])
		}
		if e.pending[c] != 0 || e.wrong[c] != 0 {
			t.Errorf("core %d: %d emits not flushed, %d under another core's index", c, e.pending[c], e.wrong[c])
		}
	}
	if flushed != packets {
		t.Errorf("%d emits flushed when SubmitBatch returned, want %d", flushed, packets)
	}
	if e.flushed[0] == 0 || e.flushed[cfg.CoresPerCluster] == 0 {
		t.Errorf("flushed per core %v: want the first core of each cluster (the policy's lowest idle core)", e.flushed)
	}
	if a := u.awake.Load(); a != 0 {
		t.Errorf("%d cores awake after the borrowed batch, want 0: the give-back must park them again", a)
	}
	done.Wait()
}

// A borrowed packet's counts in its cluster's queue and its core's work
// pass to the submitter's next packet there instead of being given back
// and taken again, but what every packet sees is what it would see with
// them given back at once: its own request alone in the queue and on its
// core, that core the first of its subset (the policy's lowest idle one,
// as the core it ran on before is idle again), each arrival's queue
// sample 1, and nothing held once SubmitBatch returns.
func TestBorrowedCountsCarry(t *testing.T) {
	// With one cluster and two CPUs the policy picks among the idle cores
	// by their work; with two clusters the awake ones.
	t.Run("clusters-1", func(t *testing.T) { testBorrowedCountsCarry(t, 1) })
	t.Run("clusters-2", func(t *testing.T) { testBorrowedCountsCarry(t, 2) })
}

func testBorrowedCountsCarry(t *testing.T, clusters int) {
	cfg := Config{Clusters: clusters, CoresPerCluster: 4, Submitters: runtime.GOMAXPROCS(0)}
	var done sync.WaitGroup
	var u *HPU
	var wrong atomic.Int64
	h := HandlerFunc(func(t *Task) {
		cl := u.clusters[t.Cluster]
		if cl.occ.Load() != 1 || cl.cores[t.Core].load.Load() != 1 || t.Core != 0 {
			wrong.Add(1)
		}
		t.Emit(&wire.Header{Type: wire.TypeResult, Block: t.Pkt.Hdr.Block}, nil)
	})
	u, _, _ = startCoreEgress(t, cfg, &done)
	waitParked(t, u)
	const packets = 64
	ps := make([]*Packet, packets)
	for i := range ps {
		ps[i] = pkt(h, uint32(i*i)) // both clusters, in no regular order
	}
	done.Add(packets)
	if n, err := u.SubmitBatch(context.Background(), ps); n != packets || err != nil {
		t.Fatalf("SubmitBatch = %d, %v", n, err)
	}
	if n := wrong.Load(); n != 0 {
		t.Errorf("%d of %d handlers saw a queue or a core holding more than their own request, or ran on a core the policy would not choose", n, packets)
	}
	st := u.Stats()
	if got := st.Total().Packets; got != packets {
		t.Fatalf("%d packets ran on the submitter, want %d", got, packets)
	}
	for _, c := range st.Clusters {
		if c.QueueNow != 0 || c.QueueMax != 1 || c.QueueMean != 1 {
			t.Errorf("cluster %d: queue now %d, max %d, mean %.2f after the batch, want 0, 1, 1", c.Cluster, c.QueueNow, c.QueueMax, c.QueueMean)
		}
	}
	for _, cl := range u.clusters {
		for _, co := range cl.cores {
			if n := co.load.Load(); n != 0 {
				t.Errorf("cluster %d core %d: work %d after the batch, want 0", cl.id, co.id, n)
			}
		}
	}
	done.Wait()
}

// Submitters that borrow, cores that run what was queued on them, and
// clusters so small that submitters wait for room: a core is never run by
// two goroutines at once (each handler claims its core; the race detector
// watches the CoreEgress slots, which only the core's runner touches),
// every packet runs once, every count and emit arrives, and the unit's
// count of awake cores comes back to zero; with the unit's goroutines
// yielding through the global run queue or their own P's.
func TestBorrowedCoresRunOneAtATime(t *testing.T) {
	t.Run("gosched", func(t *testing.T) { testBorrowedCoresRunOneAtATime(t, false) })
	t.Run("local-yield", func(t *testing.T) { testBorrowedCoresRunOneAtATime(t, true) })
}

func testBorrowedCoresRunOneAtATime(t *testing.T, localYield bool) {
	const (
		submitters = 4
		batches    = 300
		batchLen   = 8
	)
	cfg := Config{Clusters: 2, CoresPerCluster: 3, QueueDepth: 3, Submitters: submitters, LocalYield: localYield}
	cores := cfg.Clusters * cfg.CoresPerCluster
	var done sync.WaitGroup
	u, e, _ := startCoreEgress(t, cfg, &done)
	busy := make([]atomic.Bool, cores)
	var ran, overlaps atomic.Int64
	h := HandlerFunc(func(t *Task) {
		i := t.Cluster*cfg.CoresPerCluster + t.Core
		if !busy[i].CompareAndSwap(false, true) {
			overlaps.Add(1)
		}
		runtime.Gosched() // widen the window for a second runner
		t.Emit(&wire.Header{Type: wire.TypeResult, Block: uint32(i)}, nil)
		busy[i].Store(false)
		ran.Add(1)
	})
	done.Add(submitters * batches * batchLen)
	var wg sync.WaitGroup
	for g := range submitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			ps := make([]*Packet, batchLen)
			for range batches {
				for i := range ps {
					ps[i] = pkt(h, rng.Uint32N(8))
				}
				if n, err := u.SubmitBatch(context.Background(), ps); n != len(ps) || err != nil {
					t.Errorf("SubmitBatch = %d, %v", n, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	done.Wait()
	want := int64(submitters * batches * batchLen)
	if n := ran.Load(); n != want {
		t.Errorf("%d handlers ran, want %d", n, want)
	}
	if n := overlaps.Load(); n != 0 {
		t.Errorf("%d handlers started on a core another goroutine was running", n)
	}
	if got := u.Stats().Total().Packets; got != want {
		t.Errorf("%d packets counted, want %d", got, want)
	}
	waitParked(t, u)
	flushed := 0
	for c := range cores {
		flushed += e.flushed[c]
		if e.pending[c] != 0 || e.wrong[c] != 0 {
			t.Errorf("core %d: %d emits not flushed, %d under another core's index", c, e.pending[c], e.wrong[c])
		}
	}
	if int64(flushed) != want {
		t.Errorf("%d emits flushed, want %d", flushed, want)
	}
}
