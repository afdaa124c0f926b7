package hostlib

import (
	"fmt"
	"time"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/wire"
)

// A session trusts nothing it receives. Every datagram passes, in this
// order, before any field of it is used: it comes from the switch's
// address (Options.Switch as resolved), it decodes (wire.Header.Unmarshal,
// every length checked against the datagram), and it carries the job's id
// and token. Then its type's checks: a dense result is of this call's
// generation, a block of the vector, the job's dtype and op, as many
// elements as the block, with flags a result can have (retransmit, and
// partial only in a bounded-time job, with a contributor count in
// 1..World); a sparse packet likewise, with its pairs' indices inside the
// block and a stream its block's assembler accepts; an Error a known code
// about this call or the job. What fails is dropped and counted by reason
// (Stats.Dropped), never trusted, and never a panic.

// dropReason says why a session dropped a received datagram.
type dropReason int

// Drop reasons, one per field of Drops.
const (
	dropMalformed dropReason = iota
	dropSource
	dropJob
	dropToken
	dropType
	dropGeneration
	dropBlock
	dropFlags
	dropLength
	dropStream
	dropUnexpected
	numDropReasons
)

// Drops counts the datagrams a session received and dropped, by reason.
// Their sum is Stats.Ignored.
type Drops struct {
	Malformed  uint64 // failed the wire checks (short, unknown version, type or flags, a length that does not match, a bad body)
	Source     uint64 // not from the switch's address
	Job        uint64 // another job's id
	Token      uint64 // this job's id with another token
	Type       uint64 // a type, dtype or op this session does not take (data, joins, another dtype's results, ...)
	Generation uint64 // another call's (mostly an earlier call's straggler), or an early packet of the next call past the bound kept
	Block      uint64 // a block outside the vector
	Flags      uint64 // flags the packet cannot have here (partial in an exact job, from-switch, last on a spill, ...)
	Length     uint64 // a count that does not fit the block, or a pair index outside it
	Stream     uint64 // sparse: a packet that contradicts its block's stream (a second last packet, one after the last)
	Unexpected uint64 // well-formed and this job's, but not expected now: a repeated join-ack, an error about a join
}

// drop counts one dropped datagram under r.
func (s *Session) drop(r dropReason) {
	s.stats.drops[r].Add(1)
	s.stats.ignored.Add(1)
}

// dropped returns the drop counters.
func (c *counters) dropped() Drops {
	d := func(r dropReason) uint64 { return c.drops[r].Load() }
	return Drops{
		Malformed: d(dropMalformed), Source: d(dropSource), Job: d(dropJob), Token: d(dropToken), Type: d(dropType),
		Generation: d(dropGeneration), Block: d(dropBlock), Flags: d(dropFlags), Length: d(dropLength),
		Stream: d(dropStream), Unexpected: d(dropUnexpected),
	}
}

// receive applies the checks every datagram passes before its fields are
// used: the switch's source address, the wire format, the job and the
// token. It decodes into h and returns the payload, or counts the drop
// and reports false.
func (s *Session) receive(d *conn.Datagram, h *wire.Header) ([]byte, bool) {
	var r dropReason
	switch {
	case d.Addr != s.sw:
		r = dropSource
	case d.N < 0 || d.N > len(d.Buf):
		r = dropMalformed
	default:
		payload, err := h.Unmarshal(d.Buf[:d.N])
		switch {
		case err != nil:
			r = dropMalformed
		case h.Job != s.opts.Job:
			r = dropJob
		case h.Token != s.opts.Token:
			r = dropToken
		default:
			return payload, true
		}
	}
	s.drop(r)
	return nil, false
}

// results processes a received batch: results of this call fill their
// blocks, an Error that ends the job ends the call, anything else is
// counted and dropped.
func (s *Session) results(b *rxBatch) error {
	h := &s.rxHdr // not a local: one passed to the payload kind would escape, an allocation per packet
	// One clock read a batch, not one a packet: they came in one receive,
	// and the read was 2% of a call's CPU with ranks in one process.
	s.rxAt = time.Since(s.start)
	for i := range b.Msgs[:b.n] {
		*h = wire.Header{}
		payload, ok := s.receive(&b.Msgs[i], h)
		switch {
		case !ok:
		case s.kind.result(s, h, payload):
		case h.Type == wire.TypeError:
			if err := s.failure(h, payload); err != nil {
				return err
			}
		case h.Type == wire.TypeJoinAck:
			s.drop(dropUnexpected) // a repeated ack: the join resent before the first arrived
		default:
			s.drop(dropType)
		}
	}
	return nil
}

