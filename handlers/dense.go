package handlers

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/internal/prefetch"
	"github.com/flare-net/flare/proto"
	"github.com/flare-net/flare/wire"
)

// DenseConfig describes one job's dense aggregation at this switch.
type DenseConfig struct {
	Job         uint32
	Token       uint64
	Algo        wire.Algo // AlgoSingle, AlgoMulti or AlgoTree (resolve AlgoAuto first: proto.Choose)
	Buffers     int       // B, for AlgoMulti (2..MaxBuffers)
	Children    int       // P: hosts (or child switches) aggregated here
	DType       wire.DType
	Op          wire.Op
	Elements    int        // vector length in elements
	PacketElems int        // elements per block (one packet); the last block may be shorter
	Quota       *hpu.Quota // the job's share of L1
	// Uplink, when not nil, makes this switch a non-root: a finished block is
	// sent up as a Data packet with FlagFromSwitch and this child index
	// instead of being multicast down as a Result.
	Uplink *Uplink
	// KeepResults keeps each finished block's result (for the current and
	// the previous generation) so that a host whose result was lost gets it
	// again when it retransmits, instead of waiting forever: a lost result
	// costs one round trip. The store is the switch's packet memory (DRAM
	// in a real switch, like SwitchML's shadow copies), not L1.
	KeepResults bool
	// Readers and SteerRun are how the switch's readers take the job's
	// blocks: block b goes to reader (b / SteerRun) mod Readers (its data
	// port group; SteerRun a power of two up to MaxSteerRun, 0 is 1;
	// Readers 0 is 1). The block table keeps each reader's records
	// together (blockLayout).
	Readers, SteerRun int
	// Deadline, when positive, is bounded-time mode (single design only):
	// a block whose contributions are not all in Deadline after its first
	// packet arrived is released as it is, a partial aggregate marked
	// FlagPartial with the contributor count in Child. Times are the
	// packets' Arrival clock (ns in the daemon); Expire does the releasing.
	Deadline int64
}

// UplinkResendGap is the least time (in the packets' Arrival clock, ns)
// between two re-sends of one block's partial up: every child of a switch
// whose partial or result was lost retransmits, and one copy up per round
// of retransmissions recovers the block. It is half the hosts' smallest
// retransmission timeout (20 ms).
const UplinkResendGap = int64(10 * time.Millisecond)

// Uplink is where a non-root switch sends its aggregates.
type Uplink struct {
	Child uint16 // this switch's child index at its parent
}

// DenseStats counts what a job's handler did. Plain atomics: the daemon
// turns them into metrics at scrape time.
type DenseStats struct {
	BlockStats
	Partial atomic.Int64 // blocks released at their deadline without every child (bounded mode)
	Missed  atomic.Int64 // contributions left out of partial results (children absent at the deadline)
}

// Dense is the handler for one job's dense allreduce: the paper's single
// buffer, multi-buffer and tree designs, with a per-block contributor bitmap
// so a retransmitted packet is never aggregated twice.
type Dense struct {
	cfg     DenseConfig
	kernel  elem.Kernel
	esize   int
	narrow  bool // up to 64 children: a work's bits are its own word (Dense.bitmap)
	nblocks int
	pow2    int // tree: leaves padded to a power of two
	blocks  []block
	layout  blockLayout // where a block's record lies in blocks

	works workPool[work]

	// results[g&1] holds generation g's finished blocks; resultGen tags
	// each block's slot with generation+1 (0: nothing stored).
	results   [2][]byte
	resultGen [2][]uint32
	// resultCount[g&1][b] is the contributor count of a partial result
	// (bounded mode), 0 for a complete one, for resending it as it was.
	resultCount [2][]uint16
	// final[g&1][b] (non-root switches only) says the stored block is the
	// parent's final result, not this switch's own partial aggregate.
	final [2][]bool
	// upAt[g&1][b] is the Arrival time of the retransmission that last sent
	// the block's partial up again (non-root switches), to send it once
	// per round of its children's retransmissions, not once per child.
	upAt [2][]int64

	Stats DenseStats
}

var _ hpu.Handler = (*Dense)(nil)
var _ hpu.HeaderHandler = (*Dense)(nil)

