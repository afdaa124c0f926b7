package handlers

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/wire"
)

// design is one dense aggregation design under test.
type design struct {
	algo wire.Algo
	b    int
}

func (d design) String() string {
	if d.algo == wire.AlgoMulti {
		return fmt.Sprintf("multi%d", d.b)
	}
	return d.algo.String()
}

var designs = []design{{wire.AlgoSingle, 0}, {wire.AlgoMulti, 2}, {wire.AlgoMulti, 4}, {wire.AlgoTree, 0}}

// supported lists the built-in ops defined on dt.
func supported(dt wire.DType) []wire.Op {
	if dt.IsFloat() {
		return []wire.Op{wire.OpSum, wire.OpMin, wire.OpMax, wire.OpProd}
	}
	return wire.Ops
}

// randomInputs makes P vectors of n elements. Floats are drawn so no order
// of evaluation overflows: moderate magnitudes, values near 1 for products,
// and signed zeros mixed in for min/max. Float16 products draw closer to 1,
// within 2^±(13/P), so that every partial product of up to P factors stays
// in its normal range (2⁻¹⁴ to 65504), where Check's bound holds.
func randomInputs(r *rand.Rand, dt wire.DType, op wire.Op, p, n int) [][]byte {
	sz := dt.Size()
	in := make([][]byte, p)
	for i := range in {
		in[i] = make([]byte, n*sz)
		for j := 0; j < n; j++ {
			b := in[i][j*sz:]
			if !dt.IsFloat() {
				for k := 0; k < sz; k++ {
					b[k] = byte(r.Uint32())
				}
				continue
			}
			var v float64
			switch {
			case op == wire.OpProd:
				u := r.Float64()
				v = 0.5 + 1.5*u
				if dt == wire.Float16 {
					v = math.Exp2((2*u - 1) * 13 / float64(p))
				}
				if r.IntN(2) == 0 {
					v = -v
				}
			case r.IntN(10) == 0:
				v = math.Copysign(0, float64(r.IntN(2)*2-1))
			default:
				v = (r.Float64()*2 - 1) * math.Ldexp(1, r.IntN(20)-10)
			}
			elem.StoreFloat(dt, b, v)
		}
	}
	return in
}

// capture is an egress that keeps the result of each block.
type capture struct {
	out     []byte
	pe      int
	emitted map[uint32]int
	up      int
}

func (c *capture) Emit(h *wire.Header, payload []byte) {
	if h.Type == wire.TypeError {
		return // a waiting report (CodeWaiting): no result
	}
	if h.Type == wire.TypeData && h.Flags&wire.FlagFromSwitch != 0 {
		c.up++
	}
	copy(c.out[int(h.Block)*c.pe:], payload)
	c.emitted[h.Block]++
}

// virtualRun feeds packets to a Dense handler in the given order, 100
// cycles apart, on a VirtualUnit of cores cores: a deterministic arrival
// order.
func virtualRun(d *Dense, eg hpu.Egress, pkts []*hpu.Packet, cores int) {
	v := newVUnit(eg, cores)
	defer v.close()
	for i, p := range pkts {
		p.Handler = d
		v.submit(p, int64(i)*100)
	}
	v.drain()
}

// makePackets builds every host's packets of one generation, plus a
// duplicate of a fraction dup of them, shuffled.
func makePackets(r *rand.Rand, inputs [][]byte, dt wire.DType, op wire.Op, pe int, gen uint32, dup float64) []*hpu.Packet {
	sz := dt.Size()
	var pkts []*hpu.Packet
	for rank, in := range inputs {
		n := len(in) / sz
		for blk, lo := 0, 0; lo < n; blk, lo = blk+1, lo+pe {
			cnt := min(pe, n-lo)
			p := &hpu.Packet{
				Hdr: wire.Header{Version: wire.Version, Type: wire.TypeData, Job: 1, Generation: gen, Block: uint32(blk),
					Child: uint16(rank), DType: dt, Op: op, Count: uint32(cnt)},
				Payload: in[lo*sz : (lo+cnt)*sz],
			}
			pkts = appendMaybeTwice(r, pkts, p, dup)
		}
	}
	r.Shuffle(len(pkts), func(i, j int) { pkts[i], pkts[j] = pkts[j], pkts[i] })
	return pkts
}

