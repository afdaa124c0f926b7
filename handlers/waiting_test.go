package handlers

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/proto"
	"github.com/flare-net/flare/wire"
)

// waitingCapture keeps the text and header of every waiting report.
type waitingCapture struct {
	mu    sync.Mutex
	texts []string
	hdrs  []wire.Header
}

func (c *waitingCapture) Emit(h *wire.Header, payload []byte) {
	if h.Type != wire.TypeError {
		return
	}
	var b wire.ErrorBody
	if b.Unmarshal(payload) != nil || b.Code != wire.CodeWaiting {
		return
	}
	c.mu.Lock()
	c.texts = append(c.texts, string(b.Text))
	c.hdrs = append(c.hdrs, *h)
	c.mu.Unlock()
}

// A waiting report names the block of the retransmitted packet, whatever
// its number: dense blocks go past 65,535 (one element per packet, or
// long vectors), and the text must not wrap them to their low 16 bits.
// The header's block field is the retransmitted packet's.
func TestWaitingNamesLargeBlocks(t *testing.T) {
	const nblocks = 1<<16 + 3
	d := buildDense(t, DenseConfig{Job: 1, Algo: wire.AlgoSingle, Children: 2, DType: wire.Int32, Op: wire.OpSum,
		Elements: nblocks, PacketElems: 1}, 4)
	c := &waitingCapture{}
	v := newVUnit(c, 1)
	defer v.close()
	for _, blk := range []uint32{3, 1 << 16, 1<<16 + 2} {
		p := &hpu.Packet{Hdr: wire.Header{Version: wire.Version, Type: wire.TypeData, Job: 1, Generation: 7, Block: blk,
			DType: wire.Int32, Op: wire.OpSum, Count: 1}, Payload: make([]byte, 4), Handler: d}
		v.run(p, 0)
		again := *p
		again.Hdr.Flags |= wire.FlagRetransmit
		v.run(&again, 0)
		if len(c.texts) == 0 {
			t.Fatalf("block %d: no waiting report", blk)
		}
		text, h := c.texts[len(c.texts)-1], c.hdrs[len(c.hdrs)-1]
		want := "block " + itoa(int(blk)) + " of allreduce 7 waits for rank 1: nothing from them yet"
		if text != want || h.Block != blk || h.Child != 0 || h.Generation != 7 {
			t.Errorf("block %d: report %q (header block %d, child %d, generation %d), want %q to child 0",
				blk, text, h.Block, h.Child, h.Generation, want)
		}
		c.texts, c.hdrs = c.texts[:0], c.hdrs[:0]
	}
	d.Close()
}

// A sparse waiting report names the block id, not the header's block
// field with the stream's sequence number in its high bits.
func TestWaitingNamesSparseBlock(t *testing.T) {
	cfg := SparseConfig{Job: 1, Children: 2, DType: wire.Int32, Op: wire.OpSum, Storage: wire.StorageArray, Buffers: 1,
		Elements: 64, BlockElems: 8, PacketPairs: 4}
	s, _ := newTestSparse(t, cfg)
	c := &waitingCapture{}
	v := newVUnit(c, 1)
	defer v.close()
	pk := proto.SparsePacker{DType: wire.Int32, BlockElems: 8, PacketPairs: 4}
	pairs, err := wire.AppendPairs(nil, wire.Int32, []uint32{41}, make([]byte, 4))
	if err != nil {
		t.Fatal(err)
	}
	h := wire.Header{Version: wire.Version, Job: 1, Generation: 3, Op: wire.OpSum}
	payload := pk.Packet(nil, &h, 5, pairs, 0)
	for _, flags := range []wire.Flags{0, wire.FlagRetransmit} {
		p := &hpu.Packet{Hdr: h, Payload: payload, Handler: s}
		p.Hdr.Flags |= flags
		v.run(p, 0)
	}
	want := "block 5 of allreduce 3 waits for rank 1: nothing from them yet"
	if len(c.texts) != 1 || c.texts[0] != want {
		t.Fatalf("reports %q, want [%q]", c.texts, want)
	}
	s.Close()
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		if n /= 10; n == 0 {
			return string(b[i:])
		}
	}
}

// blockingEgress holds the core that emits the waiting report for block
// 0 until the report for block 1 has gone out: an egress queue that is
// full for one destination.
type blockingEgress struct {
	inFirst  chan struct{} // closed when block 0's report is inside Emit
	second   chan struct{} // closed when block 1's report arrived
	once     [2]sync.Once
	overtook atomic.Bool // block 1's report went out while block 0's was held
}

func (e *blockingEgress) Emit(h *wire.Header, payload []byte) {
	if h.Type != wire.TypeError {
		return
	}
	switch h.Block {
	case 0:
		e.once[0].Do(func() { close(e.inFirst) })
		select {
		case <-e.second:
			e.overtook.Store(true)
		case <-time.After(10 * time.Second):
		}
	case 1:
		e.once[1].Do(func() { close(e.second) })
	}
}

