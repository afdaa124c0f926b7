package handlers

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/proto"
	"github.com/flare-net/flare/wire"
)

// HashProbe bounds the linear probing of the hash storage: a pair looks at
// its home slot and at most HashProbe-1 slots after it (wrapping around the
// table), and goes to the spill buffer when all of them hold other
// indices. The bound keeps a handler's work per pair constant, which is
// the point of the paper's hash storage: its cost depends on the packet,
// not on the density. Slots are never freed while a block aggregates, so
// an index that found its slot keeps finding it within the bound.
const HashProbe = 8

// SparseConfig describes one job's sparse aggregation at this switch.
//
// A host's sparse vector is cut into blocks of BlockElems consecutive
// indices; for each block a host sends its (index, value) pairs, indices
// relative to the block's first element, in a stream of Sparse packets
// numbered 0, 1, ... (wire.SparseBlockField): every packet but the last
// carries exactly PacketPairs pairs, the last (FlagLast) fewer, possibly
// none. See docs/PROTOCOL.md, "Sparse streams".
type SparseConfig struct {
	Job         uint32
	Token       uint64
	Children    int          // P: hosts aggregated here
	DType       wire.DType   // element type of the values
	Op          wire.Op      // OpSum, OpMin or OpMax, over the values present
	Storage     wire.Storage // StorageHash (bounded table, spills) or StorageArray (one slot per index)
	Buffers     int          // partial tables per block: 1 = single buffer, 2..MaxBuffers = multi-buffer
	Elements    int          // vector length in elements
	BlockElems  int          // indices per block; the last block may be shorter
	HashSlots   int          // hash storage: slots of one table (each holds one pair)
	PacketPairs int          // pairs in a full packet, in both directions
	Quota       *hpu.Quota   // the job's share of L1
	// KeepResults keeps each block's emitted stream (two generations, in
	// ordinary memory) and sends it again to a host whose retransmitted
	// stream shows it lost some of it; the daemon sets it.
	KeepResults bool
	// Uplink, when not nil, makes this switch a non-root in a tree: a
	// block's stream (its spills and its result) goes up to the parent as
	// the Sparse stream of child Uplink.Child, marked from-switch, and the
	// parent's stream comes back through Down. Needs KeepResults.
	Uplink *Uplink
	// SwitchChildren is how many of the children, the first ones, are
	// switches: a child switch's stream of a block is at most ChildStream
	// packets of up to PacketPairs pairs each (its spills then its result),
	// marked from-switch. The other children are hosts, whose streams
	// follow the host rules above.
	SwitchChildren int
	ChildStream    int
	// Readers and SteerRun are how the switch's readers take the job's
	// blocks (DenseConfig.Readers).
	Readers, SteerRun int
	// Reserve, when not nil, is asked before the stored streams
	// (KeepResults, and a non-root switch's copies of its parent's
	// streams) grow by n bytes. When it refuses, that block's stream of
	// that generation is not stored, and a host that lost a packet of it
	// is not answered (it times out; nothing wrong is sent). The daemon
	// charges its memory budget here; NewSparse's own allocations are in
	// Footprint.
	Reserve func(n int64) bool
}