// appendMaybeTwice appends p, and with probability dup a retransmitted
// copy of it.
func appendMaybeTwice(r *rand.Rand, pkts []*hpu.Packet, p *hpu.Packet, dup float64) []*hpu.Packet {
	pkts = append(pkts, p)
	if r.Float64() < dup {
		q := *p
		q.Hdr.Flags |= wire.FlagRetransmit
		pkts = append(pkts, &q)
	}
	return pkts
}

// newTestDense builds a Dense over its own memory, large enough for every
// block of the job to be open at once.
func newTestDense(t testing.TB, dg design, dt wire.DType, op wire.Op, p, n, pe int) *Dense {
	t.Helper()
	nblocks := (n + pe - 1) / pe
	per := 1
	if dg.algo == wire.AlgoMulti {
		per = dg.b
	} else if dg.algo == wire.AlgoTree {
		per = p
	}
	return buildDense(t, DenseConfig{Job: 1, Algo: dg.algo, Buffers: dg.b, Children: p, DType: dt, Op: op,
		Elements: n, PacketElems: pe}, max(nblocks*per, 4))
}

// buildDense builds a Dense of cfg with a quota of bufs 1 KiB buffers, on
// a unit of one cluster whose L1 holds just those (or the least L1 a unit
// has, hpu.MinL1Bytes, where that is more).
func buildDense(t testing.TB, cfg DenseConfig, bufs int) *Dense {
	t.Helper()
	unit, err := hpu.New(hpu.Config{Clusters: 1, L1Bytes: max(bufs*1024, hpu.MinL1Bytes), BufferBytes: 1024}, &nopEgress{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Quota, err = unit.Memory().Reserve(bufs); err != nil {
		t.Fatal(err)
	}
	d, err := NewDense(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

type nopEgress struct{}

func (nopEgress) Emit(*wire.Header, []byte) {}

// Every design × dtype × op, random P and lengths, arrival orders
// shuffled, 10% duplicates, two generations: integers and min/max exact,
// float sum/prod within the rounding bound of Check.
func TestDenseRandomArrivalOrders(t *testing.T) {
	r, seed := seededRand(t, 0)
	ps := []int{1, 2, 3, 7, 8, 13, 64}
	for _, dg := range designs {
		for _, dt := range wire.DTypes {
			for _, op := range supported(dt) {
				p := ps[r.IntN(len(ps))]
				pe := 1024 / dt.Size()
				n := 1 + r.IntN(3*pe)
				if r.IntN(4) == 0 {
					n = 1
				}
				name := fmt.Sprintf("%s/%s/%s/P=%d/n=%d", dg, dt, op, p, n)
				d := newTestDense(t, dg, dt, op, p, n, pe)
				for gen := uint32(1); gen <= 2; gen++ {
					inputs := randomInputs(r, dt, op, p, n)
					eg := &capture{out: make([]byte, n*dt.Size()), pe: pe * dt.Size(), emitted: map[uint32]int{}}
					virtualRun(d, eg, makePackets(r, inputs, dt, op, pe, gen, 0.1), 8)
					if len(eg.emitted) != d.Blocks() {
						t.Fatalf("%s (seed %d): %d of %d blocks emitted", name, seed, len(eg.emitted), d.Blocks())
					}
					for blk, k := range eg.emitted {
						if k != 1 {
							t.Fatalf("%s (seed %d): block %d emitted %d times", name, seed, blk, k)
						}
					}
					if err := elem.Check(dt, op, inputs, eg.out); err != nil {
						t.Fatalf("%s gen %d (seed %d): %v", name, gen, seed, err)
					}
				}
				if d.Config().Quota.InUse() != 0 {
					t.Fatalf("%s: %d buffers still held after every block completed", name, d.Config().Quota.InUse())
				}
			}
		}
	}
}

// treeReference folds inputs with the tree handler's fixed pairing, written
// plainly: leaves padded to a power of two, left ⊕ right at every level.
func treeReference(t *testing.T, dt wire.DType, op wire.Op, inputs [][]byte) []byte {
	var fold func(lo, width int) []byte
	fold = func(lo, width int) []byte {
		if width == 1 {
			if lo < len(inputs) {
				return bytes.Clone(inputs[lo])
			}
			return nil
		}
		l, rr := fold(lo, width/2), fold(lo+width/2, width/2)
		if l == nil || rr == nil {
			if l == nil {
				return rr
			}
			return l
		}
		out, err := elem.Reference(dt, op, [][]byte{l, rr})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	w := 1
	for w < len(inputs) {
		w *= 2
	}
	return fold(0, w)
}

// Tree float sums are bit-identical across 100 arrival orders, and equal
// to the same pairing computed plainly.
func TestTreeReproducible(t *testing.T) {
	r, seed := seededRand(t, 1)
	treeCases(t, r, func(c treeCase) {
		dt, n, pe := c.DType, c.N, c.PE
		d := newTestDense(t, design{wire.AlgoTree, 0}, dt, wire.OpSum, c.P, n, pe)
		for run := 1; run <= 100; run++ {
			eg := &capture{out: make([]byte, n*dt.Size()), pe: pe * dt.Size(), emitted: map[uint32]int{}}
			virtualRun(d, eg, makePackets(r, c.Inputs, dt, wire.OpSum, pe, uint32(run), 0.1), 8)
			if !bytes.Equal(eg.out, c.Want) {
				t.Fatalf("%s run %d (seed %d): result differs from the fixed-pairing reference", dt, run, seed)
			}
		}
	})
}

// treeCase is an input of the tree reproducibility tests: P hosts'
// vectors of N elements of DType, PE to a packet (two full packets and
// part of a third), and Want, their sum in the tree's fixed pairing.
type treeCase struct {
	DType    wire.DType
	P, N, PE int
	Inputs   [][]byte
	Want     []byte
}

// treeCases calls f with a case of each float dtype, its vectors drawn
// from r as f's turn comes.
func treeCases(t *testing.T, r *rand.Rand, f func(treeCase)) {
	for _, dt := range []wire.DType{wire.Float32, wire.Float64, wire.BFloat16, wire.Float16} {
		c := treeCase{DType: dt, P: 13, PE: 1024 / dt.Size()}
		c.N = 2*c.PE + 17
		c.Inputs = randomInputs(r, dt, wire.OpSum, c.P, c.N)
		c.Want = treeReference(t, dt, wire.OpSum, c.Inputs)
		f(c)
	}
}

// seededRand returns a generator seeded at random, on the given stream,
// and its seed, which it logs so that a failure can be replayed.
func seededRand(t *testing.T, stream uint64) (*rand.Rand, uint64) {
	t.Helper()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, stream)), seed
}

// In virtual time the contention of the single buffer is exact: P packets
// of one block that arrive together on different cores wait for each other.
func TestSingleBufferContentionVirtual(t *testing.T) {
	const p = 64
	r := rand.New(rand.NewPCG(3, 3))
	inputs := randomInputs(r, wire.Int32, wire.OpSum, p, 256) // one block
	d := newTestDense(t, design{wire.AlgoSingle, 0}, wire.Int32, wire.OpSum, 8, 256, 256)
	eg := &capture{out: make([]byte, 1024), pe: 1024, emitted: map[uint32]int{}}
	v := newVUnit(eg, 8)
	defer v.close()
	for _, pk := range makePackets(r, inputs[:8], wire.Int32, wire.OpSum, 256, 1, 0) {
		pk.Handler = d
		v.submit(pk, 0)
	}
	v.drain()
	var wait int64
	for _, c := range v.u.Stats().Cores {
		wait += c.LockWaitCycles
	}
	// Handler i waits for the i before it: a copy (64) then i−1 folds (1024).
	var want int64
	for i := int64(1); i < 8; i++ {
		want += 64 + (i-1)*1024
	}
	if wait < want {
		t.Fatalf("virtual single buffer: %d cycles waiting, want at least %d", wait, want)
	}
}

// TestDenseConfigValidate: NewDense refuses a config with a field out of
// range, before it allocates anything, and takes the steer runs a switch
// may have.
func TestDenseConfigValidate(t *testing.T) {
	unit, _ := hpu.New(hpu.Config{Clusters: 1, L1Bytes: 64 << 10, BufferBytes: 1024}, nopEgress{}, nil)
	q, _ := unit.Memory().Reserve(8)
	ok := DenseConfig{Algo: wire.AlgoSingle, Children: 4, DType: wire.Float32, Op: wire.OpSum, Elements: 1000, PacketElems: 100, Quota: q}
	for _, run := range []int{0, 1, 64, MaxSteerRun} {
		c := ok
		c.Readers, c.SteerRun = 2, run
		if _, err := NewDense(c); err != nil {
			t.Fatalf("steer run %d refused: %v", run, err)
		}
	}
	type badCase struct {
		name   string
		mutate func(c *DenseConfig)
	}
	cases := []badCase{
		{"no children", func(c *DenseConfig) { c.Children = 0 }},
		{"no elements", func(c *DenseConfig) { c.Elements = 0 }},
		{"no packet", func(c *DenseConfig) { c.PacketElems = 0 }},
		{"no quota", func(c *DenseConfig) { c.Quota = nil }},
		{"steer run not a power of two", func(c *DenseConfig) { c.SteerRun = 3 }},
		{"steer run too long", func(c *DenseConfig) { c.SteerRun = 2 * MaxSteerRun }},
		{"negative steer run", func(c *DenseConfig) { c.SteerRun = -1 }},
		{"negative readers", func(c *DenseConfig) { c.Readers = -1 }},
	}
	if ids := uint64(math.MaxUint32) + 1; uint64(math.MaxInt) >= ids { // a 64-bit int
		cases = append(cases, badCase{"more blocks than block ids", func(c *DenseConfig) { c.Elements, c.PacketElems = int(ids), 1 }})
	}
	for _, tc := range cases {
		c := ok
		tc.mutate(&c)
		if _, err := NewDense(c); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}

// Packets that do not fit the job, stale generations and duplicates are
// rejected and counted, never aggregated.
func TestDenseRejects(t *testing.T) {
	d := newTestDense(t, design{wire.AlgoSingle, 0}, wire.Int32, wire.OpSum, 2, 300, 256)
	eg := &capture{out: make([]byte, 1200), pe: 1024, emitted: map[uint32]int{}}
	good := func() *hpu.Packet {
		return &hpu.Packet{Hdr: wire.Header{Version: wire.Version, Type: wire.TypeData, Job: 1, Generation: 5, Block: 1, Child: 1,
			DType: wire.Int32, Op: wire.OpSum, Count: 44}, Payload: make([]byte, 176)}
	}
	bad := []func(*hpu.Packet){
		func(p *hpu.Packet) { p.Hdr.DType = wire.Int16 },
		func(p *hpu.Packet) { p.Hdr.Op = wire.OpMax },
		func(p *hpu.Packet) { p.Hdr.Block = 2 },
		func(p *hpu.Packet) { p.Hdr.Child = 2 },
		func(p *hpu.Packet) { p.Hdr.Count = 256 },
		func(p *hpu.Packet) { p.Payload = p.Payload[:172] },
		func(p *hpu.Packet) { p.Hdr.Type = wire.TypeResult },
	}
	var pkts []*hpu.Packet
	for _, m := range bad {
		p := good()
		m(p)
		pkts = append(pkts, p)
	}
	virtualRun(d, eg, pkts, 1)
	if n := d.Stats.Invalid.Load(); n != int64(len(bad)) {
		t.Fatalf("invalid = %d, want %d", n, len(bad))
	}
	virtualRun(d, eg, []*hpu.Packet{good(), good()}, 1)
	old := good()
	old.Hdr.Generation = 4
	virtualRun(d, eg, []*hpu.Packet{old}, 1)
	if d.Stats.Duplicate.Load() != 1 || d.Stats.Stale.Load() != 1 || d.Stats.Packets.Load() != 1 {
		t.Fatalf("dup=%d stale=%d packets=%d; want 1, 1, 1", d.Stats.Duplicate.Load(), d.Stats.Stale.Load(), d.Stats.Packets.Load())
	}
	// A newer generation abandons the unfinished block and frees its buffer.
	newer := good()
	newer.Hdr.Generation = 6
	virtualRun(d, eg, []*hpu.Packet{newer}, 1)
	if d.Stats.Abandoned.Load() != 1 || d.Config().Quota.InUse() != 1 {
		t.Fatalf("abandoned=%d in use=%d; want 1, 1", d.Stats.Abandoned.Load(), d.Config().Quota.InUse())
	}
	d.Close()
	if d.Config().Quota.InUse() != 0 {
		t.Fatalf("Close left %d buffers held", d.Config().Quota.InUse())
	}
}

// A non-root switch sends its aggregate up as data from a switch.
func TestDenseUplink(t *testing.T) {
	for _, dg := range designs {
		d := newTestDense(t, dg, wire.Int32, wire.OpSum, 3, 10, 256)
		d.cfg.Uplink = &Uplink{Child: 7}
		r := rand.New(rand.NewPCG(4, 4))
		inputs := randomInputs(r, wire.Int32, wire.OpSum, 3, 10)
		eg := &capture{out: make([]byte, 40), pe: 1024, emitted: map[uint32]int{}}
		virtualRun(d, eg, makePackets(r, inputs, wire.Int32, wire.OpSum, 256, 1, 0), 2)
		if eg.up != 1 {
			t.Fatalf("%s: %d packets sent up, want 1", dg, eg.up)
		}
		if err := elem.Check(wire.Int32, wire.OpSum, inputs, eg.out); err != nil {
			t.Fatal(err)
		}
	}
}

// newUplinkLeaf is a leaf's job (2 children, one block of 4 int32, its
// partial sent up as child 3, results kept) on a unit of one core, what
// it emits captured, and run, which hands it a packet at a time.
func newUplinkLeaf(t *testing.T) (*Dense, *treeCapture, func(p *hpu.Packet, at int64)) {
	d := buildDense(t, DenseConfig{Job: 1, Algo: wire.AlgoSingle, Children: 2, DType: wire.Int32, Op: wire.OpSum,
		Elements: 4, PacketElems: 4, KeepResults: true, Uplink: &Uplink{Child: 3}}, 8)
	c := &treeCapture{}
	v := newVUnit(c, 1)
	t.Cleanup(v.close)
	return d, c, func(p *hpu.Packet, at int64) {
		p.Handler = d
		v.run(p, at)
	}
}

// A host retransmitting a block its leaf sent up, before the parent's
// result came down, hears that the block waits for the parent, and the
// partial goes up again once per UplinkResendGap.
func TestDenseUplinkWaitsForParent(t *testing.T) {
	_, c, run := newUplinkLeaf(t)
	r := rand.New(rand.NewPCG(9, 9))
	pkts := makePackets(r, randomInputs(r, wire.Int32, wire.OpSum, 2, 4), wire.Int32, wire.OpSum, 4, 1, 0)
	for _, p := range pkts {
		run(p, 1)
	}
	again := *pkts[0]
	again.Hdr.Flags |= wire.FlagRetransmit
	run(&again, 1e9)
	run(&again, 1e9+UplinkResendGap/2)
	if len(c.up) != 2 || c.up[1].hdr.Flags&wire.FlagRetransmit == 0 || c.up[1].hdr.Child != 3 {
		t.Fatalf("sent up %d packets, want the partial and one re-send within the gap", len(c.up))
	}
	if len(c.waiting) != 2 || !strings.Contains(c.waiting[0], "block 0 of allreduce 1 waits for the parent switch") {
		t.Fatalf("waiting reports %q, want two saying the block waits for the parent", c.waiting)
	}
}

// A leaf's block holds its partial until the parent's result comes down,
// and then the result: a host's retransmission is answered from it, with
// nothing sent up. Two generations on (the same slot), the block's new
// partial is not final again: a late copy of the old generation's result
// from the parent is stale and goes nowhere, and a retransmission waits
// for the parent, the partial going up, never down as a result.
func TestDenseUplinkParentResult(t *testing.T) {
	d, c, run := newUplinkLeaf(t)
	r := rand.New(rand.NewPCG(10, 10))
	inputs := randomInputs(r, wire.Int32, wire.OpSum, 2, 4)
	parent := []byte{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0} // the whole job's sum, from above
	fromParent := func(gen uint32) *hpu.Packet {
		return &hpu.Packet{Hdr: wire.Header{Version: wire.Version, Type: wire.TypeResult, Job: 1, Generation: gen,
			DType: wire.Int32, Op: wire.OpSum, Count: 4}, Payload: parent}
	}
	retransmit := func(gen uint32, at int64) {
		p := makePackets(r, inputs, wire.Int32, wire.OpSum, 4, gen, 0)[0]
		p.Hdr.Flags |= wire.FlagRetransmit
		run(p, at)
	}
	for _, p := range makePackets(r, inputs, wire.Int32, wire.OpSum, 4, 1, 0) {
		run(p, 1)
	}
	run(fromParent(1), 2)
	if len(c.up) != 1 || len(c.down) != 1 || !bytes.Equal(c.down[0].payload, parent) {
		t.Fatalf("generation 1: %d up, %d down; want the partial up, the parent's result down", len(c.up), len(c.down))
	}
	retransmit(1, 1e9)
	if len(c.up) != 1 || len(c.down) != 2 || c.down[1].hdr.Flags&wire.FlagRetransmit == 0 || !bytes.Equal(c.down[1].payload, parent) {
		t.Fatalf("a retransmission with the parent's result here: %d up, %d down; want it answered with that result, nothing up", len(c.up), len(c.down))
	}
	for _, p := range makePackets(r, inputs, wire.Int32, wire.OpSum, 4, 3, 0) {
		run(p, 2e9)
	}
	run(fromParent(1), 2e9+1) // the parent answering generation 1's retransmission, late
	if got := d.Stats.Stale.Load(); got != 1 || len(c.down) != 2 {
		t.Fatalf("generation 1's result after generation 3's partial: %d stale, %d down; want it stale, not sent down", got, len(c.down))
	}
	retransmit(3, 3e9)
	if len(c.up) != 3 || c.up[2].hdr.Generation != 3 || c.up[2].hdr.Flags&wire.FlagRetransmit == 0 || len(c.down) != 2 {
		t.Fatalf("generation 3's retransmission before the parent's result: %d up, %d down; want the partial up again, nothing down", len(c.up), len(c.down))
	}
}

// Steady state on the handler path allocates nothing.
func TestDenseZeroAlloc(t *testing.T) {
	for _, dg := range designs {
		const p = 8
		d := newTestDense(t, dg, wire.Float32, wire.OpSum, p, 256, 256)
		r := rand.New(rand.NewPCG(5, 5))
		pkts := makePackets(r, randomInputs(r, wire.Float32, wire.OpSum, p, 256), wire.Float32, wire.OpSum, 256, 0, 0)
		if allocs := allocsPerGeneration(d, pkts, p, 100); allocs != 0 {
			t.Fatalf("%s: %.1f allocations per block of %d packets, want 0", dg, allocs, p)
		}
		if d.Stats.Completed.Load() < 100 {
			t.Fatalf("%s: only %d blocks completed", dg, d.Stats.Completed.Load())
		}
	}
}

// resendCapture records unicast resends.
type resendCapture struct {
	to    []uint16
	gens  []uint32
	bytes [][]byte
}

func (c *resendCapture) Emit(h *wire.Header, payload []byte) {
	if h.Type == wire.TypeError {
		return // a waiting report (CodeWaiting): no result
	}
	if h.Flags&wire.FlagRetransmit != 0 {
		c.to = append(c.to, h.Child)
		c.gens = append(c.gens, h.Generation)
		c.bytes = append(c.bytes, bytes.Clone(payload))
	}
}

// newKeptTestDense is a job of 3 children, an int32 sum of 300 elements
// in blocks of 256, that keeps its results for retransmissions.
func newKeptTestDense(t *testing.T, dg design) *Dense {
	d := newTestDense(t, dg, wire.Int32, wire.OpSum, 3, 300, 256)
	d.cfg.KeepResults = true
	d.results = [2][]byte{make([]byte, 1200), make([]byte, 1200)}
	d.resultGen = [2][]uint32{make([]uint32, 2), make([]uint32, 2)}
	return d
}

// A retransmission of a finished block gets the stored result back, to
// that child alone, also one generation later; older ones get nothing.
func TestDenseResendsStoredResult(t *testing.T) {
	for _, dg := range designs {
		d := newKeptTestDense(t, dg)
		r := rand.New(rand.NewPCG(6, 6))
		inputs := randomInputs(r, wire.Int32, wire.OpSum, 3, 300)
		want, _ := elem.Reference(wire.Int32, wire.OpSum, inputs)
		eg := &resendCapture{}
		pkts := makePackets(r, inputs, wire.Int32, wire.OpSum, 256, 7, 0)
		virtualRun(d, eg, pkts, 2)
		var again *hpu.Packet
		for _, p := range pkts {
			if p.Hdr.Block == 1 && p.Hdr.Child == 2 {
				again = p
			}
		}
		virtualRun(d, eg, []*hpu.Packet{again}, 1)
		// The next generation starts on block 1; generation 7 is still served.
		next := *again
		next.Hdr.Generation, next.Hdr.Child = 8, 0
		virtualRun(d, eg, []*hpu.Packet{&next}, 1)
		virtualRun(d, eg, []*hpu.Packet{again}, 1)
		old := *again
		old.Hdr.Generation = 6
		virtualRun(d, eg, []*hpu.Packet{&old}, 1)
		if len(eg.to) != 2 || eg.to[0] != 2 || eg.gens[1] != 7 {
			t.Fatalf("%s: resends to %v of generations %v, want two to child 2 of generation 7", dg, eg.to, eg.gens)
		}
		if !bytes.Equal(eg.bytes[0], want[1024:]) || !bytes.Equal(eg.bytes[1], want[1024:]) {
			t.Fatalf("%s: resent bytes differ from the result", dg)
		}
	}
}

// A result stored late, after a newer generation of the same parity has
// stored its own (generation g's last handler finishing after g+2's, which
// members out of step allow in real time), does not replace it
// (storable): a retransmission of g+2 still gets g+2's result.
func TestDenseLateStoreKeepsNewer(t *testing.T) {
	for _, dg := range designs {
		d := newKeptTestDense(t, dg)
		r := rand.New(rand.NewPCG(7, 7))
		var again *hpu.Packet // generation 11's packet of block 1 from child 2
		var want []byte
		for _, gen := range []uint32{9, 11} {
			inputs := randomInputs(r, wire.Int32, wire.OpSum, 3, 300)
			want, _ = elem.Reference(wire.Int32, wire.OpSum, inputs)
			pkts := makePackets(r, inputs, wire.Int32, wire.OpSum, 256, gen, 0)
			virtualRun(d, &resendCapture{}, pkts, 2)
			for _, p := range pkts {
				if p.Hdr.Block == 1 && p.Hdr.Child == 2 {
					again = p
				}
			}
		}
		eg := &resendCapture{}
		v := newVUnit(eg, 1)
		late := wire.Header{Version: wire.Version, Type: wire.TypeResult, Job: 1, Generation: 9, Block: 1,
			DType: wire.Int32, Op: wire.OpSum, Count: 44}
		v.call(func(t *hpu.Task) { d.emitResult(t, &late, bytes.Repeat([]byte{0xee}, 44*4), 0) })
		again.Handler = d
		v.run(again, v.u.Now())
		v.close()
		if len(eg.gens) != 1 || eg.gens[0] != 11 || !bytes.Equal(eg.bytes[0], want[1024:]) {
			t.Fatalf("%s: after a late store of generation 9, generation 11's retransmission got %d resends (generations %v), want its own result", dg, len(eg.gens), eg.gens)
		}
	}
}