// block is one block's state: its generation and record (genBlock, the
// rule in generation.go) and bounded mode's deadline, on a cache line of
// its own (cacheLine).
type block struct {
	// expires is when bounded mode releases the active block (the first
	// packet's arrival plus the deadline), 0 otherwise. Written under the
	// lock, read without it by Expire's scan. First, where its 8-byte
	// alignment needs no padding on 32-bit machines either.
	expires atomic.Int64
	genBlock[*work]
	_ [cacheLine - unsafe.Sizeof(atomic.Int64{}) - unsafe.Sizeof(genBlock[*work]{})]byte
}

// work is the state of a block while it is being aggregated. A job has a
// fixed set of them (see NewDense), recycled through a free list, so no
// packet allocates. A work abandoned by its block stays with the handlers
// still folding into it until the last of them settles (generation.go).
type work struct {
	workFields
	_ [workBytes - unsafe.Sizeof(workFields{})]byte
}

// workBytes is a work's size: three cache lines, so that in the works'
// one allocation (page-aligned where it passes 32 KiB, 170 works) each
// work's first line is a line of its own (TestWorkLayout).
const workBytes = 3 * cacheLine

// workFields are a work's own fields, ahead of its padding.
type workFields struct {
	// What a packet of the common case (up to 64 children, the single
	// design) reads and writes, on the work's first line: once other
	// blocks' packets have evicted it, a packet's admission and sum miss
	// on one line of the work, where a bitmap and a buffer list elsewhere,
	// and the buffer's own record, were a miss each (docs/PERFORMANCE.md).
	gs      genState       // contributions admitted (one per child) and settled
	bitmap1 [1]uint64      // the children's bits, up to 64 (Dense.narrow)
	acc     []byte         // single: its buffer's data while it holds one
	shard   uint8          // the workPool stack it goes back to
	wide    []uint64       // the children's bits, more than 64
	bufs    []*hpu.Buffer  // single: [0]; multi: [0..B); tree: heap-indexed nodes
	buf1    [1]*hpu.Buffer // bufs of the single design
	filled  []bool         // multi: buffer j holds data
	locks   []hpu.Lock     // multi: one lock per buffer
}

// bitmap is w's children's bits: its own word where the job has up to 64
// children, read without loading a slice from another line.
func (d *Dense) bitmap(w *work) []uint64 {
	if d.narrow {
		return w.bitmap1[:]
	}
	return w.wide
}

func (w *work) gstate() *genState { return &w.gs }

// spareWorks is how many block states a job has beyond one per block (as
// far as its quota can fill them): a work abandoned while handlers still
// fold into it is out of the pool until the last of them settles, and the
// block's new generation needs another meanwhile. Each such work is held
// by a running handler, so they are few and short-lived; a packet of the
// new generation that finds none is refused (NoBuffer) and retransmitted,
// as when the quota is exhausted.
const spareWorks = 8

// workCount is how many block states a job of nblocks blocks keeps, given
// how many its quota can fill: one per block and spareWorks more. NewDense,
// NewSparse and the Footprint formulas share it.
func workCount(fill, nblocks int) int { return min(fill, nblocks+min(nblocks, spareWorks)) }

