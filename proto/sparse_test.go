package proto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/internal/pairtest"
	"github.com/flare-net/flare/wire"
)

func TestMergeSparse(t *testing.T) {
	result := pairtest.Int32(1, 10, 4, 40, 9, 90)
	spill := pairtest.Int32(9, 1, 0, 5, 4, 2, 7, 3, 4, 1)
	got, err := MergeSparse(nil, wire.Int32, wire.OpSum, result, spill)
	if err != nil {
		t.Fatal(err)
	}
	if want := pairtest.Int32(0, 5, 1, 10, 4, 43, 7, 3, 9, 91); !bytes.Equal(got, want) {
		t.Fatalf("got % x, want % x", got, want)
	}
	// Appends to dst.
	pre := []byte{0xaa}
	got2, _ := MergeSparse(pre, wire.Int32, wire.OpSum, result, spill)
	if got2[0] != 0xaa || !bytes.Equal(got2[1:], got) {
		t.Fatal("MergeSparse does not append to dst")
	}
	// Empty inputs.
	if got, err := MergeSparse(nil, wire.Int32, wire.OpMax, nil, nil); err != nil || len(got) != 0 {
		t.Fatalf("empty merge: % x, %v", got, err)
	}
	if _, err := MergeSparse(nil, wire.Int32, wire.OpSum, pairtest.Int32(4, 1, 2, 1), nil); !errors.Is(err, ErrUnsorted) {
		t.Errorf("unsorted result: %v", err)
	}
	if _, err := MergeSparse(nil, wire.Int32, wire.OpSum, pairtest.Int32(4, 1, 4, 1), nil); !errors.Is(err, ErrUnsorted) {
		t.Errorf("repeated result index: %v", err)
	}
	if _, err := MergeSparse(nil, wire.Int32, wire.OpSum, result[:5], nil); !errors.Is(err, elem.ErrLength) {
		t.Errorf("partial result pair: %v", err)
	}
	if _, err := MergeSparse(nil, wire.Int32, wire.OpProd, result, nil); !errors.Is(err, elem.ErrUnsupported) {
		t.Errorf("prod: %v", err)
	}
}

// The merge's bits do not depend on the order the spills arrived in, even
// for a float sum, where the order of additions matters.
func TestMergeSparseOrderIndependent(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 14))
	f := func(v float32) []byte { return binary.LittleEndian.AppendUint32(nil, math.Float32bits(v)) }
	result := wire.AppendPair(nil, 3, f(1e8))
	var spills [][]byte
	for range 50 {
		spills = append(spills, wire.AppendPair(nil, 3, f(float32(r.NormFloat64()))))
		spills = append(spills, wire.AppendPair(nil, uint32(r.IntN(6)), f(float32(r.NormFloat64()*1e7))))
	}
	var first []byte
	for range 20 {
		r.Shuffle(len(spills), func(i, j int) { spills[i], spills[j] = spills[j], spills[i] })
		var spill []byte
		for _, s := range spills {
			spill = append(spill, s...)
		}
		got, err := MergeSparse(nil, wire.Float32, wire.OpSum, result, spill)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = got
		} else if !bytes.Equal(got, first) {
			t.Fatal("merge depends on the spills' arrival order")
		}
	}
}

func TestSparsePacker(t *testing.T) {
	pk := SparsePacker{DType: wire.Int32, BlockElems: 10, PacketPairs: 2}
	// Global indices 3, 12, 13, 15, 17 (block 1 has four: two full packets
	// and an empty last), 25.
	pairs := pairtest.Int32(3, 30, 12, 120, 13, 130, 15, 150, 17, 170, 25, 250)
	if got := pk.BlockPairs(pairs, 1); !bytes.Equal(got, pairtest.Int32(12, 120, 13, 130, 15, 150, 17, 170)) {
		t.Fatalf("block 1 pairs % x", got)
	}
	if got := pk.BlockPairs(pairs, 3); len(got) != 0 {
		t.Fatalf("block 3 pairs % x", got)
	}
	bp := pk.BlockPairs(pairs, 1)
	n := pk.Packets(len(bp) / 8)
	if n != 3 {
		t.Fatalf("%d packets for 4 pairs of 2 per packet, want 3 (the last empty)", n)
	}
	want := [][]byte{pairtest.Int32(2, 120, 3, 130), pairtest.Int32(5, 150, 7, 170), nil}
	for seq := range n {
		h := wire.Header{Flags: wire.FlagLast | wire.FlagRetransmit}
		payload := pk.Packet(nil, &h, 1, bp, seq)
		b, s := wire.SplitSparseBlock(h.Block)
		last := seq == n-1
		if h.Type != wire.TypeSparse || b != 1 || int(s) != seq || (h.Flags&wire.FlagLast != 0) != last ||
			h.Flags&wire.FlagRetransmit == 0 || int(h.Count) != len(want[seq])/8 || !bytes.Equal(payload, want[seq]) {
			t.Fatalf("packet %d: header %+v payload % x", seq, h, payload)
		}
	}
	// The caller's pairs are untouched (indices are rebased in the copy).
	if !bytes.Equal(bp, pairtest.Int32(12, 120, 13, 130, 15, 150, 17, 170)) {
		t.Fatal("Packet modified the block's pairs")
	}
}

