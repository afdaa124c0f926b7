package hpu

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
	// Two batches through one Submitter, as a switch's reader submits:
	// what the first left to it must not carry into the second.
	s := u.NewSubmitter()
	for round := 1; round <= 2; round++ {
		done.Add(packets)
		if n, err := s.SubmitBatch(context.Background(), ps); n != packets || err != nil {
			t.Fatalf("SubmitBatch = %d, %v", n, err)
		}
		if n := wrong.Load(); n != 0 {
			t.Errorf("batch %d: %d of %d handlers saw a queue or a core holding more than their own request, or ran on a core the policy would not choose", round, n, packets)
		}
		st := u.Stats()
		if got := st.Total().Packets; got != int64(round*packets) {
			t.Fatalf("batch %d: %d packets ran on the submitter, want %d", round, got, round*packets)
		}
		for _, c := range st.Clusters {
			if c.QueueNow != 0 || c.QueueMax != 1 || c.QueueMean != 1 {
				t.Errorf("batch %d, cluster %d: queue now %d, max %d, mean %.2f after the batch, want 0, 1, 1", round, c.Cluster, c.QueueNow, c.QueueMax, c.QueueMean)
			}
		}
		for _, cl := range u.clusters {
			if n := cl.occ.Load(); n != 0 {
				t.Errorf("batch %d, cluster %d: %d requests held after the batch, want 0", round, cl.id, n)
			}
			for _, co := range cl.cores {
				if n := co.load.Load(); n != 0 {
					t.Errorf("batch %d, cluster %d core %d: work %d after the batch, want 0", round, cl.id, co.id, n)
				}
			}
		}
	}
	done.Wait()
}

// A submitter waiting for room in a cluster whose one request is a
// borrowed packet that has finished, its count still with the submitter
// that ran it, gets that room: when a packet of that submitter's leaves
// the cluster while it waits, at once; otherwise at the give-back. It is
// never left waiting on a cluster that holds nothing.
func TestBorrowedRoomReachesWaiter(t *testing.T) {
	// Two clusters of one core and one request: X (cluster 0) takes the
	// even blocks, Y the odd ones. The borrowing submitter's batch runs
	// on its own goroutine; the handler of block start starts a second
	// submitter on X (block 4), which waits, and the handler of block
	// placedBy (none: once the batch has returned) wants it placed.
	for _, tc := range []struct {
		name            string
		blocks          []uint32
		start, placedBy uint32
	}{
		{"a packet leaves while it waits", []uint32{0, 2, 1}, 2, 1},
		{"at the give-back", []uint32{0, 1}, 1, none},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Clusters: 2, CoresPerCluster: 1, QueueDepth: 1, Submitters: runtime.GOMAXPROCS(0)}
			var done sync.WaitGroup
			var u *HPU
			placed := make(chan error, 1)
			var problems sync.Map
			wait := func(what string, ok func() bool) {
				for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						problems.Store(what, true)
						return
					}
				}
			}
			idle := HandlerFunc(func(*Task) {})
			h := HandlerFunc(func(t *Task) {
				switch t.Pkt.Hdr.Block {
				case tc.start:
					go func() { placed <- u.SubmitWait(context.Background(), pkt(idle, 4)) }()
					wait("the second submitter never waited for room in X", func() bool { return u.clusters[0].waiting.Load() > 0 })
				case tc.placedBy:
					wait("the second submitter was not placed while the batch ran, though a packet left X", func() bool { return len(placed) > 0 })
				}
			})
			u, _, _ = startCoreEgress(t, cfg, &done)
			waitParked(t, u)
			ps := make([]*Packet, len(tc.blocks))
			for i, b := range tc.blocks {
				ps[i] = pkt(h, b)
			}
			done.Add(len(ps) + 1)
			if n, err := u.SubmitBatch(context.Background(), ps); n != len(ps) || err != nil {
				t.Fatalf("SubmitBatch = %d, %v", n, err)
			}
			select {
			case err := <-placed:
				if err != nil {
					t.Fatalf("the second submitter: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the second submitter still waits for room in X 10 s after the batch returned, with X empty")
			}
			problems.Range(func(k, _ any) bool { t.Error(k); return true })
			done.Wait()
		})
	}
}

// none is a block no test packet carries.
const none = ^uint32(0)

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

