package handlers

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/proto"
	"github.com/flare-net/flare/wire"
)

// heapBytes is what build allocated on the Go heap (TotalAlloc, which
// counts every allocation at its size-class size and nothing freed). The
// count is the process's, so a goroutine a previous test left running (a
// timer, a unit draining) can add to one build's; it cannot take away, so
// the fewest bytes of three builds is build's own.
func heapBytes(build func()) int64 {
	fewest := int64(-1)
	for range 3 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		build()
		runtime.ReadMemStats(&after)
		if n := int64(after.TotalAlloc - before.TotalAlloc); fewest < 0 || n < fewest {
			fewest = n
		}
	}
	return fewest
}

// checkFootprint compares a formula with the allocation it predicts: the
// formula must not fall short (the daemon's budget would be exceeded) by
// more than a measurement's noise, half a percent and 4 KiB, and may
// exceed it by the allocator's packing of tiny objects, bounded here by
// 25% and a few KiB.
func checkFootprint(t *testing.T, name string, want Footprint, got int64) {
	t.Helper()
	w := want.Total()
	t.Logf("%s: formula %d bytes (results %d, blocks %d, work %d), allocated %d", name, w, want.Results, want.Blocks, want.Work, got)
	if got > w+w/200+4096 {
		t.Errorf("%s: NewX allocated %d bytes, the footprint formula says %d: it misses an allocation", name, got, w)
	}
	if got < w-w/4-8192 {
		t.Errorf("%s: NewX allocated %d bytes, the footprint formula says %d: it counts what is not allocated", name, got, w)
	}
}

// heapObject is what the allocator takes for one object: its size class
// when small, with a header when it holds pointers and is past 512 bytes,
// and whole pages when large (no header inline: the span holds the type).
func TestHeapObjectMatchesAllocator(t *testing.T) {
	for _, n := range []int64{16, 24, 100, 512, 520, 1000, 4096, 8192, 32 << 10, 32<<10 + 8, 40000, 100_000, 1 << 20} {
		if got := heapBytes(func() { sinkBytes = make([]byte, n) }); got != heapObject(n, noPointers) {
			t.Errorf("%d bytes without pointers: allocated %d, heapObject says %d", n, got, heapObject(n, noPointers))
		}
		if got := heapBytes(func() { sinkPointers = make([]*int, n/8) }); got != heapObject(n/8*8, hasPointers) {
			t.Errorf("%d bytes of pointers: allocated %d, heapObject says %d", n/8*8, got, heapObject(n/8*8, hasPointers))
		}
	}
	sinkBytes, sinkPointers = nil, nil
}

// Where TestHeapObjectMatchesAllocator's objects go, so that they are
// allocated on the heap, and as one object each.
var (
	sinkBytes    []byte
	sinkPointers []*int
)