// validate names the first field out of range and the allowed range.
func (c *SparseConfig) validate() error {
	if err := checkSteering(c.Readers, c.SteerRun); err != nil {
		return fmt.Errorf("sparse: %w", err)
	}
	switch {
	case !c.DType.Valid():
		return fmt.Errorf("sparse: dtype %v: %w", c.DType, elem.ErrUnsupported)
	case c.Op != wire.OpSum && c.Op != wire.OpMin && c.Op != wire.OpMax:
		return fmt.Errorf("sparse: op %v: must be sum, min or max (an absent index is no operand)", c.Op)
	case c.Storage != wire.StorageHash && c.Storage != wire.StorageArray:
		return fmt.Errorf("sparse: storage %v: must be hash or array", c.Storage)
	case c.Buffers < 1 || c.Buffers > proto.MaxBuffers:
		return fmt.Errorf("sparse: buffers B = %d: must be in 1..%d (1 = single buffer)", c.Buffers, proto.MaxBuffers)
	case c.Children < 1 || c.Children > proto.MaxChildren:
		return fmt.Errorf("sparse: children = %d: must be in 1..%d", c.Children, proto.MaxChildren)
	case c.Elements < 1:
		return fmt.Errorf("sparse: elements = %d: must be >= 1", c.Elements)
	case c.BlockElems < 1 || int64(c.BlockElems) > math.MaxUint32:
		return fmt.Errorf("sparse: elements per block = %d: must be in 1..%d", c.BlockElems, uint32(math.MaxUint32))
	case c.Blocks() > wire.MaxSparseBlocks:
		return fmt.Errorf("sparse: %d elements in blocks of %d = %d blocks: at most %d; use larger blocks",
			c.Elements, c.BlockElems, c.Blocks(), wire.MaxSparseBlocks)
	case c.PacketPairs < 1:
		return fmt.Errorf("sparse: pairs per packet = %d: must be >= 1", c.PacketPairs)
	case c.Storage == wire.StorageHash && (c.HashSlots < 1 || int64(c.HashSlots)*int64(c.Buffers) > math.MaxUint32):
		return fmt.Errorf("sparse: hash slots = %d: must be in 1..%d", c.HashSlots, int64(math.MaxUint32)/int64(c.Buffers))
	case c.Uplink != nil && !c.KeepResults:
		return errors.New("sparse: a non-root switch (Uplink) needs KeepResults: its stream is what it re-sends up")
	case c.SwitchChildren < 0 || c.SwitchChildren > c.Children:
		return fmt.Errorf("sparse: %d child switches of %d children: must be in 0..%d", c.SwitchChildren, c.Children, c.Children)
	case c.SwitchChildren > 0 && (c.ChildStream < 1 || c.ChildStream > wire.MaxSparseSeq):
		return fmt.Errorf("sparse: child switches' streams of %d packets: must be in 1..%d", c.ChildStream, wire.MaxSparseSeq)
	case c.MaxPackets() > wire.MaxSparseSeq:
		return fmt.Errorf("sparse: %d elements per block need up to %d packets of %d pairs: at most %d; use smaller blocks or larger packets",
			c.BlockElems, c.MaxPackets(), c.PacketPairs, wire.MaxSparseSeq)
	case c.maxDownstream() > wire.MaxSparseSeq:
		return fmt.Errorf("sparse: %d children × %d packets may spill %d packets per block: at most %d; use smaller blocks or larger packets",
			c.Children, c.MaxPackets(), c.maxDownstream(), wire.MaxSparseSeq)
	case c.Quota == nil:
		return errors.New("sparse: no memory quota")
	case c.PacketPairs*wire.PairSize(c.DType) > c.Quota.BufferBytes():
		return fmt.Errorf("sparse: %d pairs of %s per packet = %d bytes: must fit a %d-byte buffer",
			c.PacketPairs, c.DType, c.PacketPairs*wire.PairSize(c.DType), c.Quota.BufferBytes())
	case c.Quota.Limit() < c.BlockBuffers(c.Quota.BufferBytes()):
		return fmt.Errorf("sparse: quota of %d buffers: one %s block needs %d", c.Quota.Limit(), c.Storage,
			c.BlockBuffers(c.Quota.BufferBytes()))
	}
	return nil
}

// Blocks is the number of blocks of one allreduce.
func (c *SparseConfig) Blocks() int { return (c.Elements + c.BlockElems - 1) / c.BlockElems }

// BlockLen is the index range of block b: BlockElems, less for the last.
func (c *SparseConfig) BlockLen(b int) int { return min(c.BlockElems, c.Elements-b*c.BlockElems) }

// MaxPackets is the longest stream a host may send for one block: its
// pairs have distinct indices, at most BlockElems, and every packet but the
// last is full, so BlockElems/PacketPairs full packets and the last.
func (c *SparseConfig) MaxPackets() int { return c.BlockElems/c.PacketPairs + 1 }

// childPackets is the longest stream one child may send for a block.
func (c *SparseConfig) childPackets() int {
	if c.SwitchChildren > 0 {
		return max(c.ChildStream, c.MaxPackets())
	}
	return c.MaxPackets()
}

// maxDownstream bounds the switch's stream of one block: spill packets (at
// worst every pair spills: a full packet per packet received, and the
// remainder) and then the result packets.
func (c *SparseConfig) maxDownstream() int {
	entries := c.BlockElems
	spills := 0
	if c.Storage == wire.StorageHash {
		entries = min(entries, c.HashSlots*c.Buffers)
		spills = c.SwitchChildren*c.ChildStream + (c.Children-c.SwitchChildren)*c.MaxPackets() + 1
	}
	return spills + entries/c.PacketPairs + 1
}