// resultFlags are the flags a dense result to a host may carry.
const resultFlags = wire.FlagRetransmit | wire.FlagPartial

// checkResult is why a dense result cannot be taken, or -1.
func (s *Session) checkResult(h *wire.Header) dropReason {
	switch {
	case h.Generation != s.gen:
		return dropGeneration // an earlier call's straggler
	case int64(h.Block) >= int64(s.blocks):
		return dropBlock
	case h.DType != s.opts.DType || h.Op != s.opts.Op:
		return dropType
	case h.Flags&^resultFlags != 0:
		return dropFlags
	case h.Flags&wire.FlagPartial != 0 && (s.contrib == nil || h.Child == 0 || int(h.Child) > s.opts.World):
		// Only a bounded-time job's blocks are released partial, with
		// their contributor count in Child.
		return dropFlags
	}
	if _, n := s.blockSpan(h.Block); int(h.Count) != n {
		return dropLength
	}
	return -1
}

// result copies a result into its block of the call's vector, once.
func (s *Session) result(h *wire.Header, payload []byte) {
	if r := s.checkResult(h); r >= 0 {
		s.drop(r)
		return
	}
	b := h.Block
	if s.trk.isDone(b) {
		s.stats.duplicates.Add(1)
		return
	}
	off, _ := s.blockSpan(b)
	copy(s.buf[off*s.esize:], payload)
	s.trk.complete(b, s.rxAt)
	if h.Flags&wire.FlagPartial != 0 {
		s.contrib[b] = h.Child
		s.stats.partial.Add(1)
	}
}

// sparseFlags are the flags of the switch's stream packets to a host.
const sparseFlags = wire.FlagRetransmit | wire.FlagLast

// checkSparse is why a packet of the switch's stream cannot be taken
// (whatever its generation), or -1: the flags, the dtype and op, the
// block, the count and every pair's index inside the block.
func (s *Session) checkSparse(h *wire.Header, payload []byte) dropReason {
	b, _ := wire.SplitSparseBlock(h.Block)
	switch {
	case h.Flags&^sparseFlags != 0 || (h.Type == wire.TypeSpill && h.Flags&wire.FlagLast != 0):
		return dropFlags
	case h.DType != s.opts.DType || h.Op != s.opts.Op:
		return dropType
	case int64(b) >= int64(s.blocks):
		return dropBlock
	case int64(h.Count) > int64(s.sp.packer.PacketPairs):
		return dropLength
	}
	p, err := wire.ParsePairs(payload, h.DType, h.Count)
	if err != nil {
		return dropLength
	}
	_, n := s.blockSpan(b)
	for i := range p.Len() {
		if int64(p.Index(i)) >= int64(n) {
			return dropLength
		}
	}
	return -1
}

// failure turns an Error packet for this job into the call's error when it
// says the job is gone: a member aborted it (about any call: the job is
// over), it timed out on the switch, the switch no longer knows it (it
// restarted), or the switch failed. The switch's waiting notes are kept
// for a timeout's report. Errors about joins (a late answer to a repeated
// join) and about other calls are dropped and counted.
func (s *Session) failure(h *wire.Header, payload []byte) error {
	var e wire.ErrorBody
	if e.Unmarshal(payload) != nil {
		s.drop(dropMalformed)
		return nil
	}
	if e.Code == wire.CodeAborted {
		s.aborted = &AbortedError{Job: s.opts.Job, Generation: s.gen, Rank: int(h.Child), Reason: e.Message()}
		return s.aborted
	}
	if h.Generation != 0 && h.Generation != s.gen {
		s.drop(dropGeneration)
		return nil
	}
	switch e.Code {
	case wire.CodeWaiting:
		if h.Generation == s.gen {
			s.noteWaiting(e.Text)
			s.kind.heldUp(s, h)
			return nil
		}
	case wire.CodeTimeout, wire.CodeUnknownJob, wire.CodeInternal:
		return fmt.Errorf("hostlib: allreduce generation %d: %w", s.gen, &SwitchError{Code: e.Code, Message: e.Message()})
	}
	s.drop(dropUnexpected)
	return nil
}
