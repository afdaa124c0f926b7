package handlers

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/wire"
)

// A packet refused for want of memory leaves no trace: its contributor
// bit, its admission and its count are taken back, and the block's
// record goes back to the pool when it held nothing else, so the host's
// retransmission is aggregated and the sum is exact. Each design is run
// with a quota too small for every block at once, arrivals shuffled, and
// every host retransmitting all its packets until each block has its
// result: the single design refused when its one block record is taken,
// the multi-buffer design when its block's B buffers are not all there
// (B+1 buffers: a second block gets one of its two, and must give it
// back).
func TestDenseNoBufferLeavesNoTrace(t *testing.T) {
	const p, nblocks = 3, 5
	for _, tc := range []struct {
		dg    design
		quota int
	}{
		{design{wire.AlgoSingle, 0}, 1},
		{design{wire.AlgoMulti, 2}, 3},
		{design{wire.AlgoMulti, 4}, 4},
	} {
		for _, dt := range []wire.DType{wire.Int32, wire.Float32, wire.Float16} {
			name := fmt.Sprintf("%s/quota=%d/%s", tc.dg, tc.quota, dt)
			r := rand.New(rand.NewPCG(uint64(tc.quota), uint64(dt)))
			pe := 1024 / dt.Size()
			n := nblocks*pe - pe/2
			d := buildDense(t, DenseConfig{Job: 1, Algo: tc.dg.algo, Buffers: tc.dg.b, Children: p, DType: dt, Op: wire.OpSum,
				Elements: n, PacketElems: pe}, tc.quota)
			inputs := randomInputs(r, dt, wire.OpSum, p, n)
			eg := &capture{out: make([]byte, n*dt.Size()), pe: pe * dt.Size(), emitted: map[uint32]int{}}
			pkts := makePackets(r, inputs, dt, wire.OpSum, pe, 1, 0.2)
			virtualRun(d, eg, pkts, 4)
			if d.Stats.NoBuffer.Load() == 0 {
				t.Fatalf("%s: no packet refused with memory for one block", name)
			}
			passes := 1
			for ; len(eg.emitted) < nblocks; passes++ {
				if passes > nblocks {
					t.Fatalf("%s: %d of %d blocks after %d passes (%s)", name, len(eg.emitted), nblocks, passes, d.Stats.String())
				}
				for _, q := range pkts {
					q.Hdr.Flags |= wire.FlagRetransmit
				}
				r.Shuffle(len(pkts), func(i, j int) { pkts[i], pkts[j] = pkts[j], pkts[i] })
				virtualRun(d, eg, pkts, 4)
			}
			if err := elem.Check(dt, wire.OpSum, inputs, eg.out); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if got := d.Stats.Packets.Load(); got != p*nblocks {
				t.Errorf("%s: %d contributions counted, want %d: a refused packet's count was kept", name, got, p*nblocks)
			}
			if d.Stats.Completed.Load() != nblocks || d.Config().Quota.InUse() != 0 {
				t.Errorf("%s: %d blocks completed, %d buffers held at the end; want %d, 0", name,
					d.Stats.Completed.Load(), d.Config().Quota.InUse(), nblocks)
			}
			t.Logf("%s: %d refused, %d passes", name, d.Stats.NoBuffer.Load(), passes)
		}
	}
}

// The tree design takes a packet's own buffer before admission, so a
// packet that finds none is refused with nothing recorded. With a quota
// of P = 3 buffers, block 0's first two children hold two and its last
// child the third while its copy runs: a packet of block 1 arriving then
// is refused, and once block 0 has its result and its buffers are back,
// the retransmission completes block 1 with the exact sum.
func TestDenseTreeNoBufferLeavesNoTrace(t *testing.T) {
	const p = 3
	dt, op := wire.Int64, wire.OpSum
	pe := 1024 / dt.Size()
	d := buildDense(t, DenseConfig{Job: 1, Algo: wire.AlgoTree, Children: p, DType: dt, Op: op, Elements: 2 * pe, PacketElems: pe}, p)
	r := rand.New(rand.NewPCG(9, 9))
	inputs := randomInputs(r, dt, op, p, 2*pe)
	sz := pe * dt.Size()
	pkt := func(blk, child int, flags wire.Flags) *hpu.Packet {
		return &hpu.Packet{Hdr: wire.Header{Version: wire.Version, Type: wire.TypeData, Job: 1, Generation: 1, Block: uint32(blk),
			Child: uint16(child), DType: dt, Op: op, Count: uint32(pe), Flags: flags}, Payload: inputs[child][blk*sz : (blk+1)*sz], Handler: d}
	}
	eg := &capture{out: make([]byte, 2*sz), pe: sz, emitted: map[uint32]int{}}
	v := newVUnit(eg, 4)
	defer v.close()
	v.run(pkt(0, 0, 0), 0)
	v.run(pkt(0, 2, 0), v.u.Now())
	if d.Config().Quota.InUse() != 2 {
		t.Fatalf("%d buffers held by block 0's first two children, want 2", d.Config().Quota.InUse())
	}
	v.submit(pkt(0, 1, 0), v.u.Now())
	v.submit(pkt(1, 0, 0), v.u.Now()+1) // while block 0's last child copies into the third buffer
	v.drain()
	if d.Stats.NoBuffer.Load() != 1 || eg.emitted[0] != 1 || len(eg.emitted) != 1 {
		t.Fatalf("refused %d, results %v; want 1 refused and block 0's result (%s)", d.Stats.NoBuffer.Load(), eg.emitted, d.Stats.String())
	}
	if d.Config().Quota.InUse() != 0 || d.Stats.Packets.Load() != p {
		t.Fatalf("%d buffers held, %d contributions after block 0; want 0, %d", d.Config().Quota.InUse(), d.Stats.Packets.Load(), p)
	}
	for _, q := range []*hpu.Packet{pkt(1, 2, 0), pkt(1, 1, 0), pkt(1, 0, wire.FlagRetransmit)} {
		v.run(q, v.u.Now())
	}
	if eg.emitted[1] != 1 || d.Stats.Completed.Load() != 2 || d.Stats.Packets.Load() != 2*p || d.Config().Quota.InUse() != 0 {
		t.Fatalf("results %v, %d completed, %d contributions, %d buffers held; want block 1's result, 2, %d, 0",
			eg.emitted, d.Stats.Completed.Load(), d.Stats.Packets.Load(), d.Config().Quota.InUse(), 2*p)
	}
	if err := elem.Check(dt, op, inputs, eg.out); err != nil {
		t.Fatal(err)
	}
}