// NewDense checks cfg and builds the handler with its block table.
func NewDense(cfg DenseConfig) (*Dense, error) {
	k, err := elem.KernelFor(cfg.DType, cfg.Op)
	if err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	d := &Dense{cfg: cfg, kernel: k, esize: cfg.DType.Size(), narrow: cfg.Children <= 64}
	d.nblocks = int(cfg.blocks())
	// Footprint counts every allocation below: change both together.
	d.layout = newBlockLayout(uint32(d.nblocks), cfg.Readers, cfg.SteerRun)
	d.blocks = make([]block, d.nblocks)
	nbufs := 1
	switch cfg.Algo {
	case wire.AlgoMulti:
		nbufs = cfg.Buffers
	case wire.AlgoTree:
		d.pow2 = 1 << bits.Len(uint(cfg.Children-1))
		nbufs = 2 * d.pow2
	}
	if cfg.KeepResults {
		for i := range d.results {
			d.results[i] = make([]byte, cfg.Elements*d.esize)
			d.resultGen[i] = make([]uint32, d.nblocks)
			if cfg.Deadline > 0 {
				d.resultCount[i] = make([]uint16, d.nblocks)
			}
			if cfg.Uplink != nil {
				d.final[i] = make([]bool, d.nblocks)
				d.upAt[i] = make([]int64, d.nblocks)
			}
		}
	}
	nwork := workCount(cfg.Quota.Limit(), d.nblocks)
	words := (cfg.Children + 63) / 64
	var bitmaps []uint64 // one allocation, where a work's own word is not enough
	if words > 1 {
		bitmaps = make([]uint64, nwork*words)
	}
	works := make([]work, nwork) // one allocation: the pool hands out the ones used last
	d.works.reserve(nwork)
	for i := range works {
		w := &works[i]
		if words > 1 {
			w.wide = bitmaps[i*words : (i+1)*words : (i+1)*words]
		}
		if w.bufs = w.buf1[:]; nbufs > 1 {
			w.bufs = make([]*hpu.Buffer, nbufs)
		}
		if cfg.Algo == wire.AlgoMulti {
			w.filled = make([]bool, nbufs)
			w.locks = make([]hpu.Lock, nbufs)
		}
		w.shard = firstShard(i, nwork) // a take moves it to the taker's
		d.works.put(w, w.shard)
	}
	return d, nil
}

func (c *DenseConfig) validate() error {
	if err := checkSteering(c.Readers, c.SteerRun); err != nil {
		return fmt.Errorf("dense: %w", err)
	}
	switch {
	case c.Algo != wire.AlgoSingle && c.Algo != wire.AlgoMulti && c.Algo != wire.AlgoTree:
		return fmt.Errorf("dense: algorithm %s: must be single, multi or tree", c.Algo)
	case c.Algo == wire.AlgoMulti && (c.Buffers < 2 || c.Buffers > proto.MaxBuffers):
		return fmt.Errorf("dense: buffers B = %d: must be in 2..%d for multi", c.Buffers, proto.MaxBuffers)
	case c.Children < 1 || c.Children > proto.MaxChildren:
		return fmt.Errorf("dense: children = %d: must be in 1..%d", c.Children, proto.MaxChildren)
	case c.Elements < 1:
		return fmt.Errorf("dense: elements = %d: must be >= 1", c.Elements)
	case c.PacketElems < 1:
		return fmt.Errorf("dense: elements per packet = %d: must be >= 1", c.PacketElems)
	case c.blocks() > math.MaxUint32:
		return fmt.Errorf("dense: %d elements in packets of %d = %d blocks: block ids address at most %d", c.Elements, c.PacketElems, c.blocks(), uint32(math.MaxUint32))
	case c.Quota == nil:
		return errors.New("dense: no memory quota")
	case c.Deadline < 0 || (c.Deadline > 0 && c.Algo != wire.AlgoSingle):
		return fmt.Errorf("dense: deadline %d: bounded time needs the single design, whose buffer is the partial aggregate", c.Deadline)
	case c.PacketElems*c.DType.Size() > c.Quota.BufferBytes():
		return fmt.Errorf("dense: %d elements of %s per packet = %d bytes: must fit a %d-byte buffer",
			c.PacketElems, c.DType, c.PacketElems*c.DType.Size(), c.Quota.BufferBytes())
	case c.Uplink != nil && (c.Deadline > 0 || !c.KeepResults):
		return errors.New("dense: a non-root switch (Uplink) needs KeepResults and no deadline: its stored partial is what it re-sends up")
	case c.Quota.Limit() < c.MinBuffers():
		return fmt.Errorf("dense: quota of %d buffers: %s needs at least %d for one block",
			c.Quota.Limit(), c.Algo, c.MinBuffers())
	}
	return nil
}

// blocks is how many packets of PacketElems the job's Elements take (both
// at least 1).
func (c *DenseConfig) blocks() uint64 {
	return uint64(c.Elements-1)/uint64(c.PacketElems) + 1
}

// MinBuffers is the memory one block may need at its peak: 1 for single,
// B for multi, P for tree (every leaf arrived before any pair could fold).
func (c *DenseConfig) MinBuffers() int {
	switch c.Algo {
	case wire.AlgoMulti:
		return c.Buffers
	case wire.AlgoTree:
		return c.Children
	}
	return 1
}

// Blocks is the number of blocks (packets per host) of one allreduce.
func (d *Dense) Blocks() int { return d.nblocks }