func TestSparseAssembler(t *testing.T) {
	mk := func(typ wire.Type, seq uint32, last bool, kv ...int32) (wire.Header, []byte) {
		p := pairtest.Int32(kv...)
		h := wire.Header{Type: typ, DType: wire.Int32, Op: wire.OpSum, Block: wire.SparseBlockField(2, seq), Count: uint32(len(p) / 8)}
		if last {
			h.Flags = wire.FlagLast
		}
		return h, p
	}
	type pkt struct {
		h wire.Header
		p []byte
	}
	var stream []pkt
	for _, x := range []struct {
		typ  wire.Type
		seq  uint32
		last bool
		kv   []int32
	}{
		{wire.TypeSpill, 0, false, []int32{7, 1, 3, 2}},
		{wire.TypeSpill, 1, false, []int32{3, 5}},
		{wire.TypeSparse, 2, false, []int32{1, 10, 3, 30}},
		{wire.TypeSparse, 3, true, []int32{8, 80}},
	} {
		h, p := mk(x.typ, x.seq, x.last, x.kv...)
		stream = append(stream, pkt{h, p})
	}
	var a SparseAssembler
	a.DType = wire.Int32
	// Out of order, the last first, with duplicates.
	for i, k := range []int{3, 1, 1, 3, 0, 2} {
		done, err := a.Add(&stream[k].h, stream[k].p)
		if err != nil {
			t.Fatal(err)
		}
		if done != (i == 5) {
			t.Fatalf("after %d packets: complete = %v", i+1, done)
		}
	}
	got, err := a.Merge(nil, wire.OpSum, 100)
	if err != nil {
		t.Fatal(err)
	}
	if want := pairtest.Int32(101, 10, 103, 37, 107, 1, 108, 80); !bytes.Equal(got, want) {
		t.Fatalf("merged % x, want % x", got, want)
	}
	// Contradictions are errors and change nothing.
	h, p := mk(wire.TypeSparse, 5, false, 9, 9)
	if _, err := a.Add(&h, p); err == nil {
		t.Error("a packet after the last was taken")
	}
	a.Reset()
	h, p = mk(wire.TypeSpill, 0, true)
	if _, err := a.Add(&h, p); err == nil {
		t.Error("a spill marked last was taken")
	}
	h, p = mk(wire.TypeSparse, 4, false, 1, 1)
	a.Add(&h, p)
	h, p = mk(wire.TypeSparse, 2, true)
	if _, err := a.Add(&h, p); err == nil {
		t.Error("a last packet before an earlier one was taken")
	}
	h, p = mk(wire.TypeSparse, 6, false, 1, 1)
	h.Count = 2
	if _, err := a.Add(&h, p); err == nil {
		t.Error("a count beyond the payload was taken")
	}
	if _, err := a.Merge(nil, wire.OpSum, 0); err == nil {
		t.Error("an incomplete stream merged")
	}
}

// SortPairs sorts by index, keeps the order of an index listed twice, and
// leaves its input as it was.
func TestSortPairs(t *testing.T) {
	in := pairtest.Int32(9, 1, 2, 2, 9, 3, 0, 4, 2, 5)
	orig := bytes.Clone(in)
	got := SortPairs(in, wire.Int32)
	if want := pairtest.Int32(0, 4, 2, 2, 2, 5, 9, 1, 9, 3); !bytes.Equal(got, want) {
		t.Fatalf("got % x, want % x", got, want)
	}
	if !bytes.Equal(in, orig) {
		t.Fatal("SortPairs changed its input")
	}
	if got := SortPairs(append(in, 7, 7), wire.Int32); len(got) != len(in) {
		t.Fatalf("a partial pair at the end: %d bytes, want %d", len(got), len(in))
	}
	if got := SortPairs(nil, wire.Float64); len(got) != 0 {
		t.Fatalf("no pairs gave %d bytes", len(got))
	}
}
