package handlers

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/wire"
)

// treeCapture splits what one switch of a tree emits: up to its parent
// (from-switch), down to its members, and waiting reports.
type treeCapture struct {
	up, down []sparseDown
	waiting  []string
}

func (c *treeCapture) Emit(h *wire.Header, payload []byte) {
	d := sparseDown{hdr: *h, payload: bytes.Clone(payload)}
	switch {
	case h.Type == wire.TypeError:
		var b wire.ErrorBody
		if b.Unmarshal(payload) == nil {
			c.waiting = append(c.waiting, string(b.Text))
		}
	case h.Flags&wire.FlagFromSwitch != 0:
		c.up = append(c.up, d)
	default:
		c.down = append(c.down, d)
	}
}

// runOn feeds packets to handler h on a VirtualUnit of 8 cores, 100
// cycles apart from t0.
func runOn(h hpu.Handler, eg hpu.Egress, pkts []*hpu.Packet, t0 int64) {
	v := newVUnit(eg, 8)
	defer v.close()
	for i, p := range pkts {
		p.Handler = h
		v.submit(p, t0+int64(i)*100)
	}
	v.drain()
}

// asPackets turns emitted packets into arriving ones, a fraction dup of
// them twice, shuffled.
func asPackets(r *rand.Rand, ds []sparseDown, dup float64) []*hpu.Packet {
	var pkts []*hpu.Packet
	for _, d := range ds {
		pkts = append(pkts, &hpu.Packet{Hdr: d.hdr, Payload: d.payload})
		if r.Float64() < dup {
			pkts = append(pkts, &hpu.Packet{Hdr: d.hdr, Payload: d.payload})
		}
	}
	r.Shuffle(len(pkts), func(i, j int) { pkts[i], pkts[j] = pkts[j], pkts[i] })
	return pkts
}

// sparseTree is a root and leaves built for one job shape.
type sparseTree struct {
	root   *Sparse
	leaves []*Sparse
	quotas []*hpu.Quota
}

// newSparseTree builds leaves with hosts[i] hosts each under one root that
// also has localHosts hosts of its own (children len(hosts).. of the
// root), every switch with base's shape; the root sizes its view of the
// leaves from their stream bounds, as the daemon does from their joins.
func newSparseTree(t *testing.T, base SparseConfig, hosts []int, localHosts int) *sparseTree {
	t.Helper()
	tr := &sparseTree{}
	bound := 0
	for i, h := range hosts {
		cfg := base
		cfg.Children, cfg.KeepResults, cfg.Uplink = h, true, &Uplink{Child: uint16(i)}
		s, q := newTestSparse(t, cfg)
		tr.leaves, tr.quotas = append(tr.leaves, s), append(tr.quotas, q)
		bound = max(bound, cfg.StreamBound())
	}
	cfg := base
	cfg.Children, cfg.KeepResults, cfg.SwitchChildren, cfg.ChildStream = len(hosts)+localHosts, true, len(hosts), bound
	s, q := newTestSparse(t, cfg)
	tr.root, tr.quotas = s, append(tr.quotas, q)
	return tr
}

// treeShape draws a shape the whole tree accepts: the root's stream
// bound grows with its children's, so small packets may need enlarging.
func treeShape(r *rand.Rand, dg sparseDesign, dt wire.DType, op wire.Op, hosts []int, localHosts, n int) SparseConfig {
	cfg := randomSparseConfig(r, dg, dt, op, slices.Max(hosts), n)
	for {
		leaf := cfg
		leaf.Children, leaf.Uplink, leaf.KeepResults = slices.Max(hosts), &Uplink{}, true
		root := cfg
		root.Children, root.SwitchChildren, root.ChildStream = len(hosts)+localHosts, len(hosts), leaf.StreamBound()
		if leaf.StreamBound() <= wire.MaxSparseSeq && root.maxDownstream() <= wire.MaxSparseSeq {
			return cfg
		}
		cfg.PacketPairs = min(cfg.PacketPairs*4, 1024/wire.PairSize(dt))
	}
}

