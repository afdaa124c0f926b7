package hostlib

import (
	"errors"
	"fmt"
	"math"
	"net/netip"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/proto"
	"github.com/flare-net/flare/wire"
)

// payloadKind is what a dense and a sparse session do differently on their
// one data path (admit, Session.run, results): how the join-ack shapes a
// block, how a block's packets are encoded, and which of the switch's
// packets carry results and how they are taken. Everything else (the
// staggered order, the window, the tracker, retransmission, the send batch)
// is the session's, for both.
type payloadKind interface {
	// shape checks the join-ack's packet and block fields for this kind and
	// returns the elements a block spans and the largest data datagram.
	shape(s *Session, a *wire.JoinAckBody) (blockElems, datagram int, err error)
	// admitted sets up the kind's state once the session is sized, and
	// returns how many datagrams its send batch holds.
	admitted(s *Session) (batch int)
	// begin runs at the start of every call.
	begin(s *Session)
	// queue encodes block b's data packets into the send batch.
	queue(s *Session, b uint32, flags wire.Flags) error
	// result takes a packet of the switch's result stream, and reports
	// false when h.Type is not one of this kind's.
	result(s *Session, h *wire.Header, payload []byte) bool
	// heldUp takes a CodeWaiting answer about this call's block h.Block.
	heldUp(s *Session, h *wire.Header)
}

// admit checks the switch's join-ack against the job and sizes the data
// path for it: the sending order, the window and the send batch.
func (s *Session) admit(a *wire.JoinAckBody) error {
	s.kind = payloadKind(denseKind{})
	if s.opts.Sparse {
		s.kind = &s.sp
	}
	if a.Window == 0 {
		return errors.New("the switch's join-ack grants a window of 0 blocks")
	}
	be, size, err := s.kind.shape(s, a)
	if err != nil {
		return err
	}
	s.window = int(min(a.Window, math.MaxInt32))
	s.algo, s.buffers, s.pe, s.blocks = a.Algo, int(a.Buffers), be, int(a.Blocks)
	s.limit = min(s.window, s.blocks)
	s.order = proto.StaggeredOrder(make([]uint32, 0, s.blocks), s.opts.Rank, s.opts.World, s.blocks, s.window)
	s.trk.init(s.blocks, s.limit)
	batch := s.kind.admitted(s)
	backing := make([]byte, batch*size)
	s.tx = make([]conn.Datagram, batch)
	for i := range s.tx {
		s.tx[i] = conn.Datagram{Buf: backing[i*size : (i+1)*size : (i+1)*size], Addr: s.sw}
	}
	return s.listenGroup(a.Group)
}

// listenGroup opens the job's multicast group, where the switch sends its
// results once for every member, when the join-ack names one (the switch
// grants one only to a job whose ranks all set Options.Multicast, and only
// while its pool lasts; without, results come to the unicast socket). Its
// datagrams go through the same checks as the unicast socket's: anyone on
// the segment may send to a group, and only the switch's are taken.
func (s *Session) listenGroup(g netip.AddrPort) error {
	switch {
	case !g.IsValid():
		return nil
	case !s.opts.Multicast:
		return fmt.Errorf("the switch's join-ack names multicast group %v, which this rank did not ask for", g)
	}
	local, err := conn.LocalAddrTo(s.sw)
	if err != nil {
		return fmt.Errorf("multicast group %v: the interface toward %v: %w", g, s.sw, err)
	}
	c, err := conn.ListenMulticast(g, local, s.opts.socket())
	if err != nil {
		return err
	}
	s.group, s.groupAddr = c, g
	s.startReader(newBatches(c))
	return nil
}

// queue encodes block b's data packets into the send batch, sending it
// whenever it is full.
func (s *Session) queue(b uint32, flags wire.Flags) error { return s.kind.queue(s, b, flags) }

// denseKind is a dense session's payload: a block is PacketElems elements
// of the vector, one packet, and its result overwrites them.
type denseKind struct{}

func (denseKind) shape(s *Session, a *wire.JoinAckBody) (int, int, error) {
	n, pe := s.opts.Elements, int(a.PacketElems)
	maxPE := (maxDatagram - wire.HeaderLen) / s.esize
	switch {
	case pe < 1 || pe > maxPE:
		return 0, 0, fmt.Errorf("the switch's join-ack asks for %d elements per packet, outside 1..%d", pe, maxPE)
	case int64(a.Blocks) != int64(blockCount(n, pe)):
		return 0, 0, fmt.Errorf("the switch's join-ack says %d blocks, but %d elements in packets of %d make %d",
			a.Blocks, n, pe, blockCount(n, pe))
	}
	return pe, wire.HeaderLen, nil // a packet's payload is sent from the vector (queue)
}

func (denseKind) admitted(s *Session) int {
	if s.opts.BlockDeadline > 0 {
		s.contrib = make([]uint16, s.blocks)
	}
	// Room for a window of sends and of retransmissions, in whole GSO
	// sends: a full batch of 64 packets of 1 KiB went to the switch as a
	// send of 62 and one of 2.
	return conn.WholeRuns(s.conn, min(s.conn.BatchSize(), s.limit+s.limit), wire.HeaderLen+s.pe*s.esize)
}

func (denseKind) begin(*Session) {}

func (denseKind) queue(s *Session, b uint32, flags wire.Flags) error {
	off, n := s.blockSpan(b)
	d := &s.tx[s.ntx]
	h := &s.hdr
	h.Block, h.Flags, h.Count = b, flags, uint32(n)
	_ = h.MarshalTo(d.Buf) // cannot fail: the buffer holds a header
	// The block goes out from the vector itself, gathered behind the
	// header by the send: the vector is in wire encoding, and no result
	// is written into it before the queued packets are sent (run flushes
	// them before it takes results).
	d.N, d.Tail = wire.HeaderLen, s.buf[off*s.esize:(off+n)*s.esize]
	s.ntx++
	if s.ntx == len(s.tx) {
		return s.flush()
	}
	return nil
}

func (denseKind) result(s *Session, h *wire.Header, payload []byte) bool {
	if h.Type != wire.TypeResult {
		return false
	}
	s.result(h, payload)
	return true
}

func (denseKind) heldUp(s *Session, h *wire.Header) { s.trk.heldUp(h.Block, s.rxAt) }