// StreamBound is the longest stream this switch sends for one block, to
// its hosts or up to its parent. A child switch tells its parent in its
// join, and the parent takes the largest as its ChildStream.
func (c *SparseConfig) StreamBound() int { return c.maxDownstream() }

// BlockBuffers is the memory one block holds from its first packet to its
// flush, in buffers of bufferBytes: B tables (hash: HashSlots pairs; array:
// BlockElems values) and one packet buffer, the spill buffer of the hash
// storage and the staging buffer of the flush. The daemon reserves a
// multiple of it per job; the occupancy bitmaps and the per-child stream
// state are bookkeeping outside L1, like the dense contributor bitmap.
func (c *SparseConfig) BlockBuffers(bufferBytes int) int {
	per, cell := c.tableCells(bufferBytes)
	if per < 1 {
		return math.MaxInt32
	}
	return c.Buffers*((cell+per-1)/per) + 1
}

// tableCells is the number of cells one buffer holds and the cells of one
// table: hash cells are pairs (index and value), array cells values.
func (c *SparseConfig) tableCells(bufferBytes int) (perBuf, cells int) {
	if c.Storage == wire.StorageHash {
		return bufferBytes / wire.PairSize(c.DType), c.HashSlots
	}
	return bufferBytes / max(c.DType.Size(), 1), c.BlockElems
}

// SparseStats counts what a sparse job's handler did. Plain atomics: the
// daemon turns them into metrics at scrape time.
type SparseStats struct {
	BlockStats
	Pairs         atomic.Int64 // pairs in admitted packets
	BadIndex      atomic.Int64 // packets with an index outside their block
	Spilled       atomic.Int64 // pairs sent to the hosts unaggregated (hash storage)
	SpillPackets  atomic.Int64 // Spill packets emitted
	ResultPackets atomic.Int64 // Sparse result packets emitted
	Unstored      atomic.Int64 // streams left unstored because Reserve refused their growth
}

// Sparse is the handler for one job's sparse allreduce: hash storage with a
// spill buffer, or array storage, each with one table per block (single
// buffer) or B of them (multi-buffer). Hosts' duplicate packets are
// recognised by (child, block, sequence) and never aggregated twice.
type Sparse struct {
	cfg       SparseConfig
	kernel    elem.Kernel
	hash      bool
	esize     int
	psize     int
	nblocks   int
	seqWords  int // words of one child's sequence bitmap
	perBuf    int // cells per buffer
	perShift  int // log2(perBuf) when perBuf is a power of two (cells at a shift), else -1
	tableBufs int // buffers per table
	cellSize  int // bytes per cell: psize (hash) or esize (array)
	cells     int // cells per table
	occWords  int // words of one table's occupancy bitmap
	probe     int // hash: slots a pair looks at
	blocks    []sparseBlock
	layout    blockLayout // where a block's record lies in blocks

	works workPool[sparseWork]

	records [2][]sparseRecord // KeepResults: each block's stream, by generation parity
	downs   [2][]sparseRecord // Uplink: the parent's stream of each block, by generation parity

	Stats SparseStats
}

var _ hpu.Handler = (*Sparse)(nil)
var _ hpu.HeaderHandler = (*Sparse)(nil)

// sparseBlock is one block's generation and record (genBlock, the rule in
// generation.go), on a cache line of its own (cacheLine); its lock is the
// single design's critical section and the multi design's state lock.
type sparseBlock struct {
	genBlock[*sparseWork]
	_ [cacheLine - unsafe.Sizeof(genBlock[*sparseWork]{})]byte
}

// sparseWork is a block's state while it aggregates. A job has a fixed set,
// one per block its quota can hold, recycled so that no packet allocates.
// A record abandoned by its block stays with the handlers still folding
// into it until the last of them settles (generation.go).
type sparseWork struct {
	gs        genState      // packets admitted and settled (folded, or dropped if abandoned)
	shard     uint8         // the workPool stack it goes back to
	bufs      []*hpu.Buffer // B×tableBufs table buffers, then the packet buffer
	out       *hpu.Buffer   // the packet buffer: spill buffer, then flush staging
	occ       []uint64      // B occupancy bitmaps: a cell holds a value (a zero is a value)
	locks     []hpu.Lock    // multi: one per table
	spillLock hpu.Lock      // multi: the spill buffer and dseq
	nspill    int           // pairs in the spill buffer
	dseq      uint32        // next sequence number of the switch's stream
	seen      []uint64      // P sequence bitmaps: packets admitted per child
	kids      []sparseChild
	done      int32    // children whose stream is complete
	keys      []uint64 // hash: the flush's sort keys
}

