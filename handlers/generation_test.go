package handlers

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/proto"
	"github.com/flare-net/flare/wire"
)

// Two generations of a block that overlap: some children send generation
// g, then some or all move to g+1 before g is complete (a host that
// abandoned its call after its timeout, or a buggy or hostile member).
// Every result the switch emits must be exactly the reduction of its
// generation's contributions, or carry FlagPartial with the count of the
// contributors it holds (bounded mode); nothing may panic, and every
// buffer and block state must be back when the job closes.

// genDesign is one design under the generation tests.
type genDesign struct {
	name    string
	algo    wire.Algo // dense designs
	b       int       // B (dense multi; sparse: tables per block)
	bounded bool      // dense single with a deadline (partial results)
	sparse  bool
	storage wire.Storage
}

var genDesigns = []genDesign{
	{name: "single", algo: wire.AlgoSingle},
	{name: "single-bounded", algo: wire.AlgoSingle, bounded: true},
	{name: "multi2", algo: wire.AlgoMulti, b: 2},
	{name: "multi4", algo: wire.AlgoMulti, b: 4},
	{name: "tree", algo: wire.AlgoTree},
	{name: "sparse-hash-single", sparse: true, storage: wire.StorageHash, b: 1},
	{name: "sparse-hash-multi2", sparse: true, storage: wire.StorageHash, b: 2},
	{name: "sparse-array-single", sparse: true, storage: wire.StorageArray, b: 1},
	{name: "sparse-array-multi2", sparse: true, storage: wire.StorageArray, b: 2},
}

// genShape is a job's shape under the generation tests: int64 sums, a
// dense block of pe elements; a sparse block of blockElems indices, each
// child sending pairs of them in one packet (of at most packet pairs),
// into hash tables of slots slots (fewer than the indices, so pairs spill).
// A value's code tells apart gens generations in a row (genShape.code), in
// fields of fieldBits bits.
type genShape struct {
	pe, blockElems, pairs, packet, slots int
	gens, fieldBits                      int
}

// genSmall is the virtual-time shape: a dense fold takes 128 cycles, a
// copy 8. genLarge makes the real-time handlers' folds long enough that
// generations meet inside them.
var (
	genSmall = genShape{pe: 16, blockElems: 16, pairs: 5, packet: 8, slots: 4, gens: 2, fieldBits: 4}
	genLarge = genShape{pe: 128, blockElems: 256, pairs: 60, packet: 64, slots: 32, gens: 2, fieldBits: 4}
)

// code is child's code in generation gen: one bit in the field of (child,
// gen mod sh.gens). A reduction's low 56 bits count, field by field, how
// often each child of each generation class was folded into it; p*gens
// fields of fieldBits bits must fit in them.
func (sh genShape) code(p, child int, gen uint32) int64 {
	return 1 << (sh.fieldBits * (child + p*int(gen%uint32(sh.gens))))
}

// fields is how many fields a value's code has for p children.
func (sh genShape) fields(p int) int { return sh.gens * p }

// denseInput is child's contribution to dense block blk in gen.
func (sh genShape) denseInput(p, child, blk int, gen uint32) []byte {
	out := make([]byte, sh.pe*8)
	for i := range sh.pe {
		v := sh.code(p, child, gen) + int64(i+sh.pe*blk)<<56
		binary.LittleEndian.PutUint64(out[i*8:], uint64(v))
	}
	return out
}

// sparseInput is child's pairs of sparse block blk in gen, global
// indices, sorted. (5 is prime to blockElems, a power of two, so the
// indices are distinct.)
func (sh genShape) sparseInput(p, child, blk int, gen uint32) []byte {
	idx := make([]uint32, sh.pairs)
	vals := make([]byte, sh.pairs*8)
	for j := range sh.pairs {
		x := (3*child + 2*int(gen) + 5*j) % sh.blockElems
		idx[j] = uint32(blk*sh.blockElems + x)
		binary.LittleEndian.PutUint64(vals[j*8:], uint64(sh.code(p, child, gen)+int64(x)<<56))
	}
	out, err := wire.AppendPairs(nil, wire.Int64, idx, vals)
	if err != nil {
		panic(err)
	}
	return proto.SortPairs(out, wire.Int64)
}

// genJob is one job's handler under test, built on a unit's memory.
type genJob struct {
	gd     genDesign
	sh     genShape
	p      int
	blocks int
	dense  *Dense
	sparse *Sparse
	q      *hpu.Quota
	works  int // block states in the handler's pool when none is in use
}

