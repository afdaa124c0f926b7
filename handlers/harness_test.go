package handlers_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/handlers"
	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/internal/harness"
	"github.com/flare-net/flare/wire"
)

// Tree float sums through the concurrent processing unit, where arrival
// order depends on goroutine scheduling as well, equal the same pairing
// computed plainly (TestTreeReproducible checks 100 virtual-time orders).
func TestTreeReproducibleHarness(t *testing.T) {
	r, seed := handlers.SeededRand(t, 1)
	handlers.TreeCases(t, r, func(c handlers.TreeCase) {
		for run := 0; run < 5; run++ {
			res, err := harness.Run(context.Background(), harness.Config{Hosts: c.P, DType: c.DType, Op: wire.OpSum, Algo: wire.AlgoTree,
				Elements: c.N, Window: 2, Dup: 0.1, Reorder: 0.3, Seed: uint64(run)}, c.Inputs)
			if err != nil {
				t.Fatal(err)
			}
			for h, out := range res.Out {
				if !bytes.Equal(out, c.Want) {
					t.Fatalf("%s harness run %d host %d (seed %d): result differs from the fixed-pairing reference", c.DType, run, h, seed)
				}
			}
		}
	})
}

// The concurrent path: real core goroutines, staggered hosts with a
// window, duplicates and reordering, back-to-back generations.
func TestHarnessConcurrent(t *testing.T) {
	r, seed := handlers.SeededRand(t, 2)
	type tc struct {
		dt wire.DType
		op wire.Op
	}
	cases := []tc{{wire.Int32, wire.OpSum}, {wire.Int8, wire.OpXor}, {wire.Float32, wire.OpSum}, {wire.BFloat16, wire.OpMax}, {wire.Float16, wire.OpSum}, {wire.Float64, wire.OpProd}, {wire.Int64, wire.OpMin}}
	var duplicates int64 // copies a handler met before their block completed
	for _, dg := range handlers.Designs {
		for _, c := range cases {
			for _, p := range []int{1, 2, 8, 64} {
				n := 1 + r.IntN(5000)
				inputs := handlers.RandomInputs(r, c.dt, c.op, p, n)
				res, err := harness.Run(context.Background(), harness.Config{
					Hosts: p, DType: c.dt, Op: c.op, Algo: dg.Algo(), Buffers: dg.B(), Elements: n,
					Window: 1 + r.IntN(8), Generations: 2, Dup: 0.1, Reorder: 0.2, Seed: seed,
				}, inputs)
				if err != nil {
					t.Fatalf("%s %s %s P=%d n=%d: %v", dg, c.dt, c.op, p, n, err)
				}
				for h, out := range res.Out {
					if err := elem.Check(c.dt, c.op, inputs, out); err != nil {
						t.Fatalf("%s %s %s P=%d n=%d host %d (seed %d): %v", dg, c.dt, c.op, p, n, h, seed, err)
					}
				}
				duplicates += res.Dense.Duplicate.Load()
			}
		}
	}
	if duplicates == 0 {
		t.Error("no handler met a duplicate: these runs tested none")
	}
}

// The single buffer contends when several cores may run one block (S = C)
// and never waits when one core owns it (S = 1).
func TestSingleBufferContention(t *testing.T) {
	const p = 64
	r := rand.New(rand.NewPCG(3, 3))
	inputs := handlers.RandomInputs(r, wire.Int32, wire.OpSum, p, 256) // one block
	run := func(s, gens int) hpu.CoreStats {
		res, err := harness.Run(context.Background(), harness.Config{
			HPU:   hpu.Config{Clusters: 1, CoresPerCluster: 8, SubsetS: s, QueueDepth: 64},
			Hosts: p, DType: wire.Int32, Op: wire.OpSum, Algo: wire.AlgoSingle, Elements: 256, Generations: gens,
		}, inputs)
		if err != nil {
			t.Fatal(err)
		}
		for _, out := range res.Out {
			if err := elem.Check(wire.Int32, wire.OpSum, inputs, out); err != nil {
				t.Fatal(err)
			}
		}
		return res.HPU.Total()
	}
	if st := run(1, 50); st.Contended != 0 || st.LockWaitNs != 0 {
		t.Fatalf("S=1: %d contended acquisitions, %d ns waiting; want none", st.Contended, st.LockWaitNs)
	}
	// Handlers meet at the buffer only while two cores run at once, which
	// a busy machine (other processes, go test's other packages) allows
	// only now and then: try for a while, not a fixed number of times.
	var st hpu.CoreStats
	tries, start := 0, time.Now()
	for ; st.Contended == 0 && (tries < 20 || time.Since(start) < 20*time.Second); tries++ {
		st = run(8, 50)
	}
	if st.Contended == 0 || st.LockWaitNs == 0 {
		t.Fatalf("S=8: no lock contention in %d×50 one-block allreduces of 64 packets (%v)", tries, time.Since(start).Round(time.Millisecond))
	}
	t.Logf("S=8: %d contended acquisitions, %d ns waiting", st.Contended, st.LockWaitNs)
}
