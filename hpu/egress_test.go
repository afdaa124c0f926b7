package hpu

import (
	"context"
	"sync"
	"testing"

	"github.com/flare-net/flare/wire"
)

// emitter is a handler that emits one packet naming the core it runs on:
// a packet of an odd block with EmitKept.
type emitter struct{ cores int }

func (e emitter) Payload(t *Task) {
	h := &wire.Header{Type: wire.TypeResult, Block: uint32(t.Cluster*e.cores + t.Core)}
	if t.Pkt.Hdr.Block%2 == 1 {
		t.EmitKept(h, nil, nil)
		return
	}
	t.Emit(h, nil)
}

// coreEgress records a CoreEgress's calls: what each core emitted and has
// not flushed, and what it flushed; each core's slot is touched only by
// that core's goroutine.
type coreEgress struct {
	pending, flushed []int
	kept             []int // of the emits, EmitKeptFrom's
	wrong            []int // emits whose core index is not the core that ran them
	borrowed         []int // emits made while the unit said their core was borrowed (HPU.Borrowed)
	plain            int   // Emit or EmitFor calls, which a real-time unit must not make
	mu               sync.Mutex
	unit             *HPU
}

func (e *coreEgress) Emit(*wire.Header, []byte) { e.mu.Lock(); e.plain++; e.mu.Unlock() }
func (e *coreEgress) EmitFor(*Packet, *wire.Header, []byte) {
	e.mu.Lock()
	e.plain++
	e.mu.Unlock()
}

func (e *coreEgress) EmitFrom(core int, _ *Packet, h *wire.Header, _ []byte) {
	if int(h.Block) != core {
		e.wrong[core]++
	}
	if e.unit.Borrowed(core) {
		e.borrowed[core]++
	}
	e.pending[core]++
}

func (e *coreEgress) EmitKeptFrom(core int, p *Packet, h *wire.Header, payload []byte) {
	e.kept[core]++
	e.EmitFrom(core, p, h, payload)
}

func (e *coreEgress) Flush(core int) {
	e.flushed[core] += e.pending[core]
	e.pending[core] = 0
}

// The real-time unit tells a CoreEgress which core emits, by the index
// cluster × CoresPerCluster + core, and flushes every core's emits after
// its batch: once the packets have run, nothing is left unflushed.
func TestCoreEgress(t *testing.T) {
	cfg := Config{Clusters: 2, CoresPerCluster: 3}
	n := cfg.Clusters * cfg.CoresPerCluster
	var wg sync.WaitGroup
	u, e, stop := startCoreEgress(t, cfg, &wg)
	const packets = 600
	ps := make([]*Packet, packets)
	for i := range ps {
		ps[i] = pkt(emitter{cfg.CoresPerCluster}, uint32(i))
	}
	wg.Add(packets)
	for i := 0; i < packets; i += 50 {
		if _, err := u.SubmitBatch(context.Background(), ps[i:i+50]); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	stop() // the cores have exited: their last batch was flushed
	total, used, kept := 0, 0, 0
	for c := range n {
		kept += e.kept[c]
		if e.pending[c] != 0 || e.wrong[c] != 0 {
			t.Errorf("core %d: %d emits never flushed, %d under another core's index", c, e.pending[c], e.wrong[c])
		}
		if e.flushed[c] > 0 {
			used++
		}
		total += e.flushed[c]
	}
	if total != packets || e.plain != 0 {
		t.Errorf("%d emits flushed and %d plain ones, want %d and 0", total, e.plain, packets)
	}
	for c, n := range e.borrowed {
		if n != 0 {
			t.Errorf("core %d: %d emits said borrowed, in a unit that borrows none (no Submitters)", c, n)
		}
	}
	if kept != packets/2 {
		t.Errorf("%d emits kept, want %d (every EmitKept)", kept, packets/2)
	}
	if used < 2 {
		t.Errorf("only %d cores emitted: the test ran on one", used)
	}
}

// startCoreEgress runs a unit with a CoreEgress recorder until stop or the
// test's end; done counts the packets given back. stop returns when the
// cores have exited.
func startCoreEgress(t *testing.T, cfg Config, done *sync.WaitGroup) (u *HPU, e *coreEgress, stop func()) {
	t.Helper()
	n := cfg.Clusters * cfg.CoresPerCluster
	e = &coreEgress{pending: make([]int, n), flushed: make([]int, n), wrong: make([]int, n), kept: make([]int, n), borrowed: make([]int, n)}
	u, err := New(cfg, e, func(*Packet, int) { done.Done() })
	if err != nil {
		t.Fatal(err)
	}
	e.unit = u
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { u.Run(ctx); close(stopped) }()
	stop = func() { cancel(); <-stopped }
	t.Cleanup(stop)
	return u, e, stop
}