func (w *sparseWork) gstate() *genState { return &w.gs }

// sparseChild is one child's stream of a block.
type sparseChild struct {
	got   uint32 // distinct packets admitted
	total uint32 // packets in the stream, known from the last one; 0 = not yet
	hi    uint32 // highest sequence admitted, plus one
}

// Cycle estimates of the sparse work, which PsPIN's published costs do not
// cover (our estimates, charged on top of the dtype's aggregation cost per
// value): reading and comparing a slot or an index, and the flush's sort
// of the hash entries per entry and level.
const (
	sparseIndexCycles = 1 // check one index against the block (header stage)
	sparseProbeCycles = 4 // load a slot's index and occupancy, compare, branch
	sparseSortCycles  = 4 // per entry and log2 level of the hash flush's sort
)

// NewSparse checks cfg and builds the handler with its block table and a
// pool of block states, one per block the quota can hold at once.
func NewSparse(cfg SparseConfig) (*Sparse, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	k, err := elem.KernelFor(cfg.DType, cfg.Op)
	if err != nil {
		return nil, err
	}
	s := &Sparse{
		cfg: cfg, kernel: k, hash: cfg.Storage == wire.StorageHash,
		esize: cfg.DType.Size(), psize: wire.PairSize(cfg.DType), nblocks: cfg.Blocks(),
		seqWords: (cfg.childPackets() + 63) / 64,
	}
	s.perBuf, s.cells = cfg.tableCells(cfg.Quota.BufferBytes())
	s.tableBufs = (s.cells + s.perBuf - 1) / s.perBuf
	s.perShift = -1
	if s.perBuf&(s.perBuf-1) == 0 {
		s.perShift = bits.TrailingZeros(uint(s.perBuf))
	}
	s.cellSize = s.esize
	if s.hash {
		s.cellSize = s.psize
		s.probe = min(HashProbe, s.cells)
	}
	s.occWords = (s.cells + 63) / 64
	// Footprint counts every allocation below: change both together.
	s.layout = newBlockLayout(uint32(s.nblocks), cfg.Readers, cfg.SteerRun)
	s.blocks = make([]sparseBlock, s.nblocks)
	if cfg.KeepResults {
		s.records = [2][]sparseRecord{make([]sparseRecord, s.nblocks), make([]sparseRecord, s.nblocks)}
	}
	if cfg.Uplink != nil {
		s.downs = [2][]sparseRecord{make([]sparseRecord, s.nblocks), make([]sparseRecord, s.nblocks)}
	}
	nwork := workCount(cfg.Quota.Limit()/cfg.BlockBuffers(cfg.Quota.BufferBytes()), s.nblocks)
	s.works.reserve(nwork)
	for i := range nwork {
		w := s.newWork()
		w.shard = firstShard(i, nwork) // a take moves it to the taker's
		s.works.put(w, w.shard)
	}
	return s, nil
}

func (s *Sparse) newWork() *sparseWork {
	b := s.cfg.Buffers
	w := &sparseWork{
		bufs: make([]*hpu.Buffer, b*s.tableBufs+1),
		occ:  make([]uint64, b*s.occWords),
		seen: make([]uint64, s.cfg.Children*s.seqWords),
		kids: make([]sparseChild, s.cfg.Children),
	}
	if b > 1 {
		w.locks = make([]hpu.Lock, b)
	}
	if s.hash {
		w.keys = make([]uint64, 0, b*s.cells)
	}
	return w
}

// Config returns the configuration the handler was built with.
func (s *Sparse) Config() SparseConfig { return s.cfg }

// Blocks is the number of blocks of one allreduce.
func (s *Sparse) Blocks() int { return s.nblocks }

