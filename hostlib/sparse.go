package hostlib

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/flare-net/flare/proto"
	"github.com/flare-net/flare/wire"
)

// sparseCall is a sparse session's state: fixed at admission (the packer)
// and per call (each block's pairs and the switch's stream for it).
type sparseCall struct {
	packer proto.SparsePacker
	pairs  []byte   // this call's pairs, global indices, sorted
	blocks [][]byte // sub-slices of pairs, by block
	asm    []proto.SparseAssembler
	// Packets of the next generation that arrived during this call: other
	// hosts may start it (and the switch spill their pairs) while this one
	// still waits for its last results. Replayed when that call starts.
	next [][]byte
}

// shape checks a sparse join-ack: PacketElems is the pairs per packet,
// Blocks the block count, and the block's index range is ceil(Elements /
// Blocks), which the switch makes exact.
func (sp *sparseCall) shape(s *Session, a *wire.JoinAckBody) (int, int, error) {
	n, pairs, blocks := s.opts.Elements, int(a.PacketElems), int(a.Blocks)
	ps := wire.PairSize(s.opts.DType)
	switch {
	case pairs < 1 || wire.HeaderLen+pairs*ps > maxDatagram:
		return 0, 0, fmt.Errorf("the switch's join-ack asks for %d pairs per packet, outside 1..%d", pairs, (maxDatagram-wire.HeaderLen)/ps)
	case blocks < 1 || blocks > wire.MaxSparseBlocks || blocks > n:
		return 0, 0, fmt.Errorf("the switch's join-ack says %d blocks for %d elements, outside 1..%d", blocks, n, min(n, wire.MaxSparseBlocks))
	}
	be := blockCount(n, blocks)
	if blockCount(n, be) != blocks {
		return 0, 0, fmt.Errorf("the switch's join-ack says %d blocks, but %d elements in blocks of %d make %d", blocks, n, be, blockCount(n, be))
	}
	sp.packer = proto.SparsePacker{DType: s.opts.DType, BlockElems: be, PacketPairs: pairs}
	return be, wire.HeaderLen + pairs*ps, nil
}

// admitted sizes the per-block state. A block's stream is many packets, so
// the send batch is the socket's whole batch.
func (sp *sparseCall) admitted(s *Session) int {
	s.trk.floor = rtoSparse
	sp.blocks = make([][]byte, s.blocks)
	sp.asm = make([]proto.SparseAssembler, s.blocks)
	for i := range sp.asm {
		sp.asm[i].DType = s.opts.DType
	}
	return s.conn.BatchSize()
}

// heldUp: a sparse waiting note goes only into a timeout's report
// (noteWaiting); the tracker is not told.
func (sp *sparseCall) heldUp(*Session, *wire.Header) {}

func (sp *sparseCall) result(s *Session, h *wire.Header, payload []byte) bool {
	if h.Type != wire.TypeSparse && h.Type != wire.TypeSpill {
		return false
	}
	s.sparseResult(h, payload)
	return true
}

// SparseAllReduce reduces a sparse vector across every rank of a sparse job
// (Options.Sparse) and returns the result as (index, value) pairs sorted by
// index: for each index present on any rank, the job's op (fixed at Join,
// as for AllReduce) over the values of the ranks that have it. idx must be
// strictly increasing and below the job's Elements, with val holding the
// value of each index; T must be the Go type of the job's dtype. Bad input
// is reported before anything is sent.
//
// The pairs travel block by block (fixed index ranges of BlockElems), each
// block as a stream of packets, in this rank's staggered order with at
// most Window() blocks in flight. The switch aggregates what its table
// holds and sends back the rest unaggregated (hash storage spills); the
// host merges both, in an order that depends on the pairs alone, so every
// rank gets the same bits. Errors are AllReduce's: *TimeoutError with the
// blocks missing, *SwitchError, ErrClosed.
func SparseAllReduce[T Element](ctx context.Context, s *Session, idx []uint32, val []T) ([]uint32, []T, error) {
	if err := checkElement[T](s.opts.DType); err != nil {
		return nil, nil, err
	}
	if len(idx) != len(val) {
		return nil, nil, fmt.Errorf("hostlib: sparse allreduce: %d indices but %d values", len(idx), len(val))
	}
	es := s.esize
	vb := make([]byte, len(val)*es)
	encodeLE(vb, val)
	pairs, err := wire.AppendPairs(nil, s.opts.DType, idx, vb)
	if err != nil {
		return nil, nil, fmt.Errorf("hostlib: sparse allreduce: %w", err)
	}
	merged, err := s.SparseAllReduceBytes(ctx, pairs)
	if err != nil {
		return nil, nil, err
	}
	ps := wire.PairSize(s.opts.DType)
	n := len(merged) / ps
	outIdx, outVal := make([]uint32, n), make([]T, n)
	outBytes := make([]byte, n*es)
	for i := range n {
		p := merged[i*ps:]
		outIdx[i] = binary.LittleEndian.Uint32(p)
		copy(outBytes[i*es:], p[wire.IndexLen:ps])
	}
	decodeLE(outVal, outBytes)
	return outIdx, outVal, nil
}