// Config returns the configuration the handler was built with.
func (d *Dense) Config() DenseConfig { return d.cfg }

// blockElems is the element count of block b.
func (d *Dense) blockElems(b int) int {
	if b == d.nblocks-1 {
		return d.cfg.Elements - b*d.cfg.PacketElems
	}
	return d.cfg.PacketElems
}

// Header checks that the packet belongs to this job's shape. The job id and
// token were matched by the daemon. A non-root switch also takes its
// parent's Results (the daemon checked that the parent sent them).
func (d *Dense) Header(t *hpu.Task) bool {
	h := &t.Pkt.Hdr
	down := h.Type == wire.TypeResult && d.cfg.Uplink != nil
	if (h.Type != wire.TypeData && !down) || h.DType != d.cfg.DType || h.Op != d.cfg.Op ||
		(!down && int(h.Child) >= d.cfg.Children) || int64(h.Block) >= int64(d.nblocks) ||
		int(h.Count) != d.blockElems(int(h.Block)) || len(t.Pkt.Payload) != int(h.Count)*d.esize {
		d.Stats.Invalid.Add(1)
		return false
	}
	return true
}

// Payload aggregates one contribution with the job's design.
func (d *Dense) Payload(t *hpu.Task) {
	if t.Pkt.Hdr.Type == wire.TypeResult {
		d.down(t)
		return
	}
	switch d.cfg.Algo {
	case wire.AlgoSingle:
		d.single(t)
	case wire.AlgoMulti:
		d.multi(t)
	default:
		d.tree(t)
	}
}

// admit runs under b.lock. It opens the block for the packet (enter:
// the generation rule, stale packets and finished blocks, a work for a
// block's first packet, opened) and sets the child's bit, dropping a
// duplicate. It returns the block's work, the packet admitted into it, or
// nil. It does not allocate aggregation buffers: a caller that cannot get
// one for the packet unadmits it, so that a refused packet never leaves
// its bit set (the tree allocates its buffer before admission).
func (d *Dense) admit(t *hpu.Task, b *block) (w *work, opened bool) {
	h := &t.Pkt.Hdr
	if w, opened = enter(&b.genBlock, t, d); w == nil {
		if b.state != blockActive {
			b.expires.Store(0) // an abandoned work's deadline went with it
		}
		return nil, false
	}
	if opened && d.cfg.Deadline > 0 {
		b.expires.Store(t.Pkt.Arrival + d.cfg.Deadline)
	}
	word, bit := h.Child/64, uint64(1)<<(h.Child%64)
	bm := d.bitmap(w)
	if bm[word]&bit != 0 {
		d.Stats.Duplicate.Add(1)
		reportWaiting(t, d.cfg.Job, d.cfg.Token, d.cfg.DType, d.cfg.Op, h.Block, d.cfg.Children,
			func(c int) bool { return bm[c/64]&(1<<(c%64)) == 0 })
		return nil, false
	}
	bm[word] |= bit
	w.gs.admit()
	d.Stats.Packets.Add(w.shard, 1)
	return w, opened
}

// take, releaseWork, resend and counters make Dense a genOpener. A work's
// aggregation buffers are taken by the designs after admission.
func (d *Dense) take(t *hpu.Task) (*work, bool) {
	shard := shardOf(t.Cluster)
	w := d.works.take(shard)
	if w == nil {
		return nil, false
	}
	w.shard = shard
	return w, true
}

func (d *Dense) counters() *BlockStats { return &d.Stats.BlockStats }

// unadmit undoes admit's bit when the packet cannot be aggregated after all
// (no buffer), so the host's retransmission is taken. It runs under
// b.lock, before the handler left it: a work that holds no other packet
// goes back to the pool.
func (d *Dense) unadmit(b *block, w *work, child uint16) {
	d.bitmap(w)[child/64] &^= uint64(1) << (child % 64)
	w.gs.unadmit()
	d.Stats.Packets.Add(w.shard, -1)
	d.Stats.NoBuffer.Add(1)
	if w.gs.admitted == 0 {
		d.releaseWork(w)
		b.unopen()
		b.expires.Store(0)
	}
}