// Header checks everything that needs no block state: the packet's shape
// against the job, the stream rules (a host's packets are full but the
// last, which has FlagLast and fewer pairs; a child switch's, marked
// from-switch, hold up to a full packet each, and may number up to
// ChildStream), the payload length and
// every index against the block's range. A packet that fails is counted
// and dropped whole, so a malformed packet never aggregates a part of
// itself. The job id and token were matched by the daemon.
func (s *Sparse) Header(t *hpu.Task) bool {
	h := &t.Pkt.Hdr
	blk, seq := wire.SplitSparseBlock(h.Block)
	last := h.Flags&wire.FlagLast != 0
	n := int(h.Count)
	fromSwitch := h.Flags&wire.FlagFromSwitch != 0
	full := (!last && n == s.cfg.PacketPairs) || (last && n < s.cfg.PacketPairs)
	limit := s.cfg.MaxPackets()
	if fromSwitch {
		full, limit = n <= s.cfg.PacketPairs, s.cfg.ChildStream
	}
	if h.Type != wire.TypeSparse || h.DType != s.cfg.DType || h.Op != s.cfg.Op ||
		int(h.Child) >= s.cfg.Children || int(blk) >= s.nblocks || int(seq) >= limit ||
		h.Flags&wire.FlagPartial != 0 || fromSwitch != (int(h.Child) < s.cfg.SwitchChildren) || !full ||
		uint64(len(t.Pkt.Payload)) != uint64(h.Count)*uint64(s.psize) {
		s.Stats.Invalid.Add(1)
		return false
	}
	return s.checkIndices(t, blk)
}

// checkIndices checks every index of the packet's pairs against block
// blk's range and charges the check.
func (s *Sparse) checkIndices(t *hpu.Task, blk uint32) bool {
	limit := uint32(s.cfg.BlockLen(int(blk)))
	p := t.Pkt.Payload
	for off := 0; off < len(p); off += s.psize {
		if binary.LittleEndian.Uint32(p[off:]) >= limit {
			s.Stats.BadIndex.Add(1)
			return false
		}
	}
	t.Charge(int64(t.Pkt.Hdr.Count) * sparseIndexCycles)
	return true
}

// Payload aggregates one packet with the job's design.
func (s *Sparse) Payload(t *hpu.Task) {
	if s.cfg.Buffers == 1 {
		s.single(t)
	} else {
		s.multi(t)
	}
}

// block is block blk's record (blockLayout).
func (s *Sparse) block(blk uint32) *sparseBlock { return &s.blocks[s.layout.slot(blk)] }

// single: every packet of a block folds into one table inside the block's
// critical section, spills included.
func (s *Sparse) single(t *hpu.Task) {
	h := &t.Pkt.Hdr
	blk, seq := wire.SplitSparseBlock(h.Block)
	b := s.block(blk)
	t.Lock(&b.lock)
	w := s.admit(t, b, seq)
	if w == nil {
		t.Unlock(&b.lock)
		return
	}
	s.fold(t, w, 0, t.Pkt.Payload, false)
	if s.settle(t, b, w) {
		s.flush(t, w, h.Generation, blk)
	}
}

// multi: B tables per block. A handler folds into whichever table is free
// (the one its child index maps to first), so B packets of a block
// aggregate at once; the spill buffer has its own lock. The last handler to
// finish flushes, merging the B tables.
func (s *Sparse) multi(t *hpu.Task) {
	h := &t.Pkt.Hdr
	blk, seq := wire.SplitSparseBlock(h.Block)
	b := s.block(blk)
	t.Lock(&b.lock)
	w := s.admit(t, b, seq)
	t.Unlock(&b.lock)
	if w == nil {
		return
	}
	nb := len(w.locks)
	j := -1
	for i := range nb {
		k := (int(h.Child) + i) % nb
		if t.TryLock(&w.locks[k]) {
			j = k
			break
		}
	}
	if j < 0 {
		j = int(h.Child) % nb
		t.Lock(&w.locks[j])
	}
	s.fold(t, w, j, t.Pkt.Payload, true)
	t.Unlock(&w.locks[j])

	t.Lock(&b.lock)
	if s.settle(t, b, w) {
		s.flush(t, w, h.Generation, blk)
	}
}