// Sparse through a two-level tree, every design × dtype × op: 1 to 4
// leaves of 1 to 5 hosts, and 0 to 2 hosts on the root itself (children
// after the leaves), random index sets and densities, every hop's
// packets shuffled with 20% duplicates, two generations; every host's
// result checked against the reference over all hosts, and all memory
// back at the end.
func TestSparseTreeRandom(t *testing.T) {
	r, seed := seededRand(t, 21)
	densities := []float64{0.001, 0.01, 0.1, 0.5}
	patterns := []string{patRandom, patIdentical, patDisjoint}
	for _, dg := range sparseDesigns {
		for _, dt := range wire.DTypes {
			op := sparseOps[r.IntN(len(sparseOps))]
			hosts := make([]int, 1+r.IntN(4))
			for i := range hosts {
				hosts[i] = 1 + r.IntN(5)
			}
			local := r.IntN(3)
			n := 1 + r.IntN(2000/sparseTestScale)
			density, pat := densities[r.IntN(len(densities))], patterns[r.IntN(len(patterns))]
			name := fmt.Sprintf("%s/%s/%s/hosts=%v+%d/n=%d/d=%g/%s", dg, dt, op, hosts, local, n, density, pat)
			cfg := treeShape(r, dg, dt, op, hosts, local, n)
			tr := newSparseTree(t, cfg, hosts, local)
			for gen := range uint32(2) {
				var all [][]byte
				caps := make([]*treeCapture, len(hosts))
				var up []sparseDown
				for i, h := range hosts {
					inputs := randomSparseInputs(r, dt, op, h, n, density, pat)
					all = append(all, inputs...)
					caps[i] = &treeCapture{}
					runOn(tr.leaves[i], caps[i], sparsePackets(r, tr.leaves[i].Config(), inputs, gen, 0.2), 0)
					up = append(up, caps[i].up...)
				}
				// The root's own hosts send their streams as children
				// len(hosts).. next to the leaves' streams.
				rootIn := asPackets(r, up, 0.2)
				if local > 0 {
					inputs := randomSparseInputs(r, dt, op, local, n, density, pat)
					all = append(all, inputs...)
					pkts := sparsePackets(r, tr.leaves[0].Config(), inputs, gen, 0.2)
					for _, p := range pkts {
						p.Hdr.Child += uint16(len(hosts))
					}
					rootIn = append(rootIn, pkts...)
					r.Shuffle(len(rootIn), func(i, j int) { rootIn[i], rootIn[j] = rootIn[j], rootIn[i] })
				}
				rc := &treeCapture{}
				runOn(tr.root, rc, rootIn, 0)
				if local > 0 {
					got, err := hostMerge(r, tr.root.Config(), rc.down, gen, 0.2)
					if err == nil {
						err = elem.CheckSparse(dt, op, all, got)
					}
					if err != nil {
						t.Fatalf("%s gen %d a root's host (seed %d): %v", name, gen, seed, err)
					}
				}
				for i := range hosts {
					runOn(tr.leaves[i].Down(), caps[i], asPackets(r, rc.down, 0.2), 0)
					got, err := hostMerge(r, tr.leaves[i].Config(), caps[i].down, gen, 0.2)
					if err != nil {
						t.Fatalf("%s gen %d leaf %d (seed %d): %v", name, gen, i, seed, err)
					}
					if err := elem.CheckSparse(dt, op, all, got); err != nil {
						t.Fatalf("%s gen %d leaf %d (seed %d, cfg %+v): %v", name, gen, i, seed, cfg, err)
					}
				}
			}
			for i, q := range tr.quotas {
				if q.InUse() != 0 {
					t.Fatalf("%s: switch %d holds %d buffers after every block flushed", name, i, q.InUse())
				}
			}
		}
	}
}