// settle is the end of a handler's use of its block's work, under b.lock,
// which it releases (generation.go). live says the contribution counts;
// last that it was the block's last, so the caller owns w and finishes
// the block. A dropped contribution frees hold, the buffer the handler
// owns (tree), and the last handler of an abandoned work releases it.
// The handler that settles the next-to-last contribution hints the block's
// result slot into the cache (prefetchResult).
func (d *Dense) settle(t *hpu.Task, b *block, w *work, hold *hpu.Buffer) (live, last bool) {
	live, release := w.gs.settle()
	nextToLast := false
	if live {
		switch int(w.gs.settled) {
		case d.cfg.Children:
			last = true
			b.complete()
			b.expires.Store(0)
		case d.cfg.Children - 1:
			nextToLast = true
		}
	}
	t.Unlock(&b.lock)
	if nextToLast {
		d.prefetchResult(&t.Pkt.Hdr, len(t.Pkt.Payload))
	}
	if !live && hold != nil {
		d.cfg.Quota.Free(hold)
	}
	if release {
		d.releaseWork(w)
	}
	return live, last
}

// single: every packet of a block folds into one buffer inside the block's
// critical section (the paper's Figure 6); with S = C and short messages
// handlers contend for it.
func (d *Dense) single(t *hpu.Task) {
	p := t.Pkt
	b := d.block(p.Hdr.Block)
	t.Lock(&b.lock)
	w, _ := d.admit(t, b)
	if w == nil {
		t.Unlock(&b.lock)
		return
	}
	if w.acc == nil {
		buf := d.cfg.Quota.Alloc(t.Cluster)
		if buf == nil {
			d.unadmit(b, w, p.Hdr.Child)
			t.Unlock(&b.lock)
			return
		}
		w.bufs[0], w.acc = buf, buf.Data
		copy(buf.Data, p.Payload)
		t.ChargeCopy(len(p.Payload))
	} else {
		d.kernel(w.acc[:len(p.Payload)], p.Payload)
		t.ChargeAggregate(d.cfg.DType, int(p.Hdr.Count))
	}
	if _, last := d.settle(t, b, w, nil); last {
		d.finish(t, w, w.bufs[0], int(p.Hdr.Count))
	}
}

// multi: B buffers per block (Figure 8). A handler takes whichever buffer is
// free; if none is, it waits on the one its child index maps to. The last
// handler to finish folds the other buffers into its own and emits. The
// folds run outside the block's lock, so a newer generation may abandon
// the work meanwhile; the handler then settles into nothing.
func (d *Dense) multi(t *hpu.Task) {
	p := t.Pkt
	b := d.block(p.Hdr.Block)
	t.Lock(&b.lock)
	w, opened := d.admit(t, b)
	if w == nil {
		t.Unlock(&b.lock)
		return
	}
	if opened {
		// M = B: the block's buffers are taken together on its first packet.
		for j := range w.bufs {
			if w.bufs[j] = d.cfg.Quota.Alloc(t.Cluster); w.bufs[j] == nil {
				d.freeBufs(w)
				d.unadmit(b, w, p.Hdr.Child)
				t.Unlock(&b.lock)
				return
			}
			w.filled[j] = false
		}
	}
	t.Unlock(&b.lock)

	nb := len(w.bufs)
	j := -1
	for i := range nb {
		k := (int(p.Hdr.Child) + i) % nb
		if t.TryLock(&w.locks[k]) {
			j = k
			break
		}
	}
	if j < 0 {
		j = int(p.Hdr.Child) % nb
		t.Lock(&w.locks[j])
	}
	n := len(p.Payload)
	if w.filled[j] {
		d.kernel(w.bufs[j].Data[:n], p.Payload)
		t.ChargeAggregate(d.cfg.DType, int(p.Hdr.Count))
	} else {
		copy(w.bufs[j].Data, p.Payload)
		w.filled[j] = true
		t.ChargeCopy(n)
	}
	t.Unlock(&w.locks[j])

	t.Lock(&b.lock)
	if _, last := d.settle(t, b, w, nil); !last {
		return
	}
	// Every other handler of the block has finished: fold the B-1 others
	// (the paper's (B-1)·L extra cycles) in buffer order.
	var acc *hpu.Buffer
	for k := range nb {
		if !w.filled[k] {
			continue
		}
		if acc == nil {
			acc = w.bufs[k]
			continue
		}
		d.kernel(acc.Data[:n], w.bufs[k].Data[:n])
		t.ChargeAggregate(d.cfg.DType, int(p.Hdr.Count))
	}
	d.finish(t, w, acc, int(p.Hdr.Count))
}