// settle ends a handler's use of its block's record, under b.lock, which
// it releases (generation.go). It reports whether the block is complete,
// every child's stream in and aggregated: then w has left the block and
// the caller flushes it. The last handler of an abandoned record (a newer
// generation took the block while it folded) releases it.
func (s *Sparse) settle(t *hpu.Task, b *sparseBlock, w *sparseWork) bool {
	live, release := w.gs.settle()
	fin := live && int(w.done) == s.cfg.Children && !w.gs.busy()
	if fin {
		b.complete()
	}
	t.Unlock(&b.lock)
	if release {
		s.releaseWork(w)
	}
	return fin
}

// admit runs under the block's lock. It opens the block for the packet
// (enter: the generation rule, stale packets and flushed blocks, a block
// state and its memory on the block's first packet) and records the
// packet in its child's stream, dropping duplicates. It returns the
// block's state, or nil when the packet is not to be aggregated.
func (s *Sparse) admit(t *hpu.Task, b *sparseBlock, seq uint32) *sparseWork {
	h := &t.Pkt.Hdr
	w, _ := enter(&b.genBlock, t, s)
	if w == nil {
		return nil
	}
	if !s.track(w, h.Child, seq, h.Flags&wire.FlagLast != 0) {
		if seq == 0 {
			blk, _ := wire.SplitSparseBlock(h.Block)
			reportWaiting(t, s.cfg.Job, s.cfg.Token, s.cfg.DType, s.cfg.Op, blk, s.cfg.Children, func(c int) bool {
				k := &w.kids[c]
				return k.total == 0 || k.got < k.total
			})
		}
		return nil
	}
	w.gs.admit()
	s.Stats.Packets.Add(w.shard, 1)
	s.Stats.Pairs.Add(int64(h.Count))
	return w
}

// take, releaseWork, resend and counters make Sparse a genOpener. Memory is
// taken before the packet is recorded, all of the block's or none, so a
// refused packet leaves no trace and the host's retransmission is taken.
func (s *Sparse) take(t *hpu.Task) (*sparseWork, bool) {
	shard := shardOf(t.Cluster)
	w := s.works.take(shard)
	if w == nil {
		return nil, false
	}
	w.shard = shard
	if !s.allocBufs(w, t.Cluster) {
		s.works.put(w, w.shard)
		return nil, false
	}
	return w, true
}

func (s *Sparse) counters() *BlockStats { return &s.Stats.BlockStats }

// track records packet seq of child's stream and reports whether it is new
// and consistent: not seen before, not beyond the stream's last packet, and
// a last packet that no admitted packet follows.
func (s *Sparse) track(w *sparseWork, child uint16, seq uint32, last bool) bool {
	k := &w.kids[child]
	word := &w.seen[int(child)*s.seqWords+int(seq/64)]
	bit := uint64(1) << (seq % 64)
	switch {
	case *word&bit != 0:
		s.Stats.Duplicate.Add(1)
		return false
	case k.total != 0 && (last || seq >= k.total), last && k.hi > seq+1:
		s.Stats.Invalid.Add(1)
		return false
	}
	*word |= bit
	k.got++
	k.hi = max(k.hi, seq+1)
	if last {
		k.total = seq + 1
	}
	if k.total != 0 && k.got == k.total {
		w.done++
	}
	return true
}

// allocBufs takes a block's memory from the quota: all of it or none.
func (s *Sparse) allocBufs(w *sparseWork, cluster int) bool {
	for i := range w.bufs {
		if w.bufs[i] = s.cfg.Quota.Alloc(cluster); w.bufs[i] == nil {
			s.freeBufs(w)
			return false
		}
	}
	w.out = w.bufs[len(w.bufs)-1]
	return true
}

func (s *Sparse) freeBufs(w *sparseWork) {
	for i, b := range w.bufs {
		if b != nil {
			s.cfg.Quota.Free(b)
			w.bufs[i] = nil
		}
	}
	w.out = nil
}

// releaseWork returns a block's memory to the quota and its state to the
// pool, cleared.
func (s *Sparse) releaseWork(w *sparseWork) {
	s.freeBufs(w)
	clear(w.occ)
	clear(w.seen)
	clear(w.kids)
	w.nspill, w.dseq, w.done = 0, 0, 0
	s.works.put(w, w.shard)
}

// Close frees the memory of every unfinished block. The daemon calls it
// when the job ends, once no packet of the job is queued or running, and
// then releases the quota.
func (s *Sparse) Close() {
	for i := range s.blocks {
		s.blocks[i].drop(s.releaseWork)
	}
}
