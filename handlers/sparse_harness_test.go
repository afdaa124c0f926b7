package handlers_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/handlers"
	"github.com/flare-net/flare/internal/harness"
	"github.com/flare-net/flare/wire"
)

// The concurrent path: real core goroutines, staggered hosts with a window,
// duplicates and reordering both ways, back-to-back generations. Every host
// ends with the reference's pairs, all hosts with the same bytes, and the
// job's memory is back in its quota.
func TestSparseHarnessConcurrent(t *testing.T) {
	r, seed := handlers.SeededRand(t, 12)
	type tc struct {
		dt wire.DType
		op wire.Op
	}
	cases := []tc{{wire.Int32, wire.OpSum}, {wire.Float32, wire.OpSum}, {wire.BFloat16, wire.OpMax},
		{wire.Int8, wire.OpMin}, {wire.Float64, wire.OpSum}, {wire.Int64, wire.OpMax}}
	densities := []float64{0.001, 0.01, 0.1, 0.5}
	patterns := []string{handlers.PatRandom, handlers.PatIdentical, handlers.PatDisjoint}
	var duplicates int64 // copies a handler met before their block completed
	for _, dg := range handlers.SparseDesigns {
		for _, c := range cases {
			for _, p := range []int{1, 4, 16} {
				n := 1 + r.IntN(20000/handlers.SparseTestScale)
				density := densities[r.IntN(len(densities))]
				inputs := handlers.RandomSparseInputs(r, c.dt, c.op, p, n, density, patterns[r.IntN(len(patterns))])
				cfg := harness.SparseConfig{
					Hosts: p, DType: c.dt, Op: c.op, Storage: dg.Storage(), Buffers: dg.B(), Elements: n,
					BlockElems: []int{256, 1000, 4096}[r.IntN(3)], PacketPairs: []int{0, 7}[r.IntN(2)],
					Window: 1 + r.IntN(6), Generations: 2, Dup: 0.1, Reorder: 0.2, Seed: seed,
				}
				if r.IntN(2) == 0 {
					cfg.HashSlots = 32 // spills
				}
				res, err := harness.RunSparse(context.Background(), cfg, inputs)
				if err != nil {
					t.Fatalf("%s %s %s P=%d n=%d d=%g: %v", dg, c.dt, c.op, p, n, density, err)
				}
				if err := elem.CheckSparse(c.dt, c.op, inputs, res.Out[0]); err != nil {
					t.Fatalf("%s %s %s P=%d n=%d d=%g (seed %d): %v", dg, c.dt, c.op, p, n, density, seed, err)
				}
				for h, out := range res.Out {
					if !bytes.Equal(out, res.Out[0]) {
						t.Fatalf("%s %s %s P=%d: host %d's result differs from host 0's", dg, c.dt, c.op, p, h)
					}
				}
				if res.QuotaInUse != 0 {
					t.Fatalf("%s %s %s P=%d: %d buffers held after the last flush", dg, c.dt, c.op, p, res.QuotaInUse)
				}
				if res.Sparse.Completed.Load() != int64(2*res.Config.Blocks()) {
					t.Fatalf("%s: %d blocks completed, want %d", dg, res.Sparse.Completed.Load(), 2*res.Config.Blocks())
				}
				duplicates += res.Sparse.Duplicate.Load()
			}
		}
	}
	if duplicates == 0 {
		t.Error("no handler met a duplicate: these runs tested none")
	}
}

// With memory for one block at a time, refused packets are retransmitted
// and every block still completes exactly.
func TestSparseHarnessSmallQuota(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 13))
	inputs := handlers.RandomSparseInputs(r, wire.Int32, wire.OpSum, 4, 3000, 0.1, handlers.PatRandom)
	cfg := harness.SparseConfig{Hosts: 4, DType: wire.Int32, Op: wire.OpSum, Storage: wire.StorageArray,
		Elements: 3000, BlockElems: 1000, Window: 3, Dup: 0.1, Reorder: 0.2, Seed: 13}
	probe, _ := cfg.HandlerConfig(cfg.HPU.WithDefaults())
	cfg.Quota = probe.BlockBuffers(1024)
	res, err := harness.RunSparse(context.Background(), cfg, inputs)
	if err != nil {
		t.Fatal(err)
	}
	for h, out := range res.Out {
		if err := elem.CheckSparse(cfg.DType, cfg.Op, inputs, out); err != nil {
			t.Fatalf("host %d: %v", h, err)
		}
	}
	// Whether a packet was refused depends on how the goroutines ran (a
	// block may finish on its cluster before the next one's first packet
	// runs); TestSparseNoBufferLeavesNoTrace covers the refusal itself.
	t.Logf("%d packets refused for want of memory", res.Sparse.NoBuffer.Load())
	if res.QuotaPeak > cfg.Quota || res.QuotaInUse != 0 {
		t.Errorf("peak %d buffers of %d, %d held at the end", res.QuotaPeak, cfg.Quota, res.QuotaInUse)
	}
}