// TestFootprintMatchesHeap holds Dense.Footprint and Sparse.Footprint to
// what NewDense and NewSparse really allocate, for every design and the
// options that add per-block state, so that the daemon's admission (which
// sizes a job by the formula before building it) cannot drift from the
// constructors.
func TestFootprintMatchesHeap(t *testing.T) {
	unit, err := hpu.New(hpu.Config{Clusters: 1, L1Bytes: 4 << 20, BufferBytes: 1024}, nopEgress{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const quotaBufs = 512
	dense := []DenseConfig{
		{Algo: wire.AlgoSingle, Op: wire.OpSum, Children: 4, DType: wire.Float32, Elements: 1 << 20, PacketElems: 256, KeepResults: true},
		{Algo: wire.AlgoSingle, Op: wire.OpSum, Children: 4, DType: wire.Int8, Elements: 1 << 20, PacketElems: 1, KeepResults: true},
		{Algo: wire.AlgoSingle, Op: wire.OpSum, Children: 3, DType: wire.Float64, Elements: 100_000, PacketElems: 128, KeepResults: true, Deadline: 1e6},
		{Algo: wire.AlgoSingle, Op: wire.OpSum, Children: 2, DType: wire.Float32, Elements: 1 << 18, PacketElems: 256, KeepResults: true, Uplink: &Uplink{}},
		{Algo: wire.AlgoMulti, Op: wire.OpSum, Buffers: 4, Children: 8, DType: wire.Int32, Elements: 1 << 19, PacketElems: 256, KeepResults: true},
		{Algo: wire.AlgoTree, Op: wire.OpSum, Children: 300, DType: wire.Float32, Elements: 1 << 18, PacketElems: 256},
		{Algo: wire.AlgoSingle, Op: wire.OpSum, Children: 70_000 % proto.MaxChildren, DType: wire.Int16, Elements: 5000, PacketElems: 512, KeepResults: true},
		// A packet per element, so that what is kept per block (a non-root
		// switch's final flags and send times, a bounded job's counts)
		// outweighs the results; and a vector of few elements in many
		// blocks, whose block states and their pool outweigh the rest.
		{Algo: wire.AlgoSingle, Op: wire.OpSum, Children: 2, DType: wire.Int8, Elements: 1 << 16, PacketElems: 1, KeepResults: true, Uplink: &Uplink{}},
		{Algo: wire.AlgoSingle, Op: wire.OpSum, Children: 2, DType: wire.Int8, Elements: 1 << 16, PacketElems: 1, KeepResults: true, Deadline: 1e6},
		{Algo: wire.AlgoSingle, Op: wire.OpSum, Children: 100, DType: wire.Int8, Elements: 1024, PacketElems: 1, KeepResults: true},
	}
	for i, c := range dense {
		q, err := unit.Memory().Reserve(quotaBufs)
		if err != nil {
			t.Fatal(err)
		}
		c.Quota = q
		var d *Dense
		got := heapBytes(func() { d, err = NewDense(c) })
		if err != nil {
			t.Fatal(err)
		}
		checkFootprint(t, fmt.Sprintf("dense %d %s P=%d", i, c.Algo, c.Children), c.Footprint(quotaBufs), got)
		runtime.KeepAlive(d)
		q.Release()
	}
	sparse := []SparseConfig{
		{Children: 4, DType: wire.Float32, Op: wire.OpSum, Storage: wire.StorageHash, Buffers: 1, Elements: 1 << 22, BlockElems: 4096, HashSlots: 512, PacketPairs: 128, KeepResults: true},
		{Children: 8, DType: wire.Float64, Op: wire.OpMax, Storage: wire.StorageArray, Buffers: 2, Elements: 1 << 20, BlockElems: 1024, PacketPairs: 64, KeepResults: true},
		{Children: 3, DType: wire.Float32, Op: wire.OpSum, Storage: wire.StorageHash, Buffers: 1, Elements: 1 << 20, BlockElems: 4096, HashSlots: 512, PacketPairs: 128, KeepResults: true, Uplink: &Uplink{}},
	}
	for i, c := range sparse {
		q, err := unit.Memory().Reserve(quotaBufs)
		if err != nil {
			t.Fatal(err)
		}
		c.Quota = q
		var s *Sparse
		got := heapBytes(func() { s, err = NewSparse(c) })
		if err != nil {
			t.Fatal(err)
		}
		checkFootprint(t, fmt.Sprintf("sparse %d %s B=%d", i, c.Storage, c.Buffers), c.Footprint(quotaBufs, 1024), got)
		runtime.KeepAlive(s)
		q.Release()
	}
}

// TestSparseStreamsReserve checks that stored streams grow only as far as
// SparseConfig.Reserve grants: with a grant too small for one block's
// stream, nothing is stored, the refusal is counted, and a retransmission
// of that block is not answered with a partial stream.
func TestSparseStreamsReserve(t *testing.T) {
	var granted, asked int64
	cfg := SparseConfig{Job: 1, Token: 1, Children: 2, DType: wire.Float32, Op: wire.OpSum, Storage: wire.StorageArray,
		Buffers: 1, Elements: 4096, BlockElems: 1024, PacketPairs: 128, KeepResults: true}
	cfg.Reserve = func(n int64) bool {
		asked += n
		if granted+n > 2048 {
			return false
		}
		granted += n
		return true
	}
	s, _ := newTestSparse(t, cfg)
	v := newVUnit(nopEgress{}, 1)
	defer v.close()
	record := func(h *wire.Header, payload []byte) { // s.record on a core of the unit
		v.call(func(t *hpu.Task) { s.record(t, h, payload) })
	}
	h := wire.Header{Type: wire.TypeSparse, Job: 1, Token: 1, Generation: 1, Block: wire.SparseBlockField(0, 0)}
	payload := make([]byte, 128*wire.PairSize(wire.Float32))
	for seq := range 4 {
		h.Block = wire.SparseBlockField(0, uint32(seq))
		record(&h, payload)
	}
	r := &s.records[1][0]
	if !r.unstored || len(r.pkts) != 0 || len(r.lens) != 0 {
		t.Errorf("after a refused growth the record holds %d packets (%d bytes), unstored %v: want none", len(r.lens), len(r.pkts), r.unstored)
	}
	if s.Stats.Unstored.Load() != 1 {
		t.Errorf("Unstored = %d, want 1", s.Stats.Unstored.Load())
	}
	if granted > 2048 || int64(cap(r.pkts))+4*int64(cap(r.lens)) > granted {
		t.Errorf("granted %d bytes, the record holds %d + %d: it grew past the grant", granted, cap(r.pkts), 4*cap(r.lens))
	}
	// The next generation starts afresh.
	h.Generation, h.Block = 2, wire.SparseBlockField(0, 0)
	record(&h, payload[:16])
	if r := &s.records[0][0]; r.unstored || len(r.lens) != 1 {
		t.Errorf("a new generation's record: %d packets, unstored %v; want 1 stored", len(r.lens), r.unstored)
	}
	if asked == 0 {
		t.Error("Reserve was never asked")
	}
}