// A packet whose home cluster is full overflows to the least-loaded
// cluster as the submitter sees the unit: a cluster whose one request is
// the submitter's own finished packet holds nothing, and the lowest
// numbered of the emptiest is chosen, as if that count had been given
// back at once.
func TestBorrowedOverflowSeesCredits(t *testing.T) {
	cfg := Config{Clusters: 3, CoresPerCluster: 2, QueueDepth: 1, SubsetS: 2, Overflow: true, Submitters: runtime.GOMAXPROCS(0)}
	var done sync.WaitGroup
	u, _, _ := startCoreEgress(t, cfg, &done)
	waitParked(t, u)
	// Cluster 0 full: a packet of block 0 held in its handler on a core.
	release, running := make(chan struct{}), make(chan struct{})
	done.Add(1)
	if err := u.Submit(pkt(HandlerFunc(func(*Task) { close(running); <-release }), 0)); err != nil {
		t.Fatal(err)
	}
	<-running
	// Block 1 runs in cluster 1 and leaves its count with the submitter;
	// block 3's home is cluster 0, full: clusters 1 and 2 are as empty.
	var ranIn [4]int
	h := HandlerFunc(func(t *Task) { ranIn[t.Pkt.Hdr.Block] = t.Cluster })
	done.Add(2)
	if n, err := u.SubmitBatch(context.Background(), []*Packet{pkt(h, 1), pkt(h, 3)}); n != 2 || err != nil {
		t.Fatalf("SubmitBatch = %d, %v", n, err)
	}
	close(release)
	done.Wait()
	if ranIn[1] != 1 || ranIn[3] != 1 {
		t.Errorf("block 1 ran in cluster %d, block 3 (home 0, full) overflowed to cluster %d; want 1 and 1, the lowest of the emptiest", ranIn[1], ranIn[3])
	}
}

// A borrowed packet that ends while another submitter waits for room
// gives its counts back at once (not to its submitter); the submitter's
// next packet on that core, if it gets the room first, counts in the
// core's work as any packet does. With one proc the submitter runs on
// until it blocks, so it does get the room first.
func TestBorrowedCountAfterWaiterSignalled(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	cfg := Config{Clusters: 1, CoresPerCluster: 1, QueueDepth: 1, Submitters: 1}
	var done sync.WaitGroup
	var u *HPU
	var problems sync.Map
	idle := HandlerFunc(func(*Task) {})
	h := HandlerFunc(func(t *Task) {
		switch t.Pkt.Hdr.Block {
		case 1:
			go u.SubmitWait(context.Background(), pkt(idle, 3))
			for deadline := time.Now().Add(10 * time.Second); u.clusters[0].waiting.Load() == 0; runtime.Gosched() {
				if time.Now().After(deadline) {
					problems.Store("the second submitter never waited for room", true)
					return
				}
			}
		case 2:
			if !u.Borrowed(0) {
				return // the second submitter took the room first: nothing to check
			}
			if n := u.clusters[0].cores[0].load.Load(); n != 1 {
				problems.Store(fmt.Sprintf("the packet after a leave to a waiter runs with its core's work at %d, want 1 (its own)", n), true)
			}
		}
	})
	u, _, _ = startCoreEgress(t, cfg, &done)
	waitParked(t, u)
	done.Add(4)
	if n, err := u.SubmitBatch(context.Background(), []*Packet{pkt(h, 0), pkt(h, 1), pkt(h, 2)}); n != 3 || err != nil {
		t.Fatalf("SubmitBatch = %d, %v", n, err)
	}
	done.Wait()
	problems.Range(func(k, _ any) bool { t.Error(k); return true })
}

// A batch over more cores than a submitter may hold (maxBorrowed) runs
// the rest on their own goroutines.
func TestBorrowedAtMost(t *testing.T) {
	cfg := Config{Clusters: maxBorrowed + 1, CoresPerCluster: 1, Submitters: runtime.GOMAXPROCS(0)}
	var done sync.WaitGroup
	u, _, _ := startCoreEgress(t, cfg, &done)
	waitParked(t, u)
	ps := make([]*Packet, cfg.Clusters)
	for i := range ps {
		ps[i] = pkt(HandlerFunc(func(*Task) {}), uint32(i)) // one a cluster: each on a core of its own
	}
	done.Add(len(ps))
	if n, err := u.SubmitBatch(context.Background(), ps); n != len(ps) || err != nil {
		t.Fatalf("SubmitBatch = %d, %v", n, err)
	}
	done.Wait()
	if got := u.Stats().Total().Packets; got != int64(len(ps)) {
		t.Errorf("%d packets ran, want %d", got, len(ps))
	}
}
