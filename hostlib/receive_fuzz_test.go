package hostlib

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/flare-net/flare/wire"
)

// receiveSeeds are packets as the switch sends them to the offline
// sessions (a dense result, a partial one, a resent one, a sparse result
// stream and a spill, the switch's errors) and a few it must not take.
func receiveSeeds() [][]byte {
	pkt := func(h wire.Header, payload []byte) []byte { return wire.AppendPacket(nil, &h, payload) }
	with := func(h wire.Header, f func(*wire.Header)) wire.Header { f(&h); return h }
	block := make([]byte, 8*4)
	errPkt := func(gen uint32, child uint16, code wire.ErrorCode, text string) []byte {
		return wire.AppendError(nil, &wire.Header{Job: 7, Token: 0x0123456789abcdef, Generation: gen, Child: child}, code, text)
	}
	return [][]byte{
		pkt(resultHeader(0, 8), block),
		pkt(resultHeader(4, 5), block[:5*4]),
		pkt(with(resultHeader(1, 8), func(h *wire.Header) { h.Flags, h.Child = wire.FlagPartial, 3 }), block),
		pkt(with(resultHeader(2, 8), func(h *wire.Header) { h.Flags, h.Child = wire.FlagRetransmit, 1 }), block),
		pkt(sparseHeader(wire.TypeSpill, 1, 0, 0, 2), pairsOf(4, 7)),
		pkt(sparseHeader(wire.TypeSparse, 1, 1, wire.FlagLast, 2), pairsOf(4, 19)),
		pkt(with(sparseHeader(wire.TypeSparse, 0, 0, wire.FlagLast, 0), func(h *wire.Header) { h.Generation = 2 }), nil),
		errPkt(1, 0, wire.CodeWaiting, "block 0 of allreduce 1 waits for rank 2: nothing from them yet"),
		errPkt(0, 2, wire.CodeAborted, "rank 2: allreduce generation 1 cancelled"),
		errPkt(1, 0, wire.CodeUnknownJob, "no such job here"),
		wire.AppendJoinAck(nil, &wire.Header{Job: 7, Token: 0x0123456789abcdef, Child: 1, DType: wire.Float32, Op: wire.OpSum},
			&wire.JoinAckBody{Window: 4, Algo: wire.AlgoSingle, PacketElems: 8, Blocks: 5, QuotaBuffers: 8}),
		pkt(with(resultHeader(0, 8), func(h *wire.Header) { h.Flags, h.Child = wire.FlagPartial, 0 }), block),
	}
}

// FuzzReceive feeds arbitrary datagrams, from the switch's address or
// another, to the receive path of a session in a call: dense exact, dense
// bounded-time, and sparse. Nothing may panic; every datagram is either
// taken or counted once under a drop reason; and a dense result is taken
// exactly when it is from the switch, of this job and call, a block of the
// vector with its length, the job's dtype and op, and flags a result may
// carry in that session.
func FuzzReceive(f *testing.F) {
	for _, p := range receiveSeeds() {
		for kind := range uint8(3) {
			f.Add(kind, true, p)
		}
	}
	f.Add(uint8(0), false, receiveSeeds()[0])
	stranger := netip.MustParseAddrPort("10.0.0.9:7470")
	f.Fuzz(func(t *testing.T, kind uint8, fromSwitch bool, data []byte) {
		// A fresh session for every input, so that an input's coverage
		// does not depend on the inputs before it.
		var s *Session
		switch kind % 3 {
		case 0:
			s = offlineDense(t, false)
		case 1:
			s = offlineDense(t, true)
		default:
			s = offlineSparse(t)
		}
		from := stranger
		if fromSwitch {
			from = offlineSwitch
		}
		before := s.Stats()
		err := s.deliver(data, from)
		after := s.Stats()
		var ae *AbortedError
		var se *SwitchError
		if err != nil && !errors.As(err, &ae) && !errors.As(err, &se) {
			t.Fatalf("results: unexpected error %v", err)
		}
		var sum uint64
		for _, n := range dropCounts(after.Dropped) {
			sum += n
		}
		if sum != after.Ignored {
			t.Fatalf("drops %+v add up to %d, Ignored is %d", after.Dropped, sum, after.Ignored)
		}
		taken := s.trk.completed
		if taken > s.blocks || taken > 1 {
			t.Fatalf("one datagram completed %d blocks", taken)
		}
		if s.opts.Sparse {
			return
		}
		want := validResult(s, data, fromSwitch)
		if dropped := after.Ignored - before.Ignored; (taken == 1) != want || (want && dropped != 0) {
			t.Fatalf("result taken %v, dropped %d; a valid one is %v", taken == 1, dropped, want)
		}
	})
}

// dropCounts lists d's counters.
func dropCounts(d Drops) []uint64 {
	return []uint64{d.Malformed, d.Source, d.Job, d.Token, d.Type, d.Generation, d.Block, d.Flags, d.Length, d.Stream, d.Unexpected}
}

// validResult is the reference rule for a dense result in call 1 of an
// offline session, written apart from the session's code.
func validResult(s *Session, data []byte, fromSwitch bool) bool {
	var h wire.Header
	payload, err := h.Unmarshal(data)
	if err != nil || !fromSwitch || h.Type != wire.TypeResult || h.Job != 7 || h.Token != 0x0123456789abcdef || h.Generation != 1 {
		return false
	}
	if h.DType != wire.Float32 || h.Op != wire.OpSum || h.Block >= 5 {
		return false
	}
	n := 8
	if h.Block == 4 {
		n = 37 - 4*8
	}
	if len(payload) != n*4 {
		return false
	}
	partial := h.Flags&wire.FlagPartial != 0
	switch {
	case h.Flags&^(wire.FlagRetransmit|wire.FlagPartial) != 0:
		return false
	case partial && (s.opts.BlockDeadline == 0 || h.Child < 1 || h.Child > 4):
		return false
	}
	return true
}