// newGenJob builds the handler with a quota of twice what its blocks
// need at once: room for a block's abandoned generation beside its new
// one.
func newGenJob(mem *hpu.Memory, gd genDesign, sh genShape, p, blocks int, deadline int64) (*genJob, error) {
	j := &genJob{gd: gd, sh: sh, p: p, blocks: blocks}
	var err error
	if gd.sparse {
		cfg := SparseConfig{Job: 1, Token: 0x5eed, Children: p, DType: wire.Int64, Op: wire.OpSum, Storage: gd.storage,
			Buffers: gd.b, Elements: blocks * sh.blockElems, BlockElems: sh.blockElems, HashSlots: sh.slots,
			PacketPairs: sh.packet, KeepResults: true}
		if j.q, err = mem.Reserve(2 * blocks * cfg.BlockBuffers(mem.BufferBytes())); err != nil {
			return nil, err
		}
		cfg.Quota = j.q
		if j.sparse, err = NewSparse(cfg); err != nil {
			return nil, err
		}
		j.works = j.sparse.works.len()
		return j, nil
	}
	cfg := DenseConfig{Job: 1, Token: 0x5eed, Algo: gd.algo, Buffers: gd.b, Children: p, DType: wire.Int64, Op: wire.OpSum,
		Elements: blocks * sh.pe, PacketElems: sh.pe, KeepResults: true}
	if gd.bounded {
		cfg.Deadline = deadline
	}
	if j.q, err = mem.Reserve(2 * blocks * cfg.MinBuffers()); err != nil {
		return nil, err
	}
	cfg.Quota = j.q
	if j.dense, err = NewDense(cfg); err != nil {
		return nil, err
	}
	j.works = j.dense.works.len()
	return j, nil
}

func (j *genJob) handler() hpu.Handler {
	if j.sparse != nil {
		return j.sparse
	}
	return j.dense
}

// packet is child's packet of block blk in gen.
func (j *genJob) packet(gen uint32, child, blk int, flags wire.Flags) *hpu.Packet {
	h := wire.Header{Version: wire.Version, Flags: flags, Job: 1, Token: 0x5eed, Generation: gen,
		Child: uint16(child), DType: wire.Int64, Op: wire.OpSum}
	p := &hpu.Packet{Handler: j.handler()}
	if j.sparse != nil {
		pk := proto.SparsePacker{DType: wire.Int64, BlockElems: j.sh.blockElems, PacketPairs: j.sh.packet}
		p.Payload = pk.Packet(nil, &h, uint32(blk), j.sh.sparseInput(j.p, child, blk, gen), 0)
		p.Hdr = h
		return p
	}
	h.Type, h.Block, h.Count = wire.TypeData, uint32(blk), uint32(j.sh.pe)
	p.Hdr, p.Payload = h, j.sh.denseInput(j.p, child, blk, gen)
	return p
}

// tick is a bounded-mode clock tick at now (Dense.Expire).
func (j *genJob) tick(now int64) *hpu.Packet {
	return &hpu.Packet{Arrival: now, Handler: hpu.HandlerFunc(j.dense.Expire)}
}

func (j *genJob) close() {
	if j.sparse != nil {
		j.sparse.Close()
	} else {
		j.dense.Close()
	}
}

// leaks says what the closed job still holds: buffers of its quota, or
// block states missing from its pool.
func (j *genJob) leaks() string {
	free := 0
	if j.sparse != nil {
		free = j.sparse.works.len()
	} else {
		free = j.dense.works.len()
	}
	if u := j.q.InUse(); u != 0 || free != j.works {
		return fmt.Sprintf("after Close: %d buffers in use, %d of %d block states in the pool", u, free, j.works)
	}
	return ""
}

// genKey names one block of one generation.
type genKey struct {
	gen uint32
	blk uint32
}

// genChecker is the egress of the generation tests: it checks every result
// against the reference reduction of its generation's contributions.
type genChecker struct {
	mu      sync.Mutex
	sparse  bool
	sh      genShape
	p       int
	first   map[genKey][]byte                 // dense: the result first sent
	emitted map[genKey]bool                   // dense: the result went out (not a resend)
	asm     map[genKey]*proto.SparseAssembler // sparse: the stream so far
	done    map[genKey]bool                   // a result (or a whole stream) is out
	results int                               // results (streams) checked
	partial int                               // of them, partial (bounded mode)
	wrong   int                               // results that are not their generation's reduction
	errs    []string                          // the first problems
}