// A lost packet on either side of the leaf ↔ root link is recovered by a
// host's retransmission: the leaf re-sends its stream up (once per
// UplinkResendGap) and tells the host the block waits for the parent; the
// root, its block finished, answers with its stream; once the leaf has
// the root's stream, a retransmission is answered from there.
func TestSparseTreeLoss(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	const n = 600
	cfg := SparseConfig{Job: 1, Token: 7, DType: wire.Int32, Op: wire.OpSum, Storage: wire.StorageHash, Buffers: 1,
		Elements: n, BlockElems: 200, HashSlots: 64, PacketPairs: 8}
	tr := newSparseTree(t, cfg, []int{2, 2}, 0)
	inputs := [][][]byte{
		randomSparseInputs(r, cfg.DType, cfg.Op, 2, n, 0.3, patRandom),
		randomSparseInputs(r, cfg.DType, cfg.Op, 2, n, 0.3, patRandom),
	}
	all := append(slices.Clone(inputs[0]), inputs[1]...)
	caps := []*treeCapture{{}, {}}
	hostPkts := make([][]*hpu.Packet, 2)
	for i := range 2 {
		hostPkts[i] = sparsePackets(r, tr.leaves[i].Config(), inputs[i], 1, 0)
		runOn(tr.leaves[i], caps[i], hostPkts[i], 0)
	}
	// Leaf 0's last packet of block 0 is lost on its way up.
	var up []sparseDown
	lost := -1
	for i, d := range caps[0].up {
		if b, _ := wire.SplitSparseBlock(d.hdr.Block); b == 0 && d.hdr.Flags&wire.FlagLast != 0 {
			lost = i
		}
	}
	up = append(append(up, caps[0].up[:lost]...), caps[0].up[lost+1:]...)
	up = append(up, caps[1].up...)
	rc := &treeCapture{}
	runOn(tr.root, rc, asPackets(r, up, 0), 0)
	if got := tr.root.Stats.Completed.Load(); got != 2 {
		t.Fatalf("root completed %d blocks with a packet of block 0 lost, want 2", got)
	}
	// Block 1's first result packet down to leaf 1 is lost too.
	var toLeaf1 []sparseDown
	dropped := false
	for _, d := range rc.down {
		if b, seq := wire.SplitSparseBlock(d.hdr.Block); b == 1 && seq == 0 && !dropped {
			dropped = true
			continue
		}
		toLeaf1 = append(toLeaf1, d)
	}
	runOn(tr.leaves[0].Down(), caps[0], asPackets(r, rc.down, 0), 0)
	runOn(tr.leaves[1].Down(), caps[1], asPackets(r, toLeaf1, 0), 0)

	// A host of each leaf retransmits the stuck block's packet 0.
	retransmit := func(leaf int, blk uint32, at int64) {
		for _, p := range hostPkts[leaf] {
			if b, seq := wire.SplitSparseBlock(p.Hdr.Block); b == blk && seq == 0 && p.Hdr.Child == 1 {
				q := *p
				q.Hdr.Flags |= wire.FlagRetransmit
				caps[leaf].up = caps[leaf].up[:0]
				runOn(tr.leaves[leaf], caps[leaf], []*hpu.Packet{&q}, at)
				return
			}
		}
		t.Fatalf("no packet 0 of block %d at leaf %d", blk, leaf)
	}
	retransmit(0, 0, 1e9)
	retransmit(1, 1, 1e9)
	for i := range 2 {
		if len(caps[i].waiting) != 1 || !strings.Contains(caps[i].waiting[0], "waits for the parent switch") {
			t.Fatalf("leaf %d told its host %q, want that the block waits for the parent", i, caps[i].waiting)
		}
		if len(caps[i].up) == 0 || caps[i].up[0].hdr.Flags&wire.FlagRetransmit == 0 {
			t.Fatalf("leaf %d re-sent %d packets up, want its stream marked retransmit", i, len(caps[i].up))
		}
	}
	// A second host asking within UplinkResendGap sends nothing more up.
	upAgain := slices.Clone(caps[0].up)
	retransmit(0, 0, 1e9+UplinkResendGap/2)
	if len(caps[0].up) != 0 {
		t.Fatalf("leaf 0 re-sent %d packets up again within the resend gap", len(caps[0].up))
	}
	rc2 := &treeCapture{}
	runOn(tr.root, rc2, asPackets(r, append(slices.Clone(upAgain), caps[1].up...), 0), 2e9)
	for i := range 2 {
		var mine []sparseDown
		for _, d := range rc2.down {
			if d.hdr.Flags&wire.FlagRetransmit == 0 || int(d.hdr.Child) == i {
				mine = append(mine, d)
			}
		}
		runOn(tr.leaves[i].Down(), caps[i], asPackets(r, mine, 0), 2e9)
		got, err := hostMerge(r, tr.leaves[i].Config(), caps[i].down, 1, 0)
		if err != nil {
			t.Fatalf("leaf %d after recovery: %v", i, err)
		}
		if err := elem.CheckSparse(cfg.DType, cfg.Op, all, got); err != nil {
			t.Fatalf("leaf %d after recovery: %v", i, err)
		}
	}
	// Now the leaf has the root's stream: a retransmission is answered
	// from it, to that host, and nothing goes up.
	before := tr.leaves[1].Stats.Resent.Load()
	retransmit(1, 1, 3e9)
	if len(caps[1].up) != 0 || tr.leaves[1].Stats.Resent.Load() == before {
		t.Fatalf("leaf 1 with the root's stream: %d packets up, %d resent; want 0 up and the stream resent",
			len(caps[1].up), tr.leaves[1].Stats.Resent.Load()-before)
	}
}