// tree: every packet is copied into its own buffer at the leaf of its child
// index; two siblings fold only when both are present, into the left one,
// and the result moves up (Figure 9). The pairing depends on child indices
// alone, so float results are bit-identical whatever the arrival order.
// A handler folds outside the block's lock holding its own buffer; when it
// comes back to the lock and finds the work abandoned, it frees that
// buffer and settles into nothing.
func (d *Dense) tree(t *hpu.Task) {
	p := t.Pkt
	b := d.block(p.Hdr.Block)
	x := d.cfg.Quota.Alloc(t.Cluster)
	if x == nil {
		// Taken before admission so a refused packet leaves no trace: the
		// host's retransmission will be aggregated.
		d.Stats.NoBuffer.Add(1)
		return
	}
	t.Lock(&b.lock)
	w, _ := d.admit(t, b)
	if w == nil {
		t.Unlock(&b.lock)
		d.cfg.Quota.Free(x)
		return
	}
	t.Unlock(&b.lock)
	n := len(p.Payload)
	copy(x.Data, p.Payload)
	t.ChargeCopy(n)

	node := d.pow2 + int(p.Hdr.Child)
	for node > 1 {
		sib := node ^ 1
		if !d.hasLeaves(sib) {
			node >>= 1
			continue
		}
		t.Lock(&b.lock)
		if w.gs.abandoned {
			d.settle(t, b, w, x)
			return
		}
		y := w.bufs[sib]
		if y == nil {
			w.bufs[node] = x
			d.settle(t, b, w, nil)
			return
		}
		w.bufs[sib] = nil
		t.Unlock(&b.lock)
		// The fold's cycles are charged before the operand it consumed is
		// freed: both buffers are held while it runs (in virtual time the
		// free lands when the fold ends, as on PsPIN).
		spent := y
		if node&1 == 0 { // we are the left operand
			d.kernel(x.Data[:n], y.Data[:n])
		} else {
			d.kernel(y.Data[:n], x.Data[:n])
			spent, x = x, y
		}
		t.ChargeAggregate(d.cfg.DType, int(p.Hdr.Count))
		d.cfg.Quota.Free(spent)
		node >>= 1
	}
	t.Lock(&b.lock)
	switch live, last := d.settle(t, b, w, x); {
	case last:
		d.finish(t, w, x, int(p.Hdr.Count))
	case live:
		panic("handlers: a tree handler reached the root before its block's other handlers settled")
	}
}

// hasLeaves reports whether the subtree under heap node n holds at least one
// real child (P need not be a power of two).
func (d *Dense) hasLeaves(n int) bool {
	shift := bits.Len(uint(d.pow2)) - bits.Len(uint(n))
	return (n<<shift)-d.pow2 < d.cfg.Children
}

// finish emits a completed block and returns its memory. res holds the
// result; w is no longer reachable from the block.
func (d *Dense) finish(t *hpu.Task, w *work, res *hpu.Buffer, count int) {
	p := t.Pkt
	h := wire.Header{
		Version: wire.Version, Type: wire.TypeResult, Job: d.cfg.Job, Token: d.cfg.Token,
		Generation: p.Hdr.Generation, Block: p.Hdr.Block, DType: d.cfg.DType, Op: d.cfg.Op, Count: uint32(count),
	}
	if d.cfg.Uplink != nil {
		h.Type, h.Flags, h.Child = wire.TypeData, wire.FlagFromSwitch, d.cfg.Uplink.Child
	}
	payload := res.Data[:count*d.esize]
	t.ChargeCopy(len(payload))
	d.emitResult(t, &h, payload, 0)
	d.Stats.Completed.Add(w.shard, 1)
	d.Stats.LatencyNs.Add(w.shard, t.Started()-w.gs.start)
	if d.cfg.Algo == wire.AlgoTree {
		d.cfg.Quota.Free(res) // the root's buffer is held by no node
	}
	d.releaseWork(w)
}