// One core blocked in Emit (a full egress queue) must not stop another
// core's waiting report: the reports share no lock across Emit.
func TestWaitingReportsDoNotShareALockAcrossEmit(t *testing.T) {
	eg := &blockingEgress{inFirst: make(chan struct{}), second: make(chan struct{})}
	var handled atomic.Int64
	unit, err := hpu.New(hpu.Config{Clusters: 2, CoresPerCluster: 2, L1Bytes: 64 << 10, BufferBytes: 1024}, eg,
		func(*hpu.Packet, int) { handled.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	q, err := unit.Memory().Reserve(4)
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDense(DenseConfig{Job: 1, Algo: wire.AlgoSingle, Children: 2, DType: wire.Int32, Op: wire.OpSum,
		Elements: 2, PacketElems: 1, Quota: q})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { unit.Run(ctx); close(done) }()
	packet := func(blk uint32, flags wire.Flags) *hpu.Packet {
		return &hpu.Packet{Hdr: wire.Header{Version: wire.Version, Type: wire.TypeData, Flags: flags, Job: 1, Generation: 1,
			Block: blk, DType: wire.Int32, Op: wire.OpSum, Count: 1}, Payload: make([]byte, 4), Handler: d}
	}
	submit := func(p *hpu.Packet) {
		if err := unit.SubmitWait(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// Child 0's packets of blocks 0 and 1 (the blocks wait for child 1),
	// then its retransmissions: block 0's report blocks in Emit first.
	submit(packet(0, 0))
	submit(packet(1, 0))
	for handled.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	submit(packet(0, wire.FlagRetransmit))
	<-eg.inFirst
	submit(packet(1, wire.FlagRetransmit))
	stop()
	<-done
	if !eg.overtook.Load() {
		t.Fatal("block 1's waiting report waited for block 0's Emit to return")
	}
	d.Close()
	if q.InUse() != 0 {
		t.Fatalf("%d buffers held after Close", q.InUse())
	}
}

// Waiting reports allocate nothing: duplicates are part of the steady
// state on a lossy network.
func TestWaitingZeroAlloc(t *testing.T) {
	d := newTestDense(t, design{wire.AlgoSingle, 0}, wire.Int32, wire.OpSum, 3, 4, 4)
	c := &countingEgress{}
	v := newVUnit(c, 1)
	defer v.close()
	p := &hpu.Packet{Hdr: wire.Header{Version: wire.Version, Type: wire.TypeData, Job: 1, Generation: 1,
		DType: wire.Int32, Op: wire.OpSum, Count: 4}, Payload: make([]byte, 16), Handler: d}
	v.run(p, 0)
	p.Hdr.Flags |= wire.FlagRetransmit
	allocs := testing.AllocsPerRun(100, func() {
		v.run(p, 0)
	})
	if allocs != 0 || c.n.Load() < 100 || !strings.Contains(c.last, "waits for ranks 1, 2") {
		t.Fatalf("%.1f allocations per waiting report (%d reports, last %q), want 0", allocs, c.n.Load(), c.last)
	}
}

// countingEgress counts waiting reports and keeps the last one's text.
type countingEgress struct {
	n    atomic.Int64
	last string
}

func (c *countingEgress) Emit(h *wire.Header, payload []byte) {
	var b wire.ErrorBody
	if h.Type == wire.TypeError && b.Unmarshal(payload) == nil {
		if c.n.Add(1) == 1 {
			c.last = string(b.Text)
		}
	}
}

// A waiting report answers a retransmission alone: a plain duplicate (the
// network's copy) gets none. It goes to the rank that retransmitted (the
// header's child), and names at most eight missing ranks, counting the
// rest. A leaf's report that its block waits for the parent is for a
// retransmission alone too.
func TestWaitingOnlyForRetransmissions(t *testing.T) {
	d := buildDense(t, DenseConfig{Job: 1, Algo: wire.AlgoSingle, Children: 12, DType: wire.Int32, Op: wire.OpSum,
		Elements: 1, PacketElems: 1}, 4)
	c := &waitingCapture{}
	v := newVUnit(c, 1)
	defer v.close()
	p := &hpu.Packet{Hdr: wire.Header{Version: wire.Version, Type: wire.TypeData, Job: 1, Generation: 2, Child: 5,
		DType: wire.Int32, Op: wire.OpSum, Count: 1}, Payload: make([]byte, 4), Handler: d}
	v.run(p, 0)
	dup := *p
	v.run(&dup, 0)
	if len(c.texts) != 0 {
		t.Fatalf("a plain duplicate got reports %q, want none", c.texts)
	}
	again := *p
	again.Hdr.Flags |= wire.FlagRetransmit
	v.run(&again, 0)
	want := "block 0 of allreduce 2 waits for ranks 0, 1, 2, 3, 4, 6, 7, 8 and 3 more: nothing from them yet"
	if len(c.texts) != 1 || c.texts[0] != want || c.hdrs[0].Child != 5 {
		t.Fatalf("reports %q (to child %v), want [%q] to child 5", c.texts, c.hdrs, want)
	}
	d.Close()

	_, tc, run := newUplinkLeaf(t)
	for rank := range 2 { // the block completes here and goes up
		run(&hpu.Packet{Hdr: wire.Header{Version: wire.Version, Type: wire.TypeData, Job: 1, Generation: 1, Child: uint16(rank),
			DType: wire.Int32, Op: wire.OpSum, Count: 4}, Payload: make([]byte, 16)}, 1)
	}
	late := &hpu.Packet{Hdr: wire.Header{Version: wire.Version, Type: wire.TypeData, Job: 1, Generation: 1, Child: 1,
		DType: wire.Int32, Op: wire.OpSum, Count: 4}, Payload: make([]byte, 16)}
	run(late, 2)
	if len(tc.waiting) != 0 {
		t.Fatalf("a plain duplicate at a leaf got reports %q, want none", tc.waiting)
	}
	late.Hdr.Flags |= wire.FlagRetransmit
	run(late, 3)
	if len(tc.waiting) != 1 || !strings.Contains(tc.waiting[0], "waits for the parent switch") {
		t.Fatalf("a retransmission at a leaf got reports %q, want one saying the block waits for the parent", tc.waiting)
	}
}
