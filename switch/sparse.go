package swtch

import (
	"slices"

	"github.com/flare-net/flare/handlers"
	"github.com/flare-net/flare/wire"
)

// sparseBlockElems is the index range of a sparse job's blocks: the hosts'
// request (0: DefaultSparseBlockElems), at least what keeps the job within
// 65,536 blocks and at most the vector, then evened out so that the range
// a host computes from the block count, ceil(elements / blocks), is it.
// Applied to its own result it gives the same.
func sparseBlockElems(elements, requested int) int {
	be := requested
	if be == 0 {
		be = DefaultSparseBlockElems
	}
	be = min(max(be, (elements+wire.MaxSparseBlocks-1)/wire.MaxSparseBlocks), elements)
	nblocks := (elements + be - 1) / be
	return (elements + nblocks - 1) / nblocks
}

// Defaults of a sparse job's shape, when the hosts leave it to the switch.
const (
	// DefaultSparseBlockElems is the index range of one sparse block: at 1%
	// density a host sends about 41 pairs per block, a third of a 1 KiB
	// float32 packet.
	DefaultSparseBlockElems = 4096
	// sparseHashPackets sizes a hash table in packets' worth of pairs: 4 ×
	// 128 float32 pairs = 512 slots, which holds the union of 8 hosts at
	// about 1% density and spills more and more above it, as in the paper.
	sparseHashPackets = 4
)

// planSparse sizes a sparse job: blocks of BlockElems indices (the hosts'
// request in the join's BlockElems, or DefaultSparseBlockElems, at most
// 65,536 blocks), pairs per packet from the switch's packet size, a hash
// table of a few packets' worth of pairs, and a quota of 2W blocks as for
// dense jobs. The ack carries pairs per packet in PacketElems and the block
// count in Blocks; a host finds the block's range as
// ceil(Elements / Blocks), which the switch makes exact. The streams the
// job stores grow with its data and reserve their memory from the budget
// as they grow (SparseConfig.Reserve).
func (s *Switch) planSparse(j *job) (*plan, *joinError) {
	elements := int(j.spec.Elements)
	be := sparseBlockElems(elements, int(j.spec.BlockElems))
	nblocks := (elements + be - 1) / be
	algo, b := j.spec.Algo, int(j.spec.Buffers)
	if algo != wire.AlgoMulti {
		algo, b = wire.AlgoSingle, 1
	}
	pairs := s.cfg.PacketBytes / wire.PairSize(j.dtype)
	cfg := &handlers.SparseConfig{Job: j.id, Token: j.token, Children: j.world(), DType: j.dtype, Op: j.op,
		Storage: j.spec.Storage, Buffers: b, Elements: elements, BlockElems: be, HashSlots: sparseHashPackets * pairs, PacketPairs: pairs, KeepResults: true,
		Readers: s.cfg.Readers, SteerRun: s.cfg.SteerRun}
	cfg.Reserve = func(n int64) bool {
		if !s.budget.reserve(n) {
			return false
		}
		j.streamBytes.Add(n)
		return true
	}
	if s.hasParent() {
		cfg.Uplink = &handlers.Uplink{Child: uint16(s.cfg.ChildIndex)}
	}
	if s.cfg.Children > 0 {
		streams := j.streams[:s.cfg.Children] // the child switches; hosts follow
		cfg.SwitchChildren, cfg.ChildStream = s.cfg.Children, slices.Max(streams)
		if slices.Min(streams) < 1 {
			return nil, refuse(wire.CodeBadRequest, "job %d: a child switch's sparse join has stream packets 0: it must say its longest stream of a block, in packets (1 or more)", j.id)
		}
	}
	bb := s.cfg.PacketBytes
	m := cfg.BlockBuffers(bb)
	// A block is a stream of up to be pairs from each member.
	target := s.windowTarget(j.world(), be*wire.PairSize(j.dtype), m)
	w, q, jerr := s.reserve(j, nblocks, target, m, func(bufs int) handlers.Footprint { return cfg.Footprint(bufs, bb) })
	if jerr != nil {
		return nil, jerr
	}
	cfg.Quota = q
	ackBuffers := b
	if algo == wire.AlgoSingle {
		ackBuffers = 0
	}
	return &plan{handler: sparsePlan{cfg}, quota: q, window: w,
		ack: wire.JoinAckBody{Window: uint32(w), Algo: algo, Buffers: uint8(ackBuffers), PacketElems: uint32(pairs), Blocks: uint32(nblocks), QuotaBuffers: uint32(q.Limit())},
		log: []any{"sparse", true, "storage", j.spec.Storage, "buffers", ackBuffers, "block_elems", be, "hash_slots", cfg.HashSlots,
			"window", w, "quota_buffers", q.Limit(), "blocks", nblocks}}, nil
}
