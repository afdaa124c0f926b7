package handlers

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/proto"
	"github.com/flare-net/flare/wire"
)

// sparseDesign is one sparse storage and buffer count under test.
type sparseDesign struct {
	storage wire.Storage
	b       int
}

func (d sparseDesign) String() string {
	if d.b > 1 {
		return fmt.Sprintf("%s-multi%d", d.storage, d.b)
	}
	return d.storage.String() + "-single"
}

var sparseDesigns = []sparseDesign{
	{wire.StorageHash, 1}, {wire.StorageHash, 3}, {wire.StorageArray, 1}, {wire.StorageArray, 2},
}

var sparseOps = []wire.Op{wire.OpSum, wire.OpMin, wire.OpMax}

// Index patterns of the hosts' sparse vectors.
const (
	patRandom    = "random"    // every host draws its own indices
	patIdentical = "identical" // every host sends the same indices
	patDisjoint  = "disjoint"  // no index is sent by two hosts
)

// randomSparseInputs draws p sparse vectors of n elements at the given
// density: wire pairs with global indices, each host's in a random order,
// values as randomInputs draws them (zeros and signed zeros included).
func randomSparseInputs(r *rand.Rand, dt wire.DType, op wire.Op, p, n int, density float64, pattern string) [][]byte {
	pick := func() []uint32 {
		var idx []uint32
		for i := range n {
			if r.Float64() < density {
				idx = append(idx, uint32(i))
			}
		}
		return idx
	}
	sets := make([][]uint32, p)
	switch pattern {
	case patIdentical:
		idx := pick()
		for i := range sets {
			sets[i] = slices.Clone(idx)
		}
	case patDisjoint:
		for _, i := range pick() {
			h := r.IntN(p)
			sets[h] = append(sets[h], i)
		}
	default:
		for i := range sets {
			sets[i] = pick()
		}
	}
	in := make([][]byte, p)
	for h, idx := range sets {
		r.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		vals := randomInputs(r, dt, op, 1, len(idx))[0]
		in[h], _ = wire.AppendPairs(nil, dt, idx, vals)
	}
	return in
}