// SparseAllReduceBytes is SparseAllReduce on the wire encoding: pairs are
// (uint32 index, value of the job's dtype), little-endian, sorted by
// strictly increasing index; the result is in the same form, in a new
// slice.
func (s *Session) SparseAllReduceBytes(ctx context.Context, pairs []byte) ([]byte, error) {
	if !s.opts.Sparse {
		return nil, errors.New("hostlib: sparse allreduce: the session joined a dense job: use AllReduce, or Join with Sparse")
	}
	p, err := wire.PairsOf(pairs, s.opts.DType)
	if err != nil {
		return nil, fmt.Errorf("hostlib: sparse allreduce: %d bytes are not whole %v pairs", len(pairs), s.opts.DType)
	}
	for i := range p.Len() {
		x := p.Index(i)
		switch {
		case int64(x) >= int64(s.opts.Elements):
			return nil, fmt.Errorf("hostlib: sparse allreduce: index %d at position %d is outside the vector of %d elements", x, i, s.opts.Elements)
		case i > 0 && x <= p.Index(i-1):
			return nil, fmt.Errorf("hostlib: sparse allreduce: index %d at position %d follows %d: indices must be strictly increasing (sort them, and combine duplicates first)", x, i, p.Index(i-1))
		}
	}
	s.callMu.Lock()
	defer s.callMu.Unlock()
	sp := &s.sp
	sp.pairs = append(sp.pairs[:0], pairs...)
	for b := range sp.blocks {
		sp.blocks[b] = sp.packer.BlockPairs(sp.pairs, b)
		sp.asm[b].Reset()
	}
	if err := s.call(ctx, nil); err != nil {
		return nil, err
	}
	var out []byte
	for b := range sp.asm {
		if out, err = sp.asm[b].Merge(out, s.opts.Op, uint32(b*s.pe)); err != nil {
			return nil, fmt.Errorf("hostlib: sparse allreduce generation %d, block %d: %w", s.gen, b, err)
		}
	}
	return out, nil
}

// queue queues every packet of block b's stream.
func (sp *sparseCall) queue(s *Session, b uint32, flags wire.Flags) error {
	bp := sp.blocks[b]
	h := &s.hdr
	for seq := range sp.packer.Packets(len(bp) / wire.PairSize(s.opts.DType)) {
		d := &s.tx[s.ntx]
		h.Flags = flags
		payload := sp.packer.Packet(d.Buf[wire.HeaderLen:wire.HeaderLen], h, b, bp, seq)
		_ = h.MarshalTo(d.Buf) // cannot fail: the buffer holds a header and a packet
		d.N = wire.HeaderLen + len(payload)
		s.ntx++
		if s.ntx == len(s.tx) {
			if err := s.flush(); err != nil {
				return err
			}
		}
	}
	h.Type, h.Flags = wire.TypeData, 0
	return nil
}

// sparseResult takes one packet of the switch's stream for a block: a
// spill or part of the result. The block is done when its stream is whole.
func (s *Session) sparseResult(h *wire.Header, payload []byte) {
	sp := &s.sp
	b, _ := wire.SplitSparseBlock(h.Block)
	if r := s.checkSparse(h, payload); r >= 0 {
		s.drop(r)
		return
	}
	switch {
	case h.Generation == s.gen+1 && len(sp.next) < maxEarlyPackets:
		pkt := make([]byte, 0, wire.HeaderLen+len(payload))
		sp.next = append(sp.next, wire.AppendPacket(pkt, h, payload))
		return
	case h.Generation != s.gen:
		s.drop(dropGeneration)
		return
	}
	if s.trk.isDone(b) {
		s.stats.duplicates.Add(1)
		return
	}
	complete, err := sp.asm[b].Add(h, payload)
	if err != nil {
		s.drop(dropStream)
		return
	}
	if h.Type == wire.TypeSpill {
		s.stats.spilledPairs.Add(uint64(h.Count))
	}
	if complete {
		s.trk.complete(b, s.rxAt)
	}
}

// maxEarlyPackets bounds what a call keeps of the next generation.
const maxEarlyPackets = 1 << 16

// begin feeds the packets of this generation that arrived during the
// previous call.
func (sp *sparseCall) begin(s *Session) {
	early := sp.next
	sp.next = nil
	for _, pkt := range early {
		var h wire.Header
		if payload, err := h.Unmarshal(pkt); err == nil {
			s.sparseResult(&h, payload)
		}
	}
}
