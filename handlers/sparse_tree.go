package handlers

import (
	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/wire"
)

// Sparse jobs in a tree of switches. A non-root switch (SparseConfig.Uplink)
// aggregates its hosts' streams of a block as it would alone, and sends
// the stream it would have sent them (spills, then the sorted result) up
// to its parent instead: Sparse packets marked from-switch, numbered in
// one sequence, the last with FlagLast. The parent (SparseConfig.
// ChildStream) takes each child switch's stream like a host's, so its
// sequence bitmap keeps a re-sent stream from counting twice. The root's
// stream of the block comes down to every child switch, which records it
// and passes each new packet on to its own members: the hosts get the
// root's spills and result, exactly what one switch would have sent them.
//
// Loss is recovered, as for dense trees, by the hosts' retransmissions: a
// host that lacks a block's stream sends its own stream again, and its
// packet 0 (FlagRetransmit) reaches resendTree here.

// Down returns the handler of the packets the parent sends down, which
// the daemon submits for packets that came from the parent's address.
func (s *Sparse) Down() hpu.Handler { return sparseFromParent{s} }

type sparseFromParent struct{ s *Sparse }

var _ hpu.HeaderHandler = sparseFromParent{}

// Header checks a packet of the parent's stream: a Spill or Sparse packet
// of this job's shape, up to a full packet of pairs inside its block, a
// Spill never last.
func (d sparseFromParent) Header(t *hpu.Task) bool {
	s := d.s
	h := &t.Pkt.Hdr
	blk, _ := wire.SplitSparseBlock(h.Block)
	if s.cfg.Uplink == nil || (h.Type != wire.TypeSparse && h.Type != wire.TypeSpill) ||
		h.DType != s.cfg.DType || h.Op != s.cfg.Op || int(blk) >= s.nblocks ||
		int(h.Count) > s.cfg.PacketPairs || (h.Type == wire.TypeSpill && h.Flags&wire.FlagLast != 0) ||
		uint64(len(t.Pkt.Payload)) != uint64(h.Count)*uint64(s.psize) {
		s.Stats.Invalid.Add(1)
		return false
	}
	return s.checkIndices(t, blk)
}

// Payload records a new packet of the parent's stream and multicasts it to
// this switch's members, flags but last and the child field cleared. A
// packet already recorded (the parent answering another child's
// retransmission, or a duplicate) goes no further: a member that lost it
// asks this switch, which has the record.
func (d sparseFromParent) Payload(t *hpu.Task) {
	s := d.s
	p := t.Pkt
	blk, seq := wire.SplitSparseBlock(p.Hdr.Block)
	last := p.Hdr.Flags&wire.FlagLast != 0
	r := &s.downs[p.Hdr.Generation&1][blk]
	t.Lock(&r.lock)
	switch {
	case p.Hdr.Generation < r.gen:
		t.Unlock(&r.lock)
		s.Stats.Stale.Add(1)
		return
	case p.Hdr.Generation > r.gen || !r.started:
		r.gen, r.pkts, r.lens, r.started, r.unstored = p.Hdr.Generation, r.pkts[:0], r.lens[:0], true, false
		clear(r.seen)
		r.got, r.last = 0, -1
	}
	if w := int(seq / 64); w >= len(r.seen) {
		r.seen = append(r.seen, make([]uint64, w+1-len(r.seen))...)
	}
	bit := uint64(1) << (seq % 64)
	switch {
	case r.seen[seq/64]&bit != 0:
		t.Unlock(&r.lock)
		s.Stats.Duplicate.Add(1)
		return
	case r.last >= 0 && (last || int(seq) > r.last):
		t.Unlock(&r.lock)
		s.Stats.Invalid.Add(1)
		return
	}
	r.seen[seq/64] |= bit
	r.got++
	if last {
		r.last = int(seq)
	}
	h := p.Hdr
	h.Flags &= wire.FlagLast
	h.Child = 0
	s.keep(r, &h, p.Payload)
	t.Unlock(&r.lock)
	t.ChargeCopy(len(p.Payload))
	t.Emit(&h, p.Payload)
	s.Stats.Down.Add(1)
}

// complete reports whether record r holds the whole stream of gen. The
// caller holds r.lock.
func (r *sparseRecord) complete(gen uint32) bool {
	return r.started && r.gen == gen && !r.unstored && r.last >= 0 && r.got == r.last+1
}

// resendTree answers a host's retransmitted stream for a block this
// non-root switch has flushed (sent up): with the parent's stream, to
// that host, when it is all here; otherwise this switch's own stream goes
// up again (FlagRetransmit), at most once per UplinkResendGap per block
// however many hosts ask, and the host hears that the block waits for the
// parent.
func (s *Sparse) resendTree(t *hpu.Task, gen, blk uint32) {
	child := t.Pkt.Hdr.Child
	down := &s.downs[gen&1][blk]
	t.Lock(&down.lock)
	if down.complete(gen) {
		s.replay(t, down, wire.FlagRetransmit, child, &s.Stats.Resent)
		t.Unlock(&down.lock)
		return
	}
	t.Unlock(&down.lock)
	reportParentWaiting(t, s.cfg.Job, s.cfg.Token, s.cfg.DType, s.cfg.Op, blk)
	up := &s.records[gen&1][blk]
	t.Lock(&up.lock)
	now := t.Pkt.Arrival
	if up.gen == gen && !up.unstored && (up.upAt == 0 || now-up.upAt >= UplinkResendGap) {
		up.upAt = now
		s.replay(t, up, wire.FlagRetransmit, s.cfg.Uplink.Child, &s.Stats.ResentUp)
	}
	t.Unlock(&up.lock)
}