// emitResult sends a finished block (header h, the aggregate in payload,
// count contributors when it is partial, 0 when it is whole), storing it
// first for retransmissions when the job keeps results, and charges that
// copy. A root's stored result goes out from the store itself
// (Task.EmitKept): the slot is written once a generation and overwritten
// only by the generation after next, which cannot finish before every
// member has sent it, so not before every member still waiting for this
// result has it. That holds for the first send alone: a repeat (resend)
// may still wait in the writer when every member has the first and has
// moved on, so it is copied. A non-root's partial is copied out, as the
// parent's result replaces it in the store (down). Whatever copies the
// result as it is emitted (a non-root's emit, an egress that cannot keep
// it) copies it from payload, the handler's own buffer, not from the
// store: the slot is read outside the block's lock, and members out of
// step (hosts that send generation after next before this one's result
// is out, as TestGenerationsRealTime's do) could have it rewritten
// meanwhile.
func (d *Dense) emitResult(t *hpu.Task, h *wire.Header, payload []byte, count uint16) {
	if d.results[0] == nil {
		t.Emit(h, payload)
		return
	}
	slot, blk := h.Generation&1, h.Block // not t.Pkt's: an Expire tick releases blocks too
	b := d.block(blk)
	var stored []byte
	t.Lock(&b.lock)
	if d.storable(slot, blk, h.Generation) {
		stored = d.stored(h.Generation, blk, len(payload))
		copy(stored, payload)
		d.resultGen[slot][blk] = h.Generation + 1
		if d.resultCount[0] != nil {
			d.resultCount[slot][blk] = count
		}
		if d.final[0] != nil {
			d.final[slot][blk] = false
			d.upAt[slot][blk] = 0
		}
	}
	t.Unlock(&b.lock)
	t.ChargeCopy(len(payload))
	if stored != nil && d.cfg.Uplink == nil {
		t.EmitKept(h, stored, payload)
		return
	}
	t.Emit(h, payload)
}

// prefetchResult hints the store's slot for the result of h's block into
// the cache, one contribution before emitResult copies the result there.
// The slot was last written two generations ago: a job's store is twice
// its vector, and from a few MiB on, no cache holds it. Copied cold, each
// line of the slot waited for its own fetch before the block's lock could
// be released; hinted, the fetches run while the last packet is on its
// way (BenchmarkGenPath at 16 MiB: 2-7% less CPU a packet,
// docs/PERFORMANCE.md). A hint costs no cycles in virtual time.
func (d *Dense) prefetchResult(h *wire.Header, n int) {
	if d.results[0] == nil {
		return
	}
	prefetch.Write(d.stored(h.Generation, h.Block, n))
}

// block is block blk's record (blockLayout).
func (d *Dense) block(blk uint32) *block { return &d.blocks[d.layout.slot(blk)] }

// stored is the first n bytes of block blk's slot in the store of
// generation gen's parity.
func (d *Dense) stored(gen, blk uint32, n int) []byte {
	off := int(blk) * d.cfg.PacketElems * d.esize
	return d.results[gen&1][off : off+n]
}

// storable reports, under the block's lock, whether block blk's result of
// generation gen may go into its slot: not over a newer generation's (of
// the same parity), which a handler finishing late would otherwise
// replace (generation.go).
func (d *Dense) storable(slot, blk, gen uint32) bool {
	held := d.resultGen[slot][blk]
	return held == 0 || held-1 <= gen
}