func newGenChecker(sparse bool, sh genShape, p int) *genChecker {
	return &genChecker{sparse: sparse, sh: sh, p: p, first: map[genKey][]byte{}, emitted: map[genKey]bool{}, asm: map[genKey]*proto.SparseAssembler{}, done: map[genKey]bool{}}
}

func (c *genChecker) fail(format string, args ...any) {
	c.wrong++
	if len(c.errs) < 4 {
		c.errs = append(c.errs, fmt.Sprintf(format, args...))
	}
}

// complete reports whether generation gen's block blk has its result out.
func (c *genChecker) complete(gen uint32, blk int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done[genKey{gen, uint32(blk)}]
}

func (c *genChecker) Emit(h *wire.Header, payload []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case h.Type == wire.TypeError:
		return // a waiting report
	case c.sparse && (h.Type == wire.TypeSparse || h.Type == wire.TypeSpill):
		c.sparseEmit(h, payload)
	case !c.sparse && h.Type == wire.TypeResult:
		c.denseEmit(h, payload)
	default:
		c.fail("unexpected %v packet (generation %d block %d)", h.Type, h.Generation, h.Block)
	}
}

func (c *genChecker) denseEmit(h *wire.Header, payload []byte) {
	k := genKey{h.Generation, h.Block}
	if h.Flags&wire.FlagRetransmit == 0 {
		if c.emitted[k] {
			c.fail("generation %d block %d emitted twice", k.gen, k.blk)
		}
		c.emitted[k] = true
	}
	if prev, ok := c.first[k]; ok {
		if !bytes.Equal(prev, payload) {
			c.fail("generation %d block %d: result sent again differs from the first", k.gen, k.blk)
		}
		return
	}
	// In real time a retransmission may be answered from the stored
	// result before the handler that stored it has emitted it: the first
	// copy out is checked, whichever it is.
	c.first[k] = bytes.Clone(payload)
	c.done[k] = true
	c.results++
	if len(payload) != c.sh.pe*8 || int(h.Count) != c.sh.pe {
		c.fail("generation %d block %d: %d bytes, count %d", k.gen, k.blk, len(payload), h.Count)
		return
	}
	ranks := make([]int, 0, c.p)
	if h.Flags&wire.FlagPartial != 0 {
		c.partial++
		var ok bool
		if ranks, ok = c.decode(k.gen, payload); !ok || len(ranks) != int(h.Child) || len(ranks) == 0 {
			c.fail("generation %d block %d: partial result of %d contributors holds %s", k.gen, k.blk, h.Child, c.describe(payload))
			return
		}
	} else {
		for r := range c.p {
			ranks = append(ranks, r)
		}
	}
	inputs := make([][]byte, len(ranks))
	for i, r := range ranks {
		inputs[i] = c.sh.denseInput(c.p, r, int(k.blk), k.gen)
	}
	want, err := elem.Reference(wire.Int64, wire.OpSum, inputs)
	if err != nil {
		panic(err)
	}
	if !bytes.Equal(payload, want) {
		c.fail("generation %d block %d (flags %v, child %d): holds %s, want ranks %v of generation %d",
			k.gen, k.blk, h.Flags, h.Child, c.describe(payload), ranks, k.gen)
	}
}

// decode reads the contributors of a dense result of gen from its first
// element: each child's field must be 0 or 1, the other generations' 0.
func (c *genChecker) decode(gen uint32, payload []byte) (ranks []int, ok bool) {
	v := binary.LittleEndian.Uint64(payload) & (1<<56 - 1)
	bits := c.sh.fieldBits
	for f := range c.sh.fields(c.p) {
		n := v >> (bits * f) & (1<<bits - 1)
		switch {
		case n == 0:
		case n == 1 && f/c.p == int(gen%uint32(c.sh.gens)):
			ranks = append(ranks, f%c.p)
		default:
			return nil, false
		}
	}
	return ranks, v>>(bits*c.sh.fields(c.p)) == 0
}