// A leaf records its parent's stream of generation g as the parent sent
// it: a packet of generation g-2 (the same record's parity) that arrives
// late is stale, and a packet past the stream's last, or a second last,
// contradicts it; neither goes down nor into the record, so what the
// hosts hear, and what a host's retransmission replays, is g's result.
func TestSparseTreeParentStream(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 15))
	const n = 200
	cfg := SparseConfig{Job: 1, Token: 7, DType: wire.Int32, Op: wire.OpSum, Storage: wire.StorageArray, Buffers: 1,
		Elements: n, BlockElems: n, PacketPairs: 8}
	tr := newSparseTree(t, cfg, []int{2}, 0)
	leaf := tr.leaves[0]
	inputs := randomSparseInputs(r, cfg.DType, cfg.Op, 2, n, 0.5, patRandom)
	const gen = 3
	hostPkts := sparsePackets(r, leaf.Config(), inputs, gen, 0)
	up, rc := &treeCapture{}, &treeCapture{}
	runOn(leaf, up, hostPkts, 0)
	runOn(tr.root, rc, asPackets(r, up.up, 0), 0)
	stream := slices.Clone(rc.down)
	slices.SortFunc(stream, func(a, b sparseDown) int { return int(a.hdr.Block) - int(b.hdr.Block) })
	if len(stream) < 4 {
		t.Fatalf("the root's stream has %d packets; the test needs 4 or more", len(stream))
	}
	last := stream[len(stream)-1]
	_, lastSeq := wire.SplitSparseBlock(last.hdr.Block)
	// Stale copies of the second half, their values changed, and packets
	// that contradict the stream: past its last, and a second last.
	var stale, bad []*hpu.Packet
	for _, d := range stream[len(stream)/2:] {
		h := d.hdr
		h.Generation = gen - 2
		v := bytes.Clone(d.payload)
		for i := 4; i < len(v); i += 8 {
			v[i] ^= 0x55
		}
		stale = append(stale, &hpu.Packet{Hdr: h, Payload: v})
	}
	for _, seq := range []uint32{lastSeq + 1, lastSeq + 2} {
		h := last.hdr
		h.Block = wire.SparseBlockField(0, seq)
		if seq == lastSeq+1 {
			h.Flags &^= wire.FlagLast
		}
		bad = append(bad, &hpu.Packet{Hdr: h, Payload: last.payload})
	}
	down := &treeCapture{}
	asArriving := func(ds []sparseDown) []*hpu.Packet { return asPackets(r, ds, 0) }
	runOn(leaf.Down(), down, asArriving(stream[:len(stream)/2]), 1e6)
	runOn(leaf.Down(), down, stale, 2e6)
	runOn(leaf.Down(), down, asArriving(stream[len(stream)/2:]), 3e6)
	runOn(leaf.Down(), down, bad, 4e6)
	if got := leaf.Stats.Stale.Load(); got != int64(len(stale)) {
		t.Errorf("%d stale packets counted, want %d", got, len(stale))
	}
	if got := leaf.Stats.Invalid.Load(); got != 2 {
		t.Errorf("%d packets counted invalid, want the 2 that contradict the stream", got)
	}
	if len(down.down) != len(stream) {
		t.Errorf("%d packets went down, want the stream's %d", len(down.down), len(stream))
	}
	check := func(what string, ds []sparseDown) {
		t.Helper()
		got, err := hostMerge(r, cfg, ds, gen, 0)
		if err == nil {
			err = elem.CheckSparse(cfg.DType, cfg.Op, inputs, got)
		}
		if err != nil {
			t.Fatalf("the hosts' result from %s: %v", what, err)
		}
	}
	check("what went down", down.down)
	// A host's retransmission is answered from the record: g's stream.
	i := slices.IndexFunc(hostPkts, func(p *hpu.Packet) bool { _, seq := wire.SplitSparseBlock(p.Hdr.Block); return seq == 0 })
	q := *hostPkts[i]
	q.Hdr.Flags |= wire.FlagRetransmit
	replay := &treeCapture{}
	runOn(leaf, replay, []*hpu.Packet{&q}, 5e9)
	if len(replay.up) != 0 {
		t.Fatalf("the leaf sent %d packets up; it has the parent's stream", len(replay.up))
	}
	check("the replayed stream", replay.down)
	tr.root.Close()
}