// resend answers a retransmitted packet of a finished block with the
// stored result, sent to that child alone (FlagRetransmit, Child = the
// child). It runs under the block's lock.
//
// A non-root switch stores its own partial until its parent's result
// replaces it (down): until then the retransmission reaches through the
// tree, the partial going up again (FlagRetransmit), and the host hears
// that the block waits for the parent; the parent counts the partial
// once, by this switch's bit, and answers with its stored result if it
// has finished the block.
func (d *Dense) resend(t *hpu.Task) {
	p := t.Pkt
	slot := p.Hdr.Generation & 1
	if d.results[0] == nil || d.resultGen[slot][p.Hdr.Block] != p.Hdr.Generation+1 {
		return
	}
	if d.cfg.Uplink != nil && (d.final[0] == nil || !d.final[slot][p.Hdr.Block]) {
		if d.final[0] == nil {
			return
		}
		reportParentWaiting(t, d.cfg.Job, d.cfg.Token, d.cfg.DType, d.cfg.Op, p.Hdr.Block)
		if at := d.upAt[slot][p.Hdr.Block]; at != 0 && p.Arrival-at < UplinkResendGap {
			return // sent up for a sibling's retransmission moments ago
		}
		d.upAt[slot][p.Hdr.Block] = p.Arrival
		h := wire.Header{
			Version: wire.Version, Type: wire.TypeData, Flags: wire.FlagFromSwitch | wire.FlagRetransmit, Job: d.cfg.Job, Token: d.cfg.Token,
			Generation: p.Hdr.Generation, Block: p.Hdr.Block, Child: d.cfg.Uplink.Child, DType: d.cfg.DType, Op: d.cfg.Op, Count: p.Hdr.Count,
		}
		t.ChargeCopy(int(p.Hdr.Count) * d.esize)
		t.Emit(&h, d.stored(p.Hdr.Generation, p.Hdr.Block, int(p.Hdr.Count)*d.esize))
		d.Stats.ResentUp.Add(1)
		return
	}
	h := wire.Header{
		Version: wire.Version, Type: wire.TypeResult, Flags: wire.FlagRetransmit, Job: d.cfg.Job, Token: d.cfg.Token,
		Generation: p.Hdr.Generation, Block: p.Hdr.Block, Child: p.Hdr.Child, DType: d.cfg.DType, Op: d.cfg.Op, Count: p.Hdr.Count,
	}
	if d.resultCount[0] != nil && d.resultCount[slot][p.Hdr.Block] != 0 {
		// A partial result goes out as it was: the count, not the child.
		h.Flags |= wire.FlagPartial
		h.Child = d.resultCount[slot][p.Hdr.Block]
	}
	payload := d.stored(p.Hdr.Generation, p.Hdr.Block, int(p.Hdr.Count)*d.esize)
	t.ChargeCopy(len(payload))
	// Copied, not sent from the store: the members may all have had the
	// first send and moved two generations on, rewriting the slot, before
	// the writer reaches this repeat (emitResult).
	t.Emit(&h, payload)
	d.Stats.Resent.Add(1)
}

// down takes the parent's result for a block this switch finished (sent
// its partial up) and multicasts it to the children. The result replaces
// the stored partial, so a child's later retransmission is answered here
// without crossing the parent link again. A result for a generation this
// switch no longer holds (or has not finished) is stale and dropped; a
// repeat (the parent answering a retransmission) goes down again, since
// some child lost it.
func (d *Dense) down(t *hpu.Task) {
	p := t.Pkt
	b := d.block(p.Hdr.Block)
	slot := p.Hdr.Generation & 1
	if d.final[0] == nil {
		d.Stats.Invalid.Add(1) // not built as a non-root switch that keeps results
		return
	}
	t.Lock(&b.lock)
	if d.resultGen[slot][p.Hdr.Block] != p.Hdr.Generation+1 {
		t.Unlock(&b.lock)
		d.Stats.Stale.Add(1)
		return
	}
	copy(d.stored(p.Hdr.Generation, p.Hdr.Block, len(p.Payload)), p.Payload)
	d.final[slot][p.Hdr.Block] = true
	t.Unlock(&b.lock)
	t.ChargeCopy(len(p.Payload))
	h := p.Hdr
	h.Flags, h.Child = 0, 0
	t.Emit(&h, p.Payload)
	d.Stats.Down.Add(1)
}

// freeBufs returns every buffer a work holds.
func (d *Dense) freeBufs(w *work) {
	for j, b := range w.bufs {
		if b != nil {
			d.cfg.Quota.Free(b)
			w.bufs[j] = nil
		}
	}
	w.acc = nil
}

func (d *Dense) releaseWork(w *work) {
	d.freeBufs(w)
	clear(d.bitmap(w))
	d.works.put(w, w.shard)
}

// Close frees every buffer the job still holds (unfinished blocks). The
// daemon calls it when the job ends, once no packet of the job is queued or
// running on the unit, and then releases the quota.
func (d *Dense) Close() {
	for i := range d.blocks {
		d.blocks[i].drop(d.releaseWork)
		d.blocks[i].expires.Store(0)
	}
}