// describe names what a dense result holds: "rank r of generation
// class q × n" (q = generation mod sh.gens) for each field of its first
// element.
func (c *genChecker) describe(payload []byte) string {
	v := binary.LittleEndian.Uint64(payload) & (1<<56 - 1)
	bits := c.sh.fieldBits
	var parts []string
	for f := range c.sh.fields(c.p) {
		if n := v >> (bits * f) & (1<<bits - 1); n != 0 {
			parts = append(parts, fmt.Sprintf("rank %d (class %d) ×%d", f%c.p, f/c.p, n))
		}
	}
	if rest := v >> (bits * c.sh.fields(c.p)); rest != 0 {
		parts = append(parts, fmt.Sprintf("overflow %#x", rest))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func (c *genChecker) sparseEmit(h *wire.Header, payload []byte) {
	blk, _ := wire.SplitSparseBlock(h.Block)
	k := genKey{h.Generation, blk}
	if c.done[k] {
		return // a resend of a stream that was whole
	}
	a := c.asm[k]
	if a == nil {
		a = &proto.SparseAssembler{DType: wire.Int64}
		c.asm[k] = a
	}
	complete, err := a.Add(h, payload)
	if err != nil {
		c.fail("generation %d block %d: %v", k.gen, k.blk, err)
		return
	}
	if !complete {
		return
	}
	c.done[k] = true
	c.results++
	got, err := a.Merge(nil, wire.OpSum, uint32(int(blk)*c.sh.blockElems))
	if err != nil {
		c.fail("generation %d block %d: %v", k.gen, k.blk, err)
		return
	}
	inputs := make([][]byte, c.p)
	for r := range inputs {
		inputs[r] = c.sh.sparseInput(c.p, r, int(blk), k.gen)
	}
	if err := elem.CheckSparse(wire.Int64, wire.OpSum, inputs, got); err != nil {
		c.fail("generation %d block %d: %v", k.gen, k.blk, err)
	}
}

// genEvent is one child's packet of one block and generation.
type genEvent struct {
	child int
	gen   uint32
	blk   int
	flags wire.Flags // FlagRetransmit: a host's resend
}

// genOrders calls fn with every arrival order of two overlapping
// generations among p children: each non-empty set S of children sends
// generation g, and every child sends g+1, a child of S after its g.
func genOrders(p int, g uint32, fn func(events []genEvent)) {
	for s := 1; s < 1<<p; s++ {
		left := make([]int, p) // packets each child still has to send
		for c := range p {
			left[c] = 1
			if s&(1<<c) != 0 {
				left[c] = 2
			}
		}
		n := p + bits.OnesCount(uint(s))
		events := make([]genEvent, 0, n)
		var rec func()
		rec = func() {
			if len(events) == n {
				fn(events)
				return
			}
			for c := range p {
				if left[c] == 0 {
					continue
				}
				gen := g + 1
				if left[c] == 2 {
					gen = g
				}
				left[c]--
				events = append(events, genEvent{child: c, gen: gen})
				rec()
				events = events[:len(events)-1]
				left[c]++
			}
		}
		rec()
	}
}

// genGaps are the arrival patterns: cycles between consecutive packets
// (the k-th gap is gaps[k % len]). A dense fold of a block takes 128
// cycles, a copy 8, so 0 and 10 land packets inside one another's
// handlers, 100 inside a fold, 300 after it.
var genGaps = [][]int64{{0}, {10}, {100}, {300}, {40, 250}}

// genOutcome is what one interleaving produced.
type genOutcome struct {
	wrong, panics, leaks, stuck int
	results, partial            int
	problem                     string
}

// Cycles of the virtual runs: the bounded-mode deadline and tick period,
// and the time before the hosts of g+1 retransmit.
const (
	genDeadline = 400
	genTick     = 150
	genRTO      = 3000
)

// genUnit is a virtual unit that successive interleavings share (each
// with its own job, started when the unit is idle, so runs stay
// independent and deterministic); a run that panics leaves it broken, and
// the next run builds another.
type genUnit struct {
	u   *hpu.VirtualUnit
	chk *genChecker // the egress of the present run
	l1  int         // the unit's L1 bytes; 0 is 16 KiB (16 buffers)
}

func (g *genUnit) Emit(h *wire.Header, payload []byte) { g.chk.Emit(h, payload) }

func (g *genUnit) unit() *hpu.VirtualUnit {
	if g.u == nil {
		l1 := g.l1
		if l1 == 0 {
			l1 = 16 << 10
		}
		u, err := hpu.NewVirtual(hpu.Config{Clusters: 1, CoresPerCluster: 8, QueueDepth: 64, L1Bytes: l1, BufferBytes: 1024}, g, nil)
		if err != nil {
			panic(err)
		}
		g.u = u
	}
	return g.u
}

func (g *genUnit) close() {
	if g.u != nil {
		g.u.Close()
		g.u = nil
	}
}

// runGenInterleaving plays one arrival order on the unit with a fresh job
// of sh's shape and blocks blocks: the packets at their cycles, then,
// while a block of the newest generation sent has no result, every
// child's packet of every block in that generation again (a
// retransmission, as a host whose result is late sends), and checks what
// came out.
func runGenInterleaving(gu *genUnit, gd genDesign, sh genShape, p, blocks int, events []genEvent, gaps []int64) (out genOutcome) {
	chk := newGenChecker(gd.sparse, sh, p)
	gu.chk = chk
	u := gu.unit()
	job, err := newGenJob(u.Memory(), gd, sh, p, blocks, genDeadline)
	if err != nil {
		panic(err) // the unit's memory is whole: a run that leaked replaced it
	}
	defer job.q.Release()
	defer func() {
		if r := recover(); r != nil {
			out.panics++
			out.problem = fmt.Sprintf("panic: %v", r)
			gu.close()
		}
	}()
	submit := func(pk *hpu.Packet) {
		if err := u.Submit(pk); err != nil {
			panic(err)
		}
	}
	ticks := func(from, to int64) {
		if gd.bounded {
			for at := from; at <= to; at += genTick {
				submit(job.tick(at))
			}
		}
	}
	start := u.Now() + genRTO
	at := start
	last := uint32(0)
	for k, ev := range events {
		if k > 0 {
			at += gaps[(k-1)%len(gaps)]
		}
		pk := job.packet(ev.gen, ev.child, ev.blk, ev.flags)
		pk.Arrival = at
		submit(pk)
		last = max(last, ev.gen)
	}
	ticks(start, at+genRTO)
	runErr := u.Run()
	complete := func() bool {
		for blk := range blocks {
			if !chk.complete(last, blk) {
				return false
			}
		}
		return true
	}
	for try := 0; runErr == nil && try < 4 && !complete(); try++ {
		at = u.Now() + genRTO
		for blk := range blocks {
			for c := range p {
				pk := job.packet(last, c, blk, wire.FlagRetransmit)
				pk.Arrival = at + int64(blk*p+c)
				submit(pk)
			}
		}
		ticks(at, at+genRTO)
		runErr = u.Run()
	}
	out.wrong, out.results, out.partial = chk.wrong, chk.results, chk.partial
	if len(chk.errs) > 0 {
		out.problem = chk.errs[0]
	}
	switch {
	case runErr != nil:
		out.stuck++
		out.problem = runErr.Error()
		gu.close()
	case !complete():
		out.stuck++
		if out.problem == "" {
			out.problem = fmt.Sprintf("generation %d never completed", last)
		}
	}
	job.close()
	if l := job.leaks(); l != "" {
		out.leaks++
		if out.problem == "" {
			out.problem = l
		}
		gu.close() // its memory is not whole
	}
	return out
}

// formatEvents writes an arrival order as "c0g9 c1g10 ...", with "b1"
// for a packet of block 1 and "r" for a retransmission.
func formatEvents(events []genEvent) string {
	var b strings.Builder
	for i, ev := range events {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "c%dg%d", ev.child, ev.gen)
		if ev.blk != 0 {
			fmt.Fprintf(&b, "b%d", ev.blk)
		}
		if ev.flags&wire.FlagRetransmit != 0 {
			b.WriteByte('r')
		}
	}
	return b.String()
}

// Every design, every arrival order of two overlapping generations of a
// block among 4 children, over several arrival patterns, in virtual time
// (deterministic: a handler runs until it charges cycles or waits for a
// lock, so every order of handler steps these arrivals produce is played).
func TestGenerationsInterleaved(t *testing.T) {
	const p, g = 4, 9
	orders := 0
	genOrders(p, g, func([]genEvent) { orders++ })
	// Under the race detector (the runs are one goroutine at a time; its
	// checks are the real-time test's business) every 8th order of one
	// pattern; with -short every order of two.
	gaps, stride := genGaps, 1
	switch {
	case raceEnabled:
		gaps, stride = gaps[:1], 8
	case testing.Short():
		gaps = gaps[:2]
	}
	for _, gd := range genDesigns {
		t.Run(gd.name, func(t *testing.T) {
			var total genOutcome
			runs, bad := 0, 0
			var first []string
			gu := &genUnit{}
			defer gu.close()
			for _, gp := range gaps {
				k := 0
				genOrders(p, g, func(events []genEvent) {
					if k++; (k-1)%stride != 0 {
						return
					}
					o := runGenInterleaving(gu, gd, genSmall, p, 1, events, gp)
					runs++
					total.wrong += o.wrong
					total.panics += o.panics
					total.leaks += o.leaks
					total.stuck += o.stuck
					total.results += o.results
					total.partial += o.partial
					if o.wrong+o.panics+o.leaks+o.stuck > 0 {
						bad++
						if len(first) < 5 {
							first = append(first, fmt.Sprintf("gaps %v, %s: %s", gp, formatEvents(events), o.problem))
						}
					}
				})
			}
			t.Logf("%s: %d interleavings (%d of %d orders × %d arrival patterns), %d results checked (%d partial); "+
				"%d wrong results, %d panics, %d leaks, %d stuck; %d interleavings failed",
				gd.name, runs, (orders+stride-1)/stride, orders, len(gaps), total.results, total.partial, total.wrong, total.panics, total.leaks, total.stuck, bad)
			if bad > 0 {
				t.Errorf("%s: %d of %d interleavings failed; first:\n  %s", gd.name, bad, runs, strings.Join(first, "\n  "))
			}
		})
	}
}

// The same in real time: the concurrent unit (a goroutine per core, real
// locks), hosts that move to the next generation whenever they like, at
// most one ahead of the slowest, and leave a fraction of their blocks
// unsent (a host abandoning its call). Every result is checked as above;
// the last generation is sent by everyone, retransmitted until every
// block of it is out, and then the job must hold nothing. Run it under
// -race: the detector sees any handler touching a work another
// generation owns.
func TestGenerationsRealTime(t *testing.T) {
	const p, blocks = 6, 2
	gens := uint32(400)
	if raceEnabled || testing.Short() {
		gens = 100
	}
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	for _, gd := range genDesigns {
		t.Run(gd.name, func(t *testing.T) {
			runGenRealTime(t, gd, p, blocks, gens, seed)
		})
	}
}

// genRealDeadline is bounded mode's deadline in real time (ns) and
// genRealTick its clock tick.
const (
	genRealDeadline = int64(2 * time.Millisecond)
	genRealTick     = 200 * time.Microsecond
)

func runGenRealTime(t *testing.T, gd genDesign, p, blocks int, gens uint32, seed uint64) {
	chk := newGenChecker(gd.sparse, genLarge, p)
	var submitted, handled atomic.Int64
	unit, err := hpu.New(hpu.Config{Clusters: 2, CoresPerCluster: 4, QueueDepth: 64, L1Bytes: 64 << 10, BufferBytes: 1024}, chk,
		func(*hpu.Packet, int) { handled.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	job, err := newGenJob(unit.Memory(), gd, genLarge, p, blocks, genRealDeadline)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	unitDone := make(chan struct{})
	go func() { unit.Run(ctx); close(unitDone) }()
	submit := func(pk *hpu.Packet) {
		pk.Arrival = time.Now().UnixNano()
		submitted.Add(1)
		if err := unit.SubmitWait(ctx, pk); err != nil {
			t.Errorf("submit: %v", err)
		}
	}
	ticking := make(chan struct{})
	var tickWG sync.WaitGroup
	if gd.bounded {
		tickWG.Add(1)
		go func() {
			defer tickWG.Done()
			for {
				select {
				case <-ticking:
					return
				case <-time.After(genRealTick):
					submit(job.tick(0))
				}
			}
		}()
	}

	// progress[i] is the generation host i has started; a host starts
	// generation g once every host has started g-1.
	progress := make([]atomic.Uint32, p)
	var hosts sync.WaitGroup
	for h := range p {
		hosts.Add(1)
		go func() {
			defer hosts.Done()
			r := rand.New(rand.NewPCG(seed, uint64(h)))
			for g := uint32(1); g <= gens; g++ {
				for i := range p {
					for progress[i].Load() < g-1 {
						runtime.Gosched()
					}
				}
				progress[h].Store(g)
				skip := g < gens && r.IntN(4) == 0
				for _, blk := range r.Perm(blocks) {
					if skip && r.IntN(2) == 0 {
						continue // this host abandons the block's generation
					}
					submit(job.packet(g, h, blk, 0))
					if r.IntN(3) == 0 {
						runtime.Gosched()
					}
				}
			}
		}()
	}
	hosts.Wait()
	// The last generation, retransmitted until every block of it is out.
	deadline := time.Now().Add(30 * time.Second)
	for {
		missing := 0
		for blk := range blocks {
			if !chk.complete(gens, blk) {
				missing++
				for c := range p {
					submit(job.packet(gens, c, blk, wire.FlagRetransmit))
				}
			}
		}
		if missing == 0 || time.Now().After(deadline) {
			if missing > 0 {
				t.Errorf("%s: %d blocks of the last generation never completed", gd.name, missing)
			}
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(ticking)
	tickWG.Wait()
	stop()
	<-unitDone
	if s, h := submitted.Load(), handled.Load(); s != h {
		t.Errorf("%d packets submitted, %d handled", s, h)
	}
	job.close()
	if l := job.leaks(); l != "" {
		t.Errorf("%s: %s", gd.name, l)
	}
	chk.mu.Lock()
	defer chk.mu.Unlock()
	t.Logf("%s: %d generations × %d blocks × %d hosts, %d packets: %d results checked (%d partial), %d wrong",
		gd.name, gens, blocks, p, submitted.Load(), chk.results, chk.partial, chk.wrong)
	if chk.wrong > 0 {
		t.Errorf("%s: %d wrong results; first:\n  %s", gd.name, chk.wrong, strings.Join(chk.errs, "\n  "))
	}
}

// TestBlocksOwnCacheLines: a job's block table gives every block a cache
// line of its own, so that two CPUs handling neighbouring blocks do not
// contend for one line (cacheLine); a Count's shards are a line pair apart
// (linePair).
func TestBlocksOwnCacheLines(t *testing.T) {
	for name, size := range map[string]uintptr{"dense": unsafe.Sizeof(block{}), "sparse": unsafe.Sizeof(sparseBlock{})} {
		if size != cacheLine {
			t.Errorf("a %s block is %d bytes, want %d (a cache line)", name, size, cacheLine)
		}
	}
	var c Count
	if size := unsafe.Sizeof(c.shards[0]); size != linePair {
		t.Errorf("a Count shard is %d bytes, want %d (a line pair)", size, linePair)
	}
}

// TestWorkLayout: what a dense packet of the common case touches of its
// block's work (the fields before wide) fits the work's first cache line,
// and a work is a whole number of lines, so that in a line-aligned
// allocation each work's first line is its own.
func TestWorkLayout(t *testing.T) {
	if size := unsafe.Sizeof(work{}); size != workBytes || size%cacheLine != 0 {
		t.Errorf("a work is %d bytes, want %d, a multiple of %d", size, workBytes, cacheLine)
	}
	if hot := unsafe.Offsetof(work{}.wide); hot > cacheLine {
		t.Errorf("a packet's fields of a work take %d bytes, more than a cache line (%d)", hot, cacheLine)
	}
	if size := unsafe.Sizeof(poolShard[work]{}); unsafe.Sizeof(uintptr(0)) == 8 && size != linePair {
		t.Errorf("a work stack is %d bytes, want a line pair (%d)", size, linePair)
	}
}

// TestBlockLayout: a block table's layout is a permutation of its
// records, one a block, and each of its regions holds the blocks of one
// owner key, (b / run) mod regions, in block order, back to back: with
// readers a power of two up to 16, each region is one reader's blocks,
// and two readers' records meet only where regions do; with one reader
// the table is in block order.
func TestBlockLayout(t *testing.T) {
	for _, readers := range []int{0, 1, 2, 3, 4, 16, 256} {
		regions := uint32(1)
		for int(regions) < readers && regions < 1<<maxRegionBits {
			regions *= 2
		}
		for _, run := range []int{0, 1, 2, 64, MaxSteerRun} {
			for _, n := range []uint32{1, 2, 7, 15, 16, 17, 100, 1000, 1024, 16385, 70001} {
				l := newBlockLayout(n, readers, run)
				r := uint32(max(run, 1))
				key := make([]uint32, n) // the owner key of the block in each record
				seen := make([]bool, n)
				last := map[uint32]uint32{} // per key, its last record so far
				for b := range n {
					s := l.slot(b)
					if s >= n || seen[s] {
						t.Fatalf("%d readers, run %d, %d blocks: block %d in record %d (taken: %v)", readers, run, n, b, s, s < n && seen[s])
					}
					seen[s] = true
					k := b / r % regions
					key[s] = k
					if prev, ok := last[k]; ok && s != prev+1 {
						t.Fatalf("%d readers, run %d, %d blocks: block %d (key %d) in record %d, after its key's record %d", readers, run, n, b, k, s, prev)
					}
					last[k] = s
					if readers <= 1 && s != b {
						t.Fatalf("one reader, run %d, %d blocks: block %d in record %d", run, n, b, s)
					}
				}
				changes := uint32(0)
				for s := uint32(1); s < n; s++ {
					if key[s] != key[s-1] {
						changes++
					}
				}
				if changes >= regions {
					t.Errorf("%d readers, run %d, %d blocks: the owner key changes %d times along the table; want fewer than %d (one region a key)", readers, run, n, changes, regions)
				}
			}
		}
	}
}

// genFuzz is FuzzGenerations' shape: genSmall's sizes, with codes that
// tell four generations in a row apart (p ≤ 4: 16 fields of 3 bits).
var genFuzz = genShape{pe: 16, blockElems: 16, pairs: 5, packet: 8, slots: 4, gens: 4, fieldBits: 3}

// genFuzzBase is the first generation of FuzzGenerations' schedules.
const genFuzzBase = 9

// fuzzSchedule reads a FuzzGenerations input: the design, P (2 to 4) and
// the blocks (1 or 2), then up to 48 packets, two bytes each: the first
// names the child (bits 0-1, mod P), the generation (bits 2-3, added to
// genFuzzBase), the block (bit 4, mod blocks) and a retransmission (bit
// 5); the second is the gap before the next packet in 2-cycle steps
// (0 to 510 cycles: inside a copy, a fold, or after both).
func fuzzSchedule(data []byte) (gd genDesign, p, blocks int, events []genEvent, gaps []int64) {
	if len(data) < 4 {
		return gd, 0, 0, nil, nil
	}
	gd = genDesigns[int(data[0])%len(genDesigns)]
	p, blocks = 2+int(data[1])%3, 1+int(data[1]>>2)&1
	for rest := data[2:]; len(rest) >= 2 && len(events) < 48; rest = rest[2:] {
		ev := genEvent{child: int(rest[0]&3) % p, gen: genFuzzBase + uint32(rest[0]>>2&3), blk: int(rest[0]>>4&1) % blocks}
		if rest[0]&0x20 != 0 {
			ev.flags = wire.FlagRetransmit
		}
		events = append(events, ev)
		gaps = append(gaps, 2*int64(rest[1]))
	}
	return gd, p, blocks, events, gaps
}

// FuzzGenerations plays schedules the exhaustive sweep above does not:
// up to four generations of up to two blocks, in any order (a child may go
// back to a generation it left, or skip one), with retransmissions and
// any gaps, on every design, and holds the switch to the same rules: every
// result is its generation's reduction (or flagged partial and says of
// whom), nothing panics, the newest generation completes once every child
// sends it, and the job gives back every buffer when it closes.
func FuzzGenerations(f *testing.F) {
	for d := range genDesigns {
		// two generations overlapping, children abandoning g for g+1
		f.Add([]byte{byte(d), 1, 0x00, 10, 0x05, 0, 0x01, 64, 0x04, 150, 0x06, 5, 0x07, 0})
		// four generations, two blocks, stale and retransmitted packets
		f.Add([]byte{byte(d), 6, 0x00, 0, 0x11, 4, 0x0c, 60, 0x1d, 2, 0x21, 0, 0x04, 200, 0x08, 1, 0x15, 0, 0x3c, 30, 0x0d, 255})
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		gd, p, blocks, events, gaps := fuzzSchedule(data)
		if len(events) == 0 {
			return
		}
		gu := &genUnit{l1: 64 << 10}
		defer gu.close()
		o := runGenInterleaving(gu, gd, genFuzz, p, blocks, events, gaps)
		if o.wrong+o.panics+o.leaks+o.stuck > 0 {
			t.Fatalf("%s, P=%d, %d blocks, gaps %v, %s: %s", gd.name, p, blocks, gaps, formatEvents(events), o.problem)
		}
	})
}
