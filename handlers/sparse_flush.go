package handlers

import (
	"encoding/binary"
	"math/bits"
	"slices"

	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/wire"
)

// flush sends a finished block to the hosts and returns its memory. The
// switch's stream of the block is, in sequence order: the Spill packets
// sent while it aggregated, the spill buffer's remainder (if any), and the
// result, Sparse packets of PacketPairs pairs sorted by index, always
// ending with a packet marked FlagLast, an empty one when the entries
// filled the previous packet exactly. w is no longer reachable from the
// block, so nothing else touches it.
func (s *Sparse) flush(t *hpu.Task, w *sparseWork, gen, blk uint32) {
	if w.nspill > 0 {
		s.emitSpill(t, w, gen, blk)
	}
	o := sparseOut{s: s, t: t, w: w, gen: gen, blk: blk}
	if s.hash {
		s.flushHash(&o)
	} else {
		s.flushArray(&o)
	}
	o.close()
	s.Stats.Completed.Add(w.shard, 1)
	s.Stats.LatencyNs.Add(w.shard, t.Started()-w.gs.start)
	s.releaseWork(w)
}

// flushHash gathers the occupied slots of the B tables, sorts them by index
// (ties by table, so folding is in table order) and emits one pair per
// index, the values of the tables that hold it folded together.
func (s *Sparse) flushHash(o *sparseOut) {
	w, t := o.w, o.t
	keys := w.keys[:0]
	for j := range s.cfg.Buffers {
		for wi, m := range w.occ[j*s.occWords : (j+1)*s.occWords] {
			for ; m != 0; m &= m - 1 {
				k := wi*64 + bits.TrailingZeros64(m)
				idx := binary.LittleEndian.Uint32(s.cell(w, j, k))
				keys = append(keys, uint64(idx)<<32|uint64(j*s.cells+k))
			}
		}
	}
	slices.Sort(keys)
	t.Charge(int64(len(keys)) * (sparseProbeCycles + sparseSortCycles*int64(bits.Len(uint(len(keys))))))
	for i := 0; i < len(keys); {
		idx := uint32(keys[i] >> 32)
		v := o.next(idx)
		g := int(uint32(keys[i]))
		copy(v, s.cell(w, g/s.cells, g%s.cells)[wire.IndexLen:])
		for i++; i < len(keys) && uint32(keys[i]>>32) == idx; i++ {
			g := int(uint32(keys[i]))
			s.kernel(v, s.cell(w, g/s.cells, g%s.cells)[wire.IndexLen:])
			t.ChargeAggregate(s.cfg.DType, 1)
		}
		o.commit()
	}
	w.keys = keys[:0]
}

// flushArray walks the union of the B occupancy bitmaps in index order:
// the output is sorted without a sort, and only touched indices are sent.
func (s *Sparse) flushArray(o *sparseOut) {
	w, t := o.w, o.t
	nb := s.cfg.Buffers
	for wi := range s.occWords {
		var m uint64
		for j := range nb {
			m |= w.occ[j*s.occWords+wi]
		}
		t.Charge(int64(nb))
		for ; m != 0; m &= m - 1 {
			b := bits.TrailingZeros64(m)
			k := wi*64 + b
			v := o.next(uint32(k))
			first := true
			for j := range nb {
				if w.occ[j*s.occWords+wi]&(1<<b) == 0 {
					continue
				}
				if first {
					copy(v, s.cell(w, j, k))
					first = false
				} else {
					s.kernel(v, s.cell(w, j, k))
					t.ChargeAggregate(s.cfg.DType, 1)
				}
			}
			o.commit()
		}
	}
}

// sparseOut stages result pairs in the block's packet buffer and emits a
// Sparse packet whenever it is full.
type sparseOut struct {
	s   *Sparse
	t   *hpu.Task
	w   *sparseWork
	gen uint32
	blk uint32
	n   int // pairs staged
}

// next writes idx as the next staged pair's index and returns its value
// bytes for the caller to fill; commit makes the pair count.
func (o *sparseOut) next(idx uint32) []byte {
	ps := o.s.psize
	pair := o.w.out.Data[o.n*ps : (o.n+1)*ps : (o.n+1)*ps]
	binary.LittleEndian.PutUint32(pair, idx)
	return pair[wire.IndexLen:]
}

func (o *sparseOut) commit() {
	if o.n++; o.n == o.s.cfg.PacketPairs {
		o.send(0)
	}
}

// close sends the last packet, FlagLast, with whatever is staged: none
// when the pairs filled the previous packet exactly.
func (o *sparseOut) close() { o.send(wire.FlagLast) }

func (o *sparseOut) send(flags wire.Flags) {
	o.s.emit(o.t, o.w, wire.TypeSparse, flags, o.gen, o.blk, o.w.out.Data[:o.n*o.s.psize])
	o.s.Stats.ResultPackets.Add(1)
	o.n = 0
}
