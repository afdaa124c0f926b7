package proto

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"

	"github.com/flare-net/flare/wire"
)

// SparsePacker cuts a host's sparse vector into the streams of Sparse
// packets the switch's Sparse handler takes: the vector's pairs, sorted by
// index, go block by block (BlockElems indices each), and each block's
// pairs in packets of PacketPairs pairs with indices relative to the
// block's first element. Every packet but the last is full; the last
// carries FlagLast and fewer pairs, none when the pairs filled the previous
// packet exactly. The packets are numbered 0, 1, ... in the header's block
// field (wire.SparseBlockField), which is how the switch tells a duplicate
// from a new packet and knows when it has a host's whole block.
type SparsePacker struct {
	DType       wire.DType
	BlockElems  int
	PacketPairs int
}

// BlockPairs returns the pairs of block b from pairs, wire pairs of DType
// with global uint32 indices sorted by index, as a sub-slice.
func (p SparsePacker) BlockPairs(pairs []byte, b int) []byte {
	ps := wire.PairSize(p.DType)
	n := len(pairs) / ps
	at := func(i int) uint64 { return uint64(binary.LittleEndian.Uint32(pairs[i*ps:])) }
	lo := uint64(b) * uint64(p.BlockElems)
	i := sort.Search(n, func(i int) bool { return at(i) >= lo })
	j := sort.Search(n, func(j int) bool { return at(j) >= lo+uint64(p.BlockElems) })
	return pairs[i*ps : j*ps]
}

// SortPairs returns a copy of pairs, wire pairs of dt, sorted by index, the
// order BlockPairs takes. The sort is stable: a vector that lists an index
// twice keeps the two in its order. A partial pair at the end is dropped.
func SortPairs(pairs []byte, dt wire.DType) []byte {
	ps := wire.PairSize(dt)
	order := make([]int, len(pairs)/ps)
	for i := range order {
		order[i] = i
	}
	idx := func(i int) uint32 { return binary.LittleEndian.Uint32(pairs[i*ps:]) }
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(idx(a), idx(b)) })
	out := make([]byte, 0, len(order)*ps)
	for _, i := range order {
		out = append(out, pairs[i*ps:(i+1)*ps]...)
	}
	return out
}

// Packets is the length of a block's stream when the block has n pairs.
func (p SparsePacker) Packets(n int) int { return n/p.PacketPairs + 1 }

// Packet appends the payload of packet seq of block b's stream to dst and
// sets the stream fields of h: Type (Sparse), Block (b and seq), Count,
// FlagLast (set on the last packet, cleared otherwise) and DType. The
// caller sets the job, token, generation, child and op. blockPairs is the
// block's pairs with global indices (BlockPairs); the payload carries them
// relative to the block's start.
func (p SparsePacker) Packet(dst []byte, h *wire.Header, b uint32, blockPairs []byte, seq int) []byte {
	ps := wire.PairSize(p.DType)
	n := len(blockPairs) / ps
	lo := min(seq*p.PacketPairs, n)
	hi := min(lo+p.PacketPairs, n)
	h.Type, h.DType = wire.TypeSparse, p.DType
	h.Block = wire.SparseBlockField(b, uint32(seq))
	h.Count = uint32(hi - lo)
	h.Flags &^= wire.FlagLast
	if seq == p.Packets(n)-1 {
		h.Flags |= wire.FlagLast
	}
	start := len(dst)
	dst = append(dst, blockPairs[lo*ps:hi*ps]...)
	base := uint32(uint64(b) * uint64(p.BlockElems))
	for off := start; off < len(dst); off += ps {
		binary.LittleEndian.PutUint32(dst[off:], binary.LittleEndian.Uint32(dst[off:])-base)
	}
	return dst
}

// SparseAssembler collects the switch's stream of one sparse block on a
// host: Spill packets, then the result's Sparse packets, the last with
// FlagLast, numbered in one sequence (wire.SplitSparseBlock). Packets may
// arrive in any order and more than once; the stream is complete when the
// last packet and every one before it are in. Then Merge gives the block's
// final pairs. A zero SparseAssembler is ready for DType; Reset reuses it.
type SparseAssembler struct {
	DType  wire.DType
	seen   []uint64
	last   int // sequence of the FlagLast packet; -1 unknown
	got    int // distinct packets
	pieces []sparsePiece
	data   []byte
	init   bool
}