// Each switch takes its own children's kind of stream only: a root of
// switches drops a host's packet, a leaf a packet marked from-switch from a
// host, and the parent's stream handler anything but Sparse or Spill
// packets within the job's shape.
func TestSparseTreeRejects(t *testing.T) {
	cfg := SparseConfig{Job: 1, Token: 7, DType: wire.Int32, Op: wire.OpSum, Storage: wire.StorageArray, Buffers: 1,
		Elements: 64, BlockElems: 64, PacketPairs: 8}
	tr := newSparseTree(t, cfg, []int{2}, 0)
	pair := make([]byte, wire.PairSize(wire.Int32))
	pkt := func(typ wire.Type, flags wire.Flags, count uint32) *hpu.Packet {
		return &hpu.Packet{Hdr: wire.Header{Version: wire.Version, Type: typ, Flags: flags | wire.FlagLast, Job: 1, Token: 7,
			DType: wire.Int32, Op: wire.OpSum, Count: count}, Payload: bytes.Repeat(pair, int(count))}
	}
	for _, c := range []struct {
		name string
		h    hpu.Handler
		p    *hpu.Packet
		s    *Sparse
	}{
		{"host packet at a root of switches", tr.root, pkt(wire.TypeSparse, 0, 1), tr.root},
		{"from-switch packet at a leaf", tr.leaves[0], pkt(wire.TypeSparse, wire.FlagFromSwitch, 1), tr.leaves[0]},
		{"data packet from the parent", tr.leaves[0].Down(), pkt(wire.TypeData, 0, 1), tr.leaves[0]},
		{"spill marked last from the parent", tr.leaves[0].Down(), pkt(wire.TypeSpill, 0, 1), tr.leaves[0]},
		{"more than a packet of pairs from the parent", tr.leaves[0].Down(), pkt(wire.TypeSparse, 0, 9), tr.leaves[0]},
		{"more than a packet of pairs from a child switch", tr.root, pkt(wire.TypeSparse, wire.FlagFromSwitch, 9), tr.root},
	} {
		before := c.s.Stats.Invalid.Load()
		runOn(c.h, &treeCapture{}, []*hpu.Packet{c.p}, 0)
		if c.s.Stats.Invalid.Load() != before+1 {
			t.Errorf("%s: not counted invalid", c.name)
		}
	}
	// A child switch's short packet that is not its last is fine.
	ok := pkt(wire.TypeSparse, wire.FlagFromSwitch, 3)
	ok.Hdr.Flags &^= wire.FlagLast
	runOn(tr.root, &treeCapture{}, []*hpu.Packet{ok}, 0)
	if tr.root.Stats.Packets.Load() != 1 {
		t.Fatalf("a child switch's short packet was not taken: %d invalid", tr.root.Stats.Invalid.Load())
	}
	tr.root.Close()
}

// A leaf's steady state allocates nothing: its hosts' streams, its stream
// up (recorded for re-sends), and the parent's stream recorded and passed
// down, generation after generation.
func TestSparseTreeZeroAlloc(t *testing.T) {
	cfg := SparseConfig{Job: 1, Token: 7, DType: wire.Float32, Op: wire.OpSum, Storage: wire.StorageHash, Buffers: 1,
		Elements: 512, BlockElems: 512, HashSlots: 48, PacketPairs: 16}
	tr := newSparseTree(t, cfg, []int{4}, 0)
	leaf := tr.leaves[0]
	r := rand.New(rand.NewPCG(12, 12))
	inputs := randomSparseInputs(r, cfg.DType, cfg.Op, 4, 512, 0.1, patRandom)
	hostPkts := sparsePackets(r, leaf.Config(), inputs, 0, 0)
	// The root's stream for the block, as packets from the parent.
	up := &treeCapture{}
	runOn(leaf, up, hostPkts, 0)
	rc := &treeCapture{}
	runOn(tr.root, rc, asPackets(r, up.up, 0), 0)
	downPkts := asPackets(r, rc.down, 0)
	v := newVUnit(nopEgress{}, 8)
	defer v.close()
	down := leaf.Down()
	gen := uint32(0)
	allocs := testing.AllocsPerRun(50, func() {
		gen++
		for _, p := range hostPkts {
			p.Hdr.Generation, p.Handler = gen, leaf
			v.submit(p, 0)
		}
		v.drain()
		for _, p := range downPkts {
			p.Hdr.Generation, p.Handler = gen, down
			v.submit(p, 0)
		}
		v.drain()
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per generation, want 0", allocs)
	}
	if leaf.Stats.Down.Load() < 50*int64(len(downPkts)) {
		t.Fatalf("only %d packets passed down", leaf.Stats.Down.Load())
	}
}
