package handlers

import (
	"encoding/binary"
	"math/bits"
	"testing"

	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/wire"
)

// partialCapture keeps each emitted result with its flags and child field.
type partialCapture struct {
	res map[uint32]wire.Header
	val map[uint32][]byte
}

func (c *partialCapture) Emit(h *wire.Header, payload []byte) {
	if h.Type != wire.TypeResult {
		return
	}
	c.res[h.Block] = *h
	c.val[h.Block] = append([]byte(nil), payload...)
}

// Bounded mode: blocks whose children are all in by the deadline come out
// whole; the others are released at the deadline with exactly the
// contributions that arrived (each rank contributes 1<<rank, so the sum
// names the contributors) and their count in Child; a late packet is
// not aggregated, and its sender gets the partial result.
func TestDenseBounded(t *testing.T) {
	const p, pe, nblocks = 5, 16, 6
	unit, err := hpu.New(hpu.Config{Clusters: 1, L1Bytes: 64 * 1024, BufferBytes: 1024}, &nopEgress{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	q, err := unit.Memory().Reserve(16)
	if err != nil {
		t.Fatal(err)
	}
	const deadline = 1000
	d, err := NewDense(DenseConfig{Job: 1, Algo: wire.AlgoSingle, Children: p, DType: wire.Int32, Op: wire.OpSum,
		Elements: nblocks * pe, PacketElems: pe, Quota: q, KeepResults: true, Deadline: deadline})
	if err != nil {
		t.Fatal(err)
	}
	eg := &partialCapture{res: map[uint32]wire.Header{}, val: map[uint32][]byte{}}
	// Packets are queued to arrive at their cycles; a tick runs the unit
	// up to and through its own.
	v := newVUnit(eg, 8)
	defer v.close()
	send := func(blk uint32, rank int, at int64, flags wire.Flags) {
		payload := make([]byte, pe*4)
		for i := range pe {
			binary.LittleEndian.PutUint32(payload[i*4:], uint32(1)<<rank*uint32(i+1))
		}
		pkt := &hpu.Packet{Hdr: wire.Header{Version: wire.Version, Type: wire.TypeData, Flags: flags, Job: 1, Generation: 1, Block: blk,
			Child: uint16(rank), DType: wire.Int32, Op: wire.OpSum, Count: pe}, Payload: payload, Handler: d}
		v.submit(pkt, at)
	}
	tick := func(at int64) {
		v.run(&hpu.Packet{Handler: hpu.HandlerFunc(d.Expire)}, at)
	}
	// Block b gets ranks 0..b-1 before the deadline (block 5 gets all).
	for blk := range uint32(nblocks) {
		for r := 0; r < min(int(blk), p); r++ {
			send(blk, r, int64(blk)*10+int64(r), 0)
		}
	}
	tick(deadline - 1) // nothing is due yet
	if len(eg.res) != 1 {
		t.Fatalf("%d results before the deadline, want only block 5's", len(eg.res))
	}
	tick(10_000)
	for blk := range uint32(nblocks) {
		want := min(int(blk), p)
		h, ok := eg.res[blk]
		switch {
		case blk == 0:
			if ok {
				t.Errorf("block 0 had no packet but was released")
			}
			continue
		case !ok:
			t.Fatalf("block %d not released", blk)
		}
		partial := h.Flags&wire.FlagPartial != 0
		if partial != (want < p) || (partial && int(h.Child) != want) {
			t.Errorf("block %d: flags %v child %d, want partial %v with %d contributors", blk, h.Flags, h.Child, want < p, want)
		}
		mask := binary.LittleEndian.Uint32(eg.val[blk])
		if bits.OnesCount32(mask) != want || mask != uint32(1)<<want-1 {
			t.Errorf("block %d: contributors mask %b, want the first %d ranks", blk, mask, want)
		}
		for i := range pe {
			if v := binary.LittleEndian.Uint32(eg.val[blk][i*4:]); v != mask*uint32(i+1) {
				t.Fatalf("block %d element %d = %d, want %d", blk, i, v, mask*uint32(i+1))
			}
		}
	}
	if got := d.Stats.Partial.Load(); got != 4 {
		t.Errorf("%d partial releases, want 4", got)
	}
	if got := d.Stats.Missed.Load(); got != 4+3+2+1 {
		t.Errorf("%d missed contributions, want 10", got)
	}
	// A late packet is not aggregated; its sender gets the partial result.
	delete(eg.res, 2)
	send(2, 4, 20_000, 0)
	v.drain()
	if h, ok := eg.res[2]; !ok || h.Flags&wire.FlagPartial == 0 || h.Child != 2 {
		t.Errorf("the late rank got %+v, want the partial result with 2 contributors", h)
	}
	if mask := binary.LittleEndian.Uint32(eg.val[2]); mask != 3 {
		t.Errorf("the late packet changed the released result: mask %b", mask)
	}
	if q.InUse() != 0 {
		t.Errorf("%d buffers still held after every block was released", q.InUse())
	}
}
