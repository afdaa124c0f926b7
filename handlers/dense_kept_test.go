package handlers

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/wire"
)

// keptCapture is a real-time unit's KeptEgress: it holds a kept payload as
// the slice it was given, without copying, as the daemon's writer does
// until it sends, and copies every other payload.
type keptCapture struct {
	mu      sync.Mutex
	kept    map[[2]uint32][]byte // (generation, block) → the payload as emitted
	copied  map[[2]uint32][]byte
	up      int // partials sent up (FlagFromSwitch)
	badKept int // kept emits of anything but a result
}

func (c *keptCapture) record(h *wire.Header, payload []byte, kept bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := [2]uint32{h.Generation, h.Block}
	switch {
	case kept:
		if h.Type != wire.TypeResult {
			c.badKept++
		}
		c.kept[key] = payload
	case h.Type == wire.TypeData && h.Flags&wire.FlagFromSwitch != 0:
		c.up++
		c.copied[key] = bytes.Clone(payload)
	case h.Type == wire.TypeResult:
		c.copied[key] = bytes.Clone(payload)
	}
}

func (c *keptCapture) Emit(h *wire.Header, payload []byte) { c.record(h, payload, false) }
func (c *keptCapture) EmitFor(_ *hpu.Packet, h *wire.Header, payload []byte) {
	c.record(h, payload, false)
}
func (c *keptCapture) EmitFrom(_ int, _ *hpu.Packet, h *wire.Header, payload []byte) {
	c.record(h, payload, false)
}
func (c *keptCapture) EmitKeptFrom(_ int, _ *hpu.Packet, h *wire.Header, payload []byte) {
	c.record(h, payload, true)
}
func (c *keptCapture) Flush(int) {}

func (c *keptCapture) has(gen, blk uint32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := [2]uint32{gen, blk}
	return c.kept[key] != nil || c.copied[key] != nil
}

// A root's results leave from the result store without a copy: every
// design's kept payloads, held uncopied while later blocks reuse the L1
// buffers they were summed in and the next generation runs, still hold
// their generation's reference sum. A non-root's partials, which the
// parent's result replaces in the store, are copied, never kept.
func TestDenseKeptResults(t *testing.T) {
	const p, pe, nblocks = 4, 256, 24
	n := pe*nblocks - 100 // a short last block
	for _, dg := range designs {
		for _, uplink := range []*Uplink{nil, {Child: 1}} {
			name := fmt.Sprintf("%s/uplink=%v", dg, uplink != nil)
			t.Run(name, func(t *testing.T) {
				r, seed := seededRand(t, 7)
				eg := &keptCapture{kept: map[[2]uint32][]byte{}, copied: map[[2]uint32][]byte{}}
				d, submit := startKeptDense(t, eg, dg, uplink, p, n, pe)
				var want [3][]byte
				for gen := uint32(1); gen <= 2; gen++ {
					inputs := randomInputs(r, wire.Float32, wire.OpSum, p, n)
					if dg.algo == wire.AlgoTree {
						want[gen] = treeReference(t, wire.Float32, wire.OpSum, inputs)
					}
					// Block by block, so each block's L1 buffers are freed and
					// taken again by the next before its result is looked at.
					for blk := range nblocks {
						for _, pk := range makePackets(r, inputs, wire.Float32, wire.OpSum, pe, gen, 0) {
							if pk.Hdr.Block == uint32(blk) {
								pk.Handler = d
								submit(pk)
							}
						}
						deadline := time.Now().Add(10 * time.Second)
						for !eg.has(gen, uint32(blk)) {
							if time.Now().After(deadline) {
								t.Fatalf("seed %d: generation %d block %d: no result", seed, gen, blk)
							}
							time.Sleep(50 * time.Microsecond)
						}
					}
					out := make([]byte, n*4)
					for blk := range nblocks {
						key := [2]uint32{gen, uint32(blk)}
						got := eg.kept[key]
						if uplink != nil || got == nil {
							got = eg.copied[key]
						}
						copy(out[blk*pe*4:], got)
					}
					if want[gen] != nil {
						if !bytes.Equal(out, want[gen]) {
							t.Fatalf("seed %d: generation %d differs from the tree reference", seed, gen)
						}
					} else if err := elem.Check(wire.Float32, wire.OpSum, inputs, out); err != nil {
						t.Fatalf("seed %d: generation %d: %v", seed, gen, err)
					}
					if want[gen] == nil {
						want[gen] = out
					}
				}
				if eg.badKept != 0 {
					t.Errorf("%d packets other than results kept", eg.badKept)
				}
				if uplink != nil {
					if len(eg.kept) != 0 || eg.up != 2*nblocks {
						t.Errorf("a non-root kept %d payloads and sent %d partials up, want 0 and %d", len(eg.kept), eg.up, 2*nblocks)
					}
					return
				}
				if len(eg.kept) != 2*nblocks || len(eg.copied) != 0 {
					t.Fatalf("%d results kept and %d copied, want %d and 0", len(eg.kept), len(eg.copied), 2*nblocks)
				}
				// Generation 1's kept payloads, read after generation 2 ran
				// through the same L1 buffers: still generation 1's sums.
				for gen := uint32(1); gen <= 2; gen++ {
					for blk := range nblocks {
						got, lo := eg.kept[[2]uint32{gen, uint32(blk)}], blk*pe*4
						if !bytes.Equal(got, want[gen][lo:lo+len(got)]) {
							t.Fatalf("seed %d: generation %d block %d: the kept payload changed after it was emitted", seed, gen, blk)
						}
					}
				}
			})
		}
	}
}

// startKeptDense runs a real-time unit with egress eg and a Dense of the
// design that keeps results, on an L1 of a few buffers more than one
// block needs, so blocks reuse one another's; submit hands it a packet.
func startKeptDense(t *testing.T, eg hpu.Egress, dg design, uplink *Uplink, p, n, pe int) (*Dense, func(*hpu.Packet)) {
	t.Helper()
	per := 1
	switch dg.algo {
	case wire.AlgoMulti:
		per = dg.b
	case wire.AlgoTree:
		per = 2 * p
	}
	bufs := max(2*per, 4)
	unit, err := hpu.New(hpu.Config{Clusters: 1, CoresPerCluster: 4, L1Bytes: max(bufs*1024, hpu.MinL1Bytes), BufferBytes: 1024}, eg, nil)
	if err != nil {
		t.Fatal(err)
	}
	q, err := unit.Memory().Reserve(bufs)
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDense(DenseConfig{Job: 1, Algo: dg.algo, Buffers: dg.b, Children: p, DType: wire.Float32, Op: wire.OpSum,
		Elements: n, PacketElems: pe, Quota: q, Uplink: uplink, KeepResults: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { unit.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return d, func(pk *hpu.Packet) {
		pk.Arrival = time.Now().UnixNano()
		if err := unit.SubmitWait(ctx, pk); err != nil {
			t.Fatalf("submit: %v", err)
		}
	}
}