// newTestSparse builds a Sparse over its own memory, large enough for every
// block of the job to be open at once, and returns it with its quota.
func newTestSparse(t testing.TB, cfg SparseConfig) (*Sparse, *hpu.Quota) {
	t.Helper()
	const bufBytes = 1024
	bufs := cfg.Blocks() * cfg.BlockBuffers(bufBytes)
	unit, err := hpu.New(hpu.Config{Clusters: 1, L1Bytes: max(bufs*bufBytes, hpu.MinL1Bytes), BufferBytes: bufBytes}, nopEgress{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Quota, err = unit.Memory().Reserve(bufs); err != nil {
		t.Fatal(err)
	}
	s, err := NewSparse(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, cfg.Quota
}

// sparsePackets builds every host's stream of every block of one
// generation, plus a second copy of a fraction dup of the packets, in a
// random order.
func sparsePackets(r *rand.Rand, cfg SparseConfig, inputs [][]byte, gen uint32, dup float64) []*hpu.Packet {
	pk := proto.SparsePacker{DType: cfg.DType, BlockElems: cfg.BlockElems, PacketPairs: cfg.PacketPairs}
	ps := wire.PairSize(cfg.DType)
	var pkts []*hpu.Packet
	for rank, in := range inputs {
		sorted := proto.SortPairs(in, cfg.DType)
		for b := range cfg.Blocks() {
			bp := pk.BlockPairs(sorted, b)
			for seq := range pk.Packets(len(bp) / ps) {
				p := &hpu.Packet{Hdr: wire.Header{Version: wire.Version, Job: cfg.Job, Token: cfg.Token,
					Generation: gen, Child: uint16(rank), Op: cfg.Op}}
				p.Payload = pk.Packet(nil, &p.Hdr, uint32(b), bp, seq)
				pkts = appendMaybeTwice(r, pkts, p, dup)
			}
		}
	}
	r.Shuffle(len(pkts), func(i, j int) { pkts[i], pkts[j] = pkts[j], pkts[i] })
	return pkts
}

// sparseCapture keeps what a handler emits.
type sparseCapture struct{ down []sparseDown }

func (c *sparseCapture) Emit(h *wire.Header, payload []byte) {
	if h.Type == wire.TypeError {
		return // a waiting report (CodeWaiting): no result
	}
	c.down = append(c.down, sparseDown{hdr: *h, payload: bytes.Clone(payload)})
}

// runSparseVirtual feeds packets to a Sparse handler in the given order,
// 100 cycles apart, on a VirtualUnit of 8 cores, and returns what it
// emitted.
func runSparseVirtual(s *Sparse, pkts []*hpu.Packet) []sparseDown {
	c := &sparseCapture{}
	v := newVUnit(c, 8)
	defer v.close()
	for i, p := range pkts {
		p.Handler = s
		v.submit(p, int64(i)*100)
	}
	v.drain()
	return c.down
}

// hostMerge plays a host receiving the switch's packets of generation gen
// in a random order, a fraction dup of them twice: it assembles each
// block's stream and returns the merged vector (global indices).
func hostMerge(r *rand.Rand, cfg SparseConfig, down []sparseDown, gen uint32, dup float64) ([]byte, error) {
	down = slices.Clone(down)
	for _, d := range down {
		if r.Float64() < dup {
			down = append(down, d)
		}
	}
	r.Shuffle(len(down), func(i, j int) { down[i], down[j] = down[j], down[i] })
	asm := make([]proto.SparseAssembler, cfg.Blocks())
	for b := range asm {
		asm[b].DType = cfg.DType
	}
	for _, d := range down {
		b, _ := wire.SplitSparseBlock(d.hdr.Block)
		if d.hdr.Generation != gen {
			continue
		}
		if int(b) >= len(asm) {
			return nil, fmt.Errorf("packet for block %d of %d", b, len(asm))
		}
		if _, err := asm[b].Add(&d.hdr, d.payload); err != nil {
			return nil, fmt.Errorf("block %d: %w", b, err)
		}
	}
	var out []byte
	for b := range asm {
		var err error
		if out, err = asm[b].Merge(out, cfg.Op, uint32(b*cfg.BlockElems)); err != nil {
			return nil, fmt.Errorf("block %d: %w", b, err)
		}
	}
	return out, nil
}

// randomSparseConfig draws a job shape for n elements and P hosts that the
// handler accepts: blocks, packet sizes, and tables roomy or small enough
// to spill.
func randomSparseConfig(r *rand.Rand, dg sparseDesign, dt wire.DType, op wire.Op, p, n int) SparseConfig {
	ps := wire.PairSize(dt)
	be := max([]int{1, 7, 64, 1000, 4096}[r.IntN(5)], (n+99)/100)
	cfg := SparseConfig{Job: 1, Token: 0x5eed, Children: p, DType: dt, Op: op, Storage: dg.storage,
		Buffers: dg.b, Elements: n, BlockElems: be}
	cfg.PacketPairs = min([]int{1, 3, 16, 1024}[r.IntN(4)], 1024/ps)
	for cfg.maxDownstream() > wire.MaxSparseSeq || cfg.MaxPackets() > wire.MaxSparseSeq {
		cfg.PacketPairs = min(cfg.PacketPairs*4, 1024/ps)
	}
	if dg.storage == wire.StorageHash {
		cfg.HashSlots = []int{be, be/8 + 1, be * 2}[r.IntN(3)]
	}
	return cfg
}

// Every sparse design × dtype × op, P from 1 to 32, densities from 0.1% to
// 50%, random, identical and disjoint index sets, packets shuffled with 20%
// duplicates in both directions, two generations: integers and min/max
// exact and bit-identical across arrival orders, float sums within the
// rounding bound.
func TestSparseRandomArrivalOrders(t *testing.T) {
	r, seed := seededRand(t, 11)
	densities := []float64{0.001, 0.01, 0.1, 0.5}
	patterns := []string{patRandom, patIdentical, patDisjoint}
	ps := []int{1, 2, 3, 8, 17, 32}
	for _, dg := range sparseDesigns {
		for _, dt := range wire.DTypes {
			for _, op := range sparseOps {
				p := ps[r.IntN(len(ps))]
				n := 1 + r.IntN(3000/sparseTestScale)
				density := densities[r.IntN(len(densities))]
				pat := patterns[r.IntN(len(patterns))]
				name := fmt.Sprintf("%s/%s/%s/P=%d/n=%d/d=%g/%s", dg, dt, op, p, n, density, pat)
				cfg := randomSparseConfig(r, dg, dt, op, p, n)
				s, q := newTestSparse(t, cfg)
				var first []byte
				for gen := range uint32(2) {
					inputs := randomSparseInputs(r, dt, op, p, n, density, pat)
					down := runSparseVirtual(s, sparsePackets(r, cfg, inputs, gen, 0.2))
					for h := range 2 { // two hosts, two delivery orders
						got, err := hostMerge(r, cfg, down, gen, 0.2)
						if err != nil {
							t.Fatalf("%s gen %d host %d (seed %d): %v", name, gen, h, seed, err)
						}
						if err := elem.CheckSparse(dt, op, inputs, got); err != nil {
							t.Fatalf("%s gen %d host %d (seed %d, cfg %+v): %v", name, gen, h, seed, cfg, err)
						}
						if h == 1 && !bytes.Equal(got, first) {
							t.Fatalf("%s gen %d: two hosts merged different bytes from the same packets", name, gen)
						}
						first = got
					}
					if !dt.IsFloat() || op != wire.OpSum {
						// Another arrival order at the switch gives the same bits.
						s2, _ := newTestSparse(t, cfg)
						again, err := hostMerge(r, cfg, runSparseVirtual(s2, sparsePackets(r, cfg, inputs, gen, 0.2)), gen, 0)
						if err != nil || !bytes.Equal(again, first) {
							t.Fatalf("%s gen %d: another arrival order gave different bits (err %v)", name, gen, err)
						}
					}
				}
				if q.InUse() != 0 {
					t.Fatalf("%s: %d buffers still held after every block flushed", name, q.InUse())
				}
			}
		}
	}
}

// P = 1 … 32 for every design at one dtype, so each fan-in is covered.
func TestSparseFanIn(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 21))
	for _, dg := range sparseDesigns {
		for p := 1; p <= 32; p++ {
			cfg := SparseConfig{Job: 1, Children: p, DType: wire.Int32, Op: wire.OpSum, Storage: dg.storage, Buffers: dg.b,
				Elements: 2000, BlockElems: 500, HashSlots: 64, PacketPairs: 16}
			s, _ := newTestSparse(t, cfg)
			inputs := randomSparseInputs(r, cfg.DType, cfg.Op, p, cfg.Elements, 0.05, patRandom)
			got, err := hostMerge(r, cfg, runSparseVirtual(s, sparsePackets(r, cfg, inputs, 0, 0.3)), 0, 0.3)
			if err == nil {
				err = elem.CheckSparse(cfg.DType, cfg.Op, inputs, got)
			}
			if err != nil {
				t.Fatalf("%s P=%d: %v", dg, p, err)
			}
		}
	}
}

// A value of 0 (and -0) is a value: it is sent on, alone or combined.
func TestSparseZeroValueSurvives(t *testing.T) {
	for _, dg := range sparseDesigns {
		for _, op := range sparseOps {
			cfg := SparseConfig{Job: 1, Children: 2, DType: wire.Float32, Op: op, Storage: dg.storage, Buffers: dg.b,
				Elements: 100, BlockElems: 100, HashSlots: 16, PacketPairs: 4}
			s, _ := newTestSparse(t, cfg)
			val := func(f float32) []byte { return binary.LittleEndian.AppendUint32(nil, math.Float32bits(f)) }
			var in0, in1 []byte
			in0 = wire.AppendPair(in0, 3, val(0))                             // only host 0: a plain zero
			in0 = wire.AppendPair(in0, 9, val(float32(math.Copysign(0, -1)))) // only host 0: -0
			in1 = wire.AppendPair(in1, 50, val(0))                            // zero on both hosts
			in0 = wire.AppendPair(in0, 50, val(0))
			inputs := [][]byte{in0, in1}
			r := rand.New(rand.NewPCG(1, 2))
			got, err := hostMerge(r, cfg, runSparseVirtual(s, sparsePackets(r, cfg, inputs, 0, 0)), 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := elem.CheckSparse(cfg.DType, op, inputs, got); err != nil {
				t.Fatalf("%s %s: %v", dg, op, err)
			}
			p, _ := wire.PairsOf(got, cfg.DType)
			if p.Len() != 3 || p.Index(0) != 3 || p.Index(1) != 9 || p.Index(2) != 50 {
				t.Fatalf("%s %s: zero-valued indices lost: % x", dg, op, got)
			}
			if !bytes.Equal(p.Value(1), val(float32(math.Copysign(0, -1)))) {
				t.Fatalf("%s %s: -0 became % x", dg, op, p.Value(1))
			}
		}
	}
}

// When the entries fill the result packets exactly, the flush still ends
// with a packet marked last: an empty one.
func TestSparseExactMultipleFlush(t *testing.T) {
	for _, dg := range sparseDesigns {
		for _, entries := range []int{0, 4, 12, 5} {
			cfg := SparseConfig{Job: 1, Children: 1, DType: wire.Int32, Op: wire.OpSum, Storage: dg.storage, Buffers: dg.b,
				Elements: 64, BlockElems: 64, HashSlots: 64, PacketPairs: 4}
			s, _ := newTestSparse(t, cfg)
			idx := make([]uint32, entries)
			for i := range idx {
				idx[i] = uint32(i * 5)
			}
			in, _ := wire.AppendPairs(nil, cfg.DType, idx, make([]byte, 4*entries))
			r := rand.New(rand.NewPCG(1, 1))
			down := runSparseVirtual(s, sparsePackets(r, cfg, [][]byte{in}, 0, 0))
			want := entries/4 + 1
			if len(down) != want {
				t.Fatalf("%s, %d entries: %d packets, want %d", dg, entries, len(down), want)
			}
			for i, d := range down {
				_, seq := wire.SplitSparseBlock(d.hdr.Block)
				last := i == len(down)-1
				if d.hdr.Type != wire.TypeSparse || int(seq) != i || (d.hdr.Flags&wire.FlagLast != 0) != last {
					t.Fatalf("%s, %d entries: packet %d is %v seq %d flags %#x", dg, entries, i, d.hdr.Type, seq, d.hdr.Flags)
				}
				if wantCount := min(4, entries-4*i); d.hdr.Count != uint32(wantCount) {
					t.Fatalf("%s, %d entries: packet %d has %d pairs, want %d", dg, entries, i, d.hdr.Count, wantCount)
				}
			}
			if entries%4 == 0 && down[len(down)-1].hdr.Count != 0 {
				t.Fatalf("%s, %d entries: the last packet is not empty", dg, entries)
			}
		}
	}
}

// A small table spills; each Spill packet carries a full header that
// decodes, and the hosts' merge of result and spills is still exact.
func TestSparseSpill(t *testing.T) {
	for _, b := range []int{1, 4} {
		cfg := SparseConfig{Job: 7, Token: 0xfeed, Children: 8, DType: wire.Int64, Op: wire.OpSum, Storage: wire.StorageHash,
			Buffers: b, Elements: 1 << 12, BlockElems: 1 << 12, HashSlots: 16, PacketPairs: 8}
		s, q := newTestSparse(t, cfg)
		r := rand.New(rand.NewPCG(4, 4))
		inputs := randomSparseInputs(r, cfg.DType, cfg.Op, cfg.Children, cfg.Elements, 0.05, patRandom)
		down := runSparseVirtual(s, sparsePackets(r, cfg, inputs, 3, 0.2))
		if s.Stats.Spilled.Load() == 0 || s.Stats.SpillPackets.Load() < 2 {
			t.Fatalf("B=%d: %d pairs spilled in %d packets: the table should overflow", b, s.Stats.Spilled.Load(), s.Stats.SpillPackets.Load())
		}
		spills := 0
		for _, d := range down {
			if d.hdr.Type != wire.TypeSpill {
				continue
			}
			spills++
			pkt := wire.AppendPacket(nil, &d.hdr, d.payload)
			var h wire.Header
			payload, err := h.Unmarshal(pkt)
			if err != nil {
				t.Fatalf("spill packet does not decode: %v", err)
			}
			blk, _ := wire.SplitSparseBlock(h.Block)
			if h.Job != 7 || h.Token != 0xfeed || h.Generation != 3 || blk != 0 || h.DType != cfg.DType || h.Op != cfg.Op ||
				int(h.Count) == 0 || len(payload) != int(h.Count)*wire.PairSize(cfg.DType) || h.Flags&wire.FlagLast != 0 {
				t.Fatalf("spill header %+v", h)
			}
		}
		if int64(spills) != s.Stats.SpillPackets.Load() {
			t.Fatalf("%d spill packets captured, stats say %d", spills, s.Stats.SpillPackets.Load())
		}
		got, err := hostMerge(r, cfg, down, 3, 0.2)
		if err == nil {
			err = elem.CheckSparse(cfg.DType, cfg.Op, inputs, got)
		}
		if err != nil {
			t.Fatalf("B=%d: %v", b, err)
		}
		if q.InUse() != 0 {
			t.Fatalf("B=%d: %d buffers held after the flush", b, q.InUse())
		}
	}
}

// A block holds its memory from its first packet to its flush, and no
// longer.
func TestSparseQuota(t *testing.T) {
	for _, dg := range sparseDesigns {
		cfg := SparseConfig{Job: 1, Children: 2, DType: wire.Float32, Op: wire.OpSum, Storage: dg.storage, Buffers: dg.b,
			Elements: 3000, BlockElems: 1000, HashSlots: 300, PacketPairs: 32}
		s, q := newTestSparse(t, cfg)
		per := cfg.BlockBuffers(q.BufferBytes())
		r := rand.New(rand.NewPCG(5, 5))
		inputs := randomSparseInputs(r, cfg.DType, cfg.Op, 2, cfg.Elements, 0.1, patRandom)
		pkts := sparsePackets(r, cfg, inputs, 0, 0)
		slices.SortStableFunc(pkts, func(a, b *hpu.Packet) int { return int(a.Hdr.Child) - int(b.Hdr.Child) })
		v := newVUnit(nopEgress{}, 1)
		defer v.close()
		opened := 0
		for i, p := range pkts {
			p.Handler = s
			v.run(p, 0)
			if i == 0 && q.InUse() != per {
				t.Fatalf("%s: %d buffers after the first packet, want %d", dg, q.InUse(), per)
			}
			// Every host sends each block at least its last packet, so once
			// host 0 is through, every block is open.
			if p.Hdr.Child == 0 && pkts[i+1].Hdr.Child == 1 && q.InUse() != per*cfg.Blocks() {
				t.Fatalf("%s: %d buffers with every block open, want %d", dg, q.InUse(), per*cfg.Blocks())
			}
			opened = max(opened, q.InUse())
		}
		if s.Stats.Completed.Load() != int64(cfg.Blocks()) || q.InUse() != 0 {
			t.Fatalf("%s: %d blocks completed, %d buffers still held", dg, s.Stats.Completed.Load(), q.InUse())
		}
		if q.Peak() != per*cfg.Blocks() || opened != per*cfg.Blocks() {
			t.Fatalf("%s: peak %d buffers, want %d", dg, q.Peak(), per*cfg.Blocks())
		}
	}
}

// When the quota cannot hold a block, its packets are refused whole and
// leave no trace: the host's retransmission completes it.
func TestSparseNoBufferLeavesNoTrace(t *testing.T) {
	cfg := SparseConfig{Job: 1, Children: 2, DType: wire.Int32, Op: wire.OpSum, Storage: wire.StorageArray, Buffers: 1,
		Elements: 200, BlockElems: 100, PacketPairs: 8}
	per := cfg.BlockBuffers(1024)
	unit, _ := hpu.New(hpu.Config{Clusters: 1, L1Bytes: 64 << 10, BufferBytes: 1024}, nopEgress{}, nil)
	cfg.Quota, _ = unit.Memory().Reserve(per) // one block at a time
	s, err := NewSparse(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(6, 6))
	inputs := randomSparseInputs(r, cfg.DType, cfg.Op, 2, cfg.Elements, 0.3, patRandom)
	pkts := sparsePackets(r, cfg, inputs, 0, 0)
	down := runSparseVirtual(s, pkts) // blocks 0 and 1 interleaved: some packets refused
	if s.Stats.NoBuffer.Load() == 0 {
		t.Fatal("no packet was refused with memory for one block")
	}
	down = append(down, runSparseVirtual(s, pkts)...) // the hosts retransmit everything
	got, err := hostMerge(r, cfg, down, 0, 0)
	if err == nil {
		err = elem.CheckSparse(cfg.DType, cfg.Op, inputs, got)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// Successive generations never mix: a late packet of the previous call is
// dropped as stale, and each call's result is its own.
func TestSparseGenerations(t *testing.T) {
	for _, dg := range sparseDesigns {
		cfg := SparseConfig{Job: 1, Children: 3, DType: wire.Int16, Op: wire.OpMax, Storage: dg.storage, Buffers: dg.b,
			Elements: 500, BlockElems: 250, HashSlots: 40, PacketPairs: 10}
		s, _ := newTestSparse(t, cfg)
		r := rand.New(rand.NewPCG(7, 7))
		old := sparsePackets(r, cfg, randomSparseInputs(r, cfg.DType, cfg.Op, 3, cfg.Elements, 0.2, patRandom), 4, 0)
		runSparseVirtual(s, old)
		inputs := randomSparseInputs(r, cfg.DType, cfg.Op, 3, cfg.Elements, 0.2, patRandom)
		pkts := append(sparsePackets(r, cfg, inputs, 5, 0.1), old...) // gen 4 replayed among gen 5
		r.Shuffle(len(pkts), func(i, j int) { pkts[i], pkts[j] = pkts[j], pkts[i] })
		down := runSparseVirtual(s, pkts)
		got, err := hostMerge(r, cfg, down, 5, 0)
		if err == nil {
			err = elem.CheckSparse(cfg.DType, cfg.Op, inputs, got)
		}
		if err != nil {
			t.Fatalf("%s: %v", dg, err)
		}
		if s.Stats.Stale.Load() == 0 {
			t.Fatalf("%s: replayed packets of the previous generation not counted stale", dg)
		}
	}
}

// A packet recorded late, after a newer generation of the same parity has
// recorded its stream (a spill from a handler still folding into an
// abandoned block of generation g, after g+2 flushed), does not replace
// that record: a retransmission of g+2 still gets g+2's whole stream.
func TestSparseLateRecordKeepsNewer(t *testing.T) {
	for _, dg := range sparseDesigns {
		cfg := SparseConfig{Job: 1, Token: 0x5eed, Children: 3, DType: wire.Int32, Op: wire.OpSum, Storage: dg.storage,
			Buffers: dg.b, Elements: 500, BlockElems: 250, HashSlots: 40, PacketPairs: 10, KeepResults: true}
		s, _ := newTestSparse(t, cfg)
		r := rand.New(rand.NewPCG(8, 8))
		var first *hpu.Packet // generation 11's packet 0 of block 0 from child 0
		var stream []sparseDown
		for _, gen := range []uint32{9, 11} {
			pkts := sparsePackets(r, cfg, randomSparseInputs(r, cfg.DType, cfg.Op, 3, cfg.Elements, 0.2, patRandom), gen, 0)
			down := runSparseVirtual(s, pkts)
			stream = stream[:0]
			for _, d := range down {
				if b, _ := wire.SplitSparseBlock(d.hdr.Block); b == 0 {
					stream = append(stream, d)
				}
			}
			for _, p := range pkts {
				if p.Hdr.Block == wire.SparseBlockField(0, 0) && p.Hdr.Child == 0 {
					first = p
				}
			}
		}
		c := &sparseCapture{}
		v := newVUnit(c, 1)
		late := wire.Header{Version: wire.Version, Type: wire.TypeSpill, Job: 1, Token: 0x5eed, Generation: 9,
			Block: wire.SparseBlockField(0, 0), DType: cfg.DType, Op: cfg.Op}
		v.call(func(t *hpu.Task) { s.record(t, &late, nil) })
		again := *first
		again.Hdr.Flags |= wire.FlagRetransmit
		again.Handler = s
		v.run(&again, v.u.Now())
		v.close()
		if len(c.down) != len(stream) || len(stream) == 0 {
			t.Fatalf("%s: after a late record of generation 9, generation 11's retransmission got %d packets, want its stream's %d",
				dg, len(c.down), len(stream))
		}
		for k, d := range c.down {
			if d.hdr.Generation != 11 || !bytes.Equal(d.payload, stream[k].payload) {
				t.Fatalf("%s: resent packet %d is generation %d's, or differs from the stream sent", dg, k, d.hdr.Generation)
			}
		}
	}
}

// Every stream is sent three times in a random order: integers stay exact,
// and every extra copy is counted as a duplicate.
func TestSparseDuplicatesAggregatedOnce(t *testing.T) {
	for _, dg := range sparseDesigns {
		cfg := SparseConfig{Job: 1, Children: 5, DType: wire.Int8, Op: wire.OpSum, Storage: dg.storage, Buffers: dg.b,
			Elements: 777, BlockElems: 100, HashSlots: 24, PacketPairs: 6}
		s, _ := newTestSparse(t, cfg)
		r := rand.New(rand.NewPCG(8, 8))
		inputs := randomSparseInputs(r, cfg.DType, cfg.Op, 5, cfg.Elements, 0.3, patIdentical)
		one := sparsePackets(r, cfg, inputs, 0, 0)
		pkts := slices.Concat(one, one, one)
		r.Shuffle(len(pkts), func(i, j int) { pkts[i], pkts[j] = pkts[j], pkts[i] })
		got, err := hostMerge(r, cfg, runSparseVirtual(s, pkts), 0, 0)
		if err == nil {
			err = elem.CheckSparse(cfg.DType, cfg.Op, inputs, got)
		}
		if err != nil {
			t.Fatalf("%s: %v", dg, err)
		}
		if s.Stats.Packets.Load() != int64(len(one)) || s.Stats.Duplicate.Load() != int64(2*len(one)) {
			t.Fatalf("%s: %d admitted, %d duplicates, want %d and %d", dg, s.Stats.Packets.Load(), s.Stats.Duplicate.Load(), len(one), 2*len(one))
		}
	}
}

// Malformed packets are refused by the header stage, counted, and never
// panic; a refused packet aggregates nothing.
func TestSparseRejects(t *testing.T) {
	cfg := SparseConfig{Job: 1, Children: 2, DType: wire.Float32, Op: wire.OpSum, Storage: wire.StorageHash, Buffers: 1,
		Elements: 150, BlockElems: 100, HashSlots: 32, PacketPairs: 4}
	good := func() *hpu.Packet {
		payload, _ := wire.AppendPairs(nil, wire.Float32, []uint32{1, 2}, make([]byte, 8))
		return &hpu.Packet{Hdr: wire.Header{Version: wire.Version, Type: wire.TypeSparse, Flags: wire.FlagLast, Job: 1,
			Block: wire.SparseBlockField(0, 0), DType: wire.Float32, Op: wire.OpSum, Count: 2}, Payload: payload}
	}
	cases := []struct {
		name    string
		mutate  func(p *hpu.Packet)
		counter func(s *Sparse) int64
	}{
		{"count overruns the payload", func(p *hpu.Packet) { p.Hdr.Count = 3 }, invalid},
		{"count short of the payload", func(p *hpu.Packet) { p.Hdr.Count = 1 }, invalid},
		{"payload cut mid-pair", func(p *hpu.Packet) { p.Payload = p.Payload[:11] }, invalid},
		{"index outside the block", func(p *hpu.Packet) { wire.PutPairIndex(p.Payload[8:], 100) }, badIndex},
		{"index outside the short last block", func(p *hpu.Packet) {
			p.Hdr.Block = wire.SparseBlockField(1, 0)
			wire.PutPairIndex(p.Payload[8:], 50)
		}, badIndex},
		{"index 2^32-1", func(p *hpu.Packet) { wire.PutPairIndex(p.Payload, math.MaxUint32) }, badIndex},
		{"dense type", func(p *hpu.Packet) { p.Hdr.Type = wire.TypeData }, invalid},
		{"spill type", func(p *hpu.Packet) { p.Hdr.Type = wire.TypeSpill }, invalid},
		{"other dtype", func(p *hpu.Packet) { p.Hdr.DType = wire.Int32 }, invalid},
		{"other op", func(p *hpu.Packet) { p.Hdr.Op = wire.OpMax }, invalid},
		{"child beyond P", func(p *hpu.Packet) { p.Hdr.Child = 2 }, invalid},
		{"block beyond the vector", func(p *hpu.Packet) { p.Hdr.Block = wire.SparseBlockField(2, 0) }, invalid},
		{"sequence beyond a stream", func(p *hpu.Packet) { p.Hdr.Block = wire.SparseBlockField(0, 26) }, invalid},
		{"short packet not last", func(p *hpu.Packet) { p.Hdr.Flags = 0 }, invalid},
		{"full last packet", func(p *hpu.Packet) {
			p.Payload, _ = wire.AppendPairs(nil, wire.Float32, []uint32{1, 2, 3, 4}, make([]byte, 16))
			p.Hdr.Count = 4
		}, invalid},
		{"from a child switch", func(p *hpu.Packet) { p.Hdr.Flags |= wire.FlagFromSwitch }, invalid},
	}
	for _, tc := range cases {
		s, q := newTestSparse(t, cfg)
		p := good()
		tc.mutate(p)
		down := runSparseVirtual(s, []*hpu.Packet{p})
		if tc.counter(s) != 1 || s.Stats.Packets.Load() != 0 || len(down) != 0 || q.InUse() != 0 {
			t.Errorf("%s: counted %d, admitted %d, emitted %d, %d buffers held", tc.name, tc.counter(s),
				s.Stats.Packets.Load(), len(down), q.InUse())
		}
	}
	// Streams that contradict themselves.
	s, _ := newTestSparse(t, cfg)
	last1 := good()
	last1.Hdr.Block = wire.SparseBlockField(0, 1)
	other := good()
	other.Hdr.Block = wire.SparseBlockField(0, 2) // a second, different last packet
	after := good()
	after.Hdr.Block = wire.SparseBlockField(0, 3)
	after.Hdr.Flags = 0
	after.Payload, _ = wire.AppendPairs(nil, wire.Float32, []uint32{5, 6, 7, 8}, make([]byte, 16))
	after.Hdr.Count = 4
	runSparseVirtual(s, []*hpu.Packet{last1, other, after})
	if s.Stats.Invalid.Load() != 2 || s.Stats.Packets.Load() != 1 {
		t.Errorf("contradicting stream: %d invalid, %d admitted; want 2 and 1", s.Stats.Invalid.Load(), s.Stats.Packets.Load())
	}
	// A last packet whose sequence is below one already admitted.
	s, _ = newTestSparse(t, cfg)
	runSparseVirtual(s, []*hpu.Packet{after, last1})
	if s.Stats.Invalid.Load() != 1 {
		t.Errorf("last packet before an admitted one: %d invalid, want 1", s.Stats.Invalid.Load())
	}
}

func invalid(s *Sparse) int64  { return s.Stats.Invalid.Load() }
func badIndex(s *Sparse) int64 { return s.Stats.BadIndex.Load() }

// Garbage headers and payloads never panic the handler.
func TestSparseGarbageNeverPanics(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, dg := range sparseDesigns {
		cfg := SparseConfig{Job: 1, Children: 3, DType: wire.Int16, Op: wire.OpMin, Storage: dg.storage, Buffers: dg.b,
			Elements: 300, BlockElems: 128, HashSlots: 8, PacketPairs: 5}
		s, _ := newTestSparse(t, cfg)
		var pkts []*hpu.Packet
		for range 5000 {
			payload := make([]byte, r.IntN(40))
			for i := range payload {
				payload[i] = byte(r.IntN(4)) // small indices, so some land in range
			}
			pkts = append(pkts, &hpu.Packet{Hdr: wire.Header{
				Type: wire.TypeSparse, Flags: wire.Flags(r.IntN(16)), Generation: uint32(r.IntN(3)),
				Block: wire.SparseBlockField(uint32(r.IntN(4)), uint32(r.IntN(30))), Child: uint16(r.IntN(4)),
				DType: wire.Int16, Op: wire.OpMin, Count: uint32(r.IntN(8)),
			}, Payload: payload})
		}
		runSparseVirtual(s, pkts)
		s.Close()
	}
}

// Steady state on the handler path allocates nothing: admission, hash
// probing with spills, array folding, the flush's sort and emission.
func TestSparseZeroAlloc(t *testing.T) {
	for _, dg := range sparseDesigns {
		cfg := SparseConfig{Job: 1, Children: 8, DType: wire.Float32, Op: wire.OpSum, Storage: dg.storage, Buffers: dg.b,
			Elements: 512, BlockElems: 512, HashSlots: 48, PacketPairs: 16}
		s, _ := newTestSparse(t, cfg)
		r := rand.New(rand.NewPCG(10, 10))
		pkts := sparsePackets(r, cfg, randomSparseInputs(r, cfg.DType, cfg.Op, 8, 512, 0.1, patRandom), 0, 0.1)
		if allocs := allocsPerGeneration(s, pkts, 8, 50); allocs != 0 {
			t.Fatalf("%s: %.1f allocations per block of %d packets, want 0", dg, allocs, len(pkts))
		}
		if s.Stats.Completed.Load() < 50 {
			t.Fatalf("%s: only %d blocks completed", dg, s.Stats.Completed.Load())
		}
		if dg.storage == wire.StorageHash && s.Stats.Spilled.Load() == 0 {
			t.Fatalf("%s: nothing spilled; the test should cover the spill path", dg)
		}
	}
}

func TestSparseConfigValidate(t *testing.T) {
	unit, _ := hpu.New(hpu.Config{Clusters: 1, L1Bytes: 64 << 10, BufferBytes: 1024}, nopEgress{}, nil)
	q, _ := unit.Memory().Reserve(8)
	ok := SparseConfig{Children: 4, DType: wire.Float32, Op: wire.OpSum, Storage: wire.StorageHash, Buffers: 1,
		Elements: 1000, BlockElems: 100, HashSlots: 64, PacketPairs: 16, Quota: q}
	if _, err := NewSparse(ok); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
	cases := []struct {
		name   string
		mutate func(c *SparseConfig)
	}{
		{"prod", func(c *SparseConfig) { c.Op = wire.OpProd }},
		{"xor", func(c *SparseConfig) { c.DType, c.Op = wire.Int32, wire.OpXor }},
		{"dense storage", func(c *SparseConfig) { c.Storage = wire.StorageDense }},
		{"no buffers", func(c *SparseConfig) { c.Buffers = 0 }},
		{"too many buffers", func(c *SparseConfig) { c.Buffers = proto.MaxBuffers + 1 }},
		{"no children", func(c *SparseConfig) { c.Children = 0 }},
		{"no elements", func(c *SparseConfig) { c.Elements = 0 }},
		{"no block", func(c *SparseConfig) { c.BlockElems = 0 }},
		{"too many blocks", func(c *SparseConfig) { c.Elements = wire.MaxSparseBlocks*100 + 1 }},
		{"no hash slots", func(c *SparseConfig) { c.HashSlots = 0 }},
		{"no packet pairs", func(c *SparseConfig) { c.PacketPairs = 0 }},
		{"packet larger than a buffer", func(c *SparseConfig) { c.PacketPairs = 200 }},
		{"stream too long", func(c *SparseConfig) { c.BlockElems, c.PacketPairs, c.Elements = 1<<17, 1, 1<<17 }},
		{"quota below a block", func(c *SparseConfig) { c.Storage, c.BlockElems = wire.StorageArray, 4096 }},
		{"no quota", func(c *SparseConfig) { c.Quota = nil }},
		{"unknown dtype", func(c *SparseConfig) { c.DType = 0 }},
		{"steer run not a power of two", func(c *SparseConfig) { c.SteerRun = 3 }},
		{"steer run too long", func(c *SparseConfig) { c.SteerRun = 2 * MaxSteerRun }},
		{"negative steer run", func(c *SparseConfig) { c.SteerRun = -1 }},
		{"negative readers", func(c *SparseConfig) { c.Readers = -1 }},
	}
	for _, tc := range cases {
		c := ok
		tc.mutate(&c)
		if _, err := NewSparse(c); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}
