package handlers

import (
	"sync/atomic"

	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/wire"
)

// sparseRecord is what the switch sent of one block's stream in one
// generation, kept so that a host that lost a spill or result packet gets
// the stream again: the dense design's KeepResults, for sparse jobs. It
// lives in the switch's ordinary memory, not in L1, like the dense result
// store, and holds two generations (the current and the previous one,
// indexed by generation parity), since a host may still be finishing the
// previous call when the others have moved on.
type sparseRecord struct {
	// lock is taken through the Task: the record is held across the
	// charged copies and the Emits of a replay, so in virtual time another
	// core that wants it must spin in cycles, not block the simulation.
	lock hpu.Lock
	gen  uint32
	pkts []byte  // the stream's packets, header and payload, back to back
	lens []int32 // each packet's length in pkts

	// A non-root switch's records: of its own stream, when it last went up
	// again (upAt, the packets' Arrival clock); of the parent's stream,
	// whether it holds one (started), the packets in (seen, got) and the
	// last one's number (last, -1 unknown).
	upAt    int64
	started bool
	seen    []uint64
	got     int
	last    int
	// unstored: a packet of this generation's stream was refused room
	// (SparseConfig.Reserve), so the record holds none of it.
	unstored bool
}

// record appends an emitted packet to its block's record.
func (s *Sparse) record(t *hpu.Task, h *wire.Header, payload []byte) {
	if !s.cfg.KeepResults {
		return
	}
	blk, _ := wire.SplitSparseBlock(h.Block)
	r := &s.records[h.Generation&1][blk]
	t.Lock(&r.lock)
	if len(r.lens) > 0 && r.gen > h.Generation {
		// A late packet of an older generation (a spill from a handler
		// still folding into an abandoned block) never replaces a newer
		// generation's record (generation.go).
		t.Unlock(&r.lock)
		return
	}
	if r.gen != h.Generation {
		r.gen, r.pkts, r.lens, r.upAt, r.unstored = h.Generation, r.pkts[:0], r.lens[:0], 0, false
	}
	s.keep(r, h, payload)
	t.Unlock(&r.lock)
}

// resend answers the first packet of a child's retransmitted stream for a
// block the switch has already flushed (in the packet's generation, the
// block's or the one before): the whole recorded stream goes again, to
// that child only, marked as a retransmission. The host drops what it
// already has. Only the stream's packet 0 asks, so a retransmitted stream
// of k packets costs one resend, not k.
func (s *Sparse) resend(t *hpu.Task) {
	h0 := &t.Pkt.Hdr
	if !s.cfg.KeepResults || h0.Flags&wire.FlagRetransmit == 0 {
		return
	}
	blk, seq := wire.SplitSparseBlock(h0.Block)
	if seq != 0 {
		return
	}
	gen := h0.Generation
	if s.cfg.Uplink != nil {
		s.resendTree(t, gen, blk)
		return
	}
	r := &s.records[gen&1][blk]
	t.Lock(&r.lock)
	if r.gen == gen && !r.unstored {
		s.replay(t, r, wire.FlagRetransmit, h0.Child, &s.Stats.Resent)
	}
	t.Unlock(&r.lock)
}

// replay emits every packet of record r again, with flags added and the
// child field set (a unicast to that child, or this switch's index at its
// parent), counting each in n. The caller holds r.lock.
func (s *Sparse) replay(t *hpu.Task, r *sparseRecord, flags wire.Flags, child uint16, n *atomic.Int64) {
	off := 0
	for _, l := range r.lens {
		var h wire.Header
		payload, err := h.Unmarshal(r.pkts[off : off+int(l)])
		off += int(l)
		if err != nil {
			continue // cannot happen: the record holds what AppendPacket wrote
		}
		h.Flags |= flags
		h.Child = child
		t.ChargeCopy(len(payload))
		t.Emit(&h, payload)
		n.Add(1)
	}
}

// keep appends one packet to record r, growing its storage only as far as
// SparseConfig.Reserve grants. When the growth is refused the record
// drops what it holds of the generation and stays empty until the next
// one (a partial stream is never replayed). The caller holds r.mu.
func (s *Sparse) keep(r *sparseRecord, h *wire.Header, payload []byte) {
	if r.unstored {
		return
	}
	size := wire.HeaderLen + len(payload)
	if len(r.pkts)+size > cap(r.pkts) || len(r.lens) == cap(r.lens) {
		if !s.growRecord(r, size) {
			r.pkts, r.lens, r.unstored = r.pkts[:0], r.lens[:0], true
			s.Stats.Unstored.Add(1)
			return
		}
	}
	n := len(r.pkts)
	r.pkts = wire.AppendPacket(r.pkts, h, payload)
	r.lens = append(r.lens, int32(len(r.pkts)-n))
}

// growRecord makes room in r for one more packet of size bytes, doubling
// as append would, after Reserve granted the added capacity.
func (s *Sparse) growRecord(r *sparseRecord, size int) bool {
	pk, ln := cap(r.pkts), cap(r.lens)
	if len(r.pkts)+size > pk {
		pk = max(2*pk, len(r.pkts)+size)
	}
	if len(r.lens) == ln {
		ln = max(2*ln, 4)
	}
	grow := int64(pk-cap(r.pkts)) + 4*int64(ln-cap(r.lens))
	if s.cfg.Reserve != nil && !s.cfg.Reserve(grow) {
		return false
	}
	if pk > cap(r.pkts) {
		r.pkts = append(make([]byte, 0, pk), r.pkts...)
	}
	if ln > cap(r.lens) {
		r.lens = append(make([]int32, 0, ln), r.lens...)
	}
	return true
}