type sparsePiece struct {
	seq    uint32
	spill  bool
	off, n int // bytes in data
}

// Reset forgets the stream, keeping the memory.
func (a *SparseAssembler) Reset() {
	clear(a.seen)
	a.last, a.got, a.init = -1, 0, true
	a.pieces, a.data = a.pieces[:0], a.data[:0]
}

// Add takes one packet of the block's stream (the caller matched the job,
// generation and block). It ignores a duplicate and reports whether the
// stream is complete. A packet that contradicts the stream (a last packet
// twice, a packet after the last, a Spill marked last, a payload that is
// not Count pairs of DType) is an error and is not taken.
func (a *SparseAssembler) Add(h *wire.Header, payload []byte) (complete bool, err error) {
	if !a.init {
		a.Reset()
	}
	_, seq := wire.SplitSparseBlock(h.Block)
	last := h.Flags&wire.FlagLast != 0
	switch {
	case h.Type != wire.TypeSparse && h.Type != wire.TypeSpill:
		return a.Complete(), fmt.Errorf("sparse stream: packet type %v", h.Type)
	case h.DType != a.DType:
		return a.Complete(), fmt.Errorf("sparse stream: dtype %v, want %v", h.DType, a.DType)
	case h.Type == wire.TypeSpill && last:
		return a.Complete(), fmt.Errorf("sparse stream: spill packet %d marked last", seq)
	}
	if _, err := wire.ParsePairs(payload, h.DType, h.Count); err != nil {
		return a.Complete(), fmt.Errorf("sparse stream: packet %d: %w", seq, err)
	}
	if w := int(seq / 64); w >= len(a.seen) {
		a.seen = append(a.seen, make([]uint64, w+1-len(a.seen))...)
	}
	bit := uint64(1) << (seq % 64)
	switch {
	case a.seen[seq/64]&bit != 0:
		return a.Complete(), nil
	case a.last >= 0 && (last || int(seq) > a.last):
		return a.Complete(), fmt.Errorf("sparse stream: packet %d after the last, %d", seq, a.last)
	case last && a.highest() > int(seq):
		return a.Complete(), fmt.Errorf("sparse stream: last packet %d before packet %d", seq, a.highest())
	}
	a.seen[seq/64] |= bit
	a.got++
	if last {
		a.last = int(seq)
	}
	a.pieces = append(a.pieces, sparsePiece{seq: seq, spill: h.Type == wire.TypeSpill, off: len(a.data), n: len(payload)})
	a.data = append(a.data, payload...)
	return a.Complete(), nil
}

// highest is the largest sequence number taken, or -1.
func (a *SparseAssembler) highest() int {
	hi := -1
	for _, p := range a.pieces {
		hi = max(hi, int(p.seq))
	}
	return hi
}

// Complete reports whether the whole stream is in.
func (a *SparseAssembler) Complete() bool { return a.init && a.last >= 0 && a.got == a.last+1 }

// Merge appends the block's final pairs to dst: the result merged with the
// spills by MergeSparse with op, indices sorted and shifted by base (the
// block's first element, for global indices; 0 keeps them relative).
func (a *SparseAssembler) Merge(dst []byte, op wire.Op, base uint32) ([]byte, error) {
	if !a.Complete() {
		return dst, fmt.Errorf("sparse stream: incomplete (%d packets of %d)", a.got, a.last+1)
	}
	slices.SortFunc(a.pieces, func(x, y sparsePiece) int { return cmp.Compare(x.seq, y.seq) })
	var res, spill []byte
	for _, p := range a.pieces {
		if p.spill {
			spill = append(spill, a.data[p.off:p.off+p.n]...)
		} else {
			res = append(res, a.data[p.off:p.off+p.n]...)
		}
	}
	start := len(dst)
	dst, err := MergeSparse(dst, a.DType, op, res, spill)
	if err != nil || base == 0 {
		return dst, err
	}
	ps := wire.PairSize(a.DType)
	for off := start; off < len(dst); off += ps {
		binary.LittleEndian.PutUint32(dst[off:], binary.LittleEndian.Uint32(dst[off:])+base)
	}
	return dst, nil
}
