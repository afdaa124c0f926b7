package handlers

import (
	"encoding/binary"

	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/wire"
)

// A block's tables live in its L1 buffers: table j is buffers
// [j·tableBufs, (j+1)·tableBufs), cut into cells of cellSize bytes (cells
// never straddle a buffer). A hash cell is a wire pair, index then value,
// so the flush copies it out as it is; an array cell is the value of the
// index that addresses it. Whether a cell holds anything is recorded in the
// table's occupancy bitmap, never read from the cell: a zero is a value.

// cell returns cell k of table j. Buffers usually hold a power of two of
// cells (1 KiB of 8-byte pairs or 4-byte values); then no division is
// needed, which matters on the probe path.
func (s *Sparse) cell(w *sparseWork, j, k int) []byte {
	var b, off int
	if s.perShift >= 0 {
		b, off = k>>s.perShift, k&(s.perBuf-1)
	} else {
		b, off = k/s.perBuf, k%s.perBuf
	}
	off *= s.cellSize
	return w.bufs[j*s.tableBufs+b].Data[off : off+s.cellSize : off+s.cellSize]
}

// occupied reports whether cell k of table j holds a value.
func (s *Sparse) occupied(w *sparseWork, j, k int) bool {
	return w.occ[j*s.occWords+k/64]&(1<<(k%64)) != 0
}

func (s *Sparse) occupy(w *sparseWork, j, k int) {
	w.occ[j*s.occWords+k/64] |= 1 << (k % 64)
}

// fold aggregates the pairs of a validated payload into table j. multi
// says that other handlers fold into the block's other tables at the same
// time, so spills take the spill lock; otherwise the caller holds the
// block's lock, which covers the spill buffer too.
func (s *Sparse) fold(t *hpu.Task, w *sparseWork, j int, payload []byte, multi bool) {
	ps := s.psize
	for off := 0; off+ps <= len(payload); off += ps {
		pair := payload[off : off+ps : off+ps]
		idx := binary.LittleEndian.Uint32(pair)
		val := pair[wire.IndexLen:]
		if !s.hash {
			s.arrayFold(t, w, j, int(idx), val)
			continue
		}
		if !s.hashFold(t, w, j, idx, val) {
			s.spill(t, w, pair, multi)
		}
	}
}

// arrayFold folds val into the cell of index idx: the first value of an
// index is copied, later ones combined.
func (s *Sparse) arrayFold(t *hpu.Task, w *sparseWork, j, idx int, val []byte) {
	c := s.cell(w, j, idx)
	if s.occupied(w, j, idx) {
		s.kernel(c, val)
	} else {
		copy(c, val)
		s.occupy(w, j, idx)
	}
	t.Charge(sparseProbeCycles)
	t.ChargeAggregate(s.cfg.DType, 1)
}

// hashFold looks for idx in the probe window of its home slot: it combines
// val into the slot holding idx, or claims the first free slot. It reports
// false when the window is full of other indices: the pair spills.
func (s *Sparse) hashFold(t *hpu.Task, w *sparseWork, j int, idx uint32, val []byte) bool {
	k := hashHome(idx, s.cells)
	for p := 0; p < s.probe; p++ {
		t.Charge(sparseProbeCycles)
		c := s.cell(w, j, k)
		if !s.occupied(w, j, k) {
			binary.LittleEndian.PutUint32(c, idx)
			copy(c[wire.IndexLen:], val)
			s.occupy(w, j, k)
			t.ChargeAggregate(s.cfg.DType, 1)
			return true
		}
		if binary.LittleEndian.Uint32(c) == idx {
			s.kernel(c[wire.IndexLen:], val)
			t.ChargeAggregate(s.cfg.DType, 1)
			return true
		}
		if k++; k == s.cells {
			k = 0
		}
	}
	return false
}

// hashHome maps an index to its home slot: Fibonacci hashing (the index
// times 2^32/φ) spreads runs of neighbouring indices, which top-k
// gradients are full of, and the multiply-shift maps the hash onto any
// table size without a division.
func hashHome(idx uint32, slots int) int {
	return int(uint64(idx*0x9e3779b1) * uint64(slots) >> 32)
}

// spill appends a pair that found no slot to the block's spill buffer and
// sends the buffer to the hosts, a Spill packet with the full header,
// whenever it holds a packet's worth. The switch does not aggregate
// spilled pairs; the hosts merge them with the result (MergeSparse).
func (s *Sparse) spill(t *hpu.Task, w *sparseWork, pair []byte, multi bool) {
	if multi {
		t.Lock(&w.spillLock)
	}
	ps := s.psize
	copy(w.out.Data[w.nspill*ps:], pair)
	w.nspill++
	t.ChargeCopy(ps)
	s.Stats.Spilled.Add(1)
	if w.nspill == s.cfg.PacketPairs {
		h := &t.Pkt.Hdr
		blk, _ := wire.SplitSparseBlock(h.Block)
		s.emitSpill(t, w, h.Generation, blk)
	}
	if multi {
		t.Unlock(&w.spillLock)
	}
}

// emitSpill sends the spill buffer's pairs as the next packet of the
// block's stream and empties the buffer. Emit copies, so the buffer is
// free again when it returns.
func (s *Sparse) emitSpill(t *hpu.Task, w *sparseWork, gen, blk uint32) {
	s.emit(t, w, wire.TypeSpill, 0, gen, blk, w.out.Data[:w.nspill*s.psize])
	w.nspill = 0
	s.Stats.SpillPackets.Add(1)
}

// emit sends one packet of the switch's stream of block blk to the hosts
// (or, in a non-root switch, up to the parent), numbered with the stream's next sequence number. The caller holds
// whatever guards dseq (the block's lock, the spill lock, or sole
// ownership at flush).
func (s *Sparse) emit(t *hpu.Task, w *sparseWork, typ wire.Type, flags wire.Flags, gen, blk uint32, payload []byte) {
	h := wire.Header{
		Version: wire.Version, Type: typ, Flags: flags, Job: s.cfg.Job, Token: s.cfg.Token,
		Generation: gen, Block: wire.SparseBlockField(blk, w.dseq),
		DType: s.cfg.DType, Op: s.cfg.Op, Count: uint32(len(payload) / s.psize),
	}
	if s.cfg.Uplink != nil {
		// Up to the parent: spills and result alike are this switch's
		// contribution there.
		h.Type, h.Flags, h.Child = wire.TypeSparse, h.Flags|wire.FlagFromSwitch, s.cfg.Uplink.Child
	}
	w.dseq++
	t.ChargeCopy(len(payload))
	s.record(t, &h, payload)
	t.Emit(&h, payload)
}
