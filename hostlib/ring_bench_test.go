package hostlib

import (
	"context"
	"sync"
	"testing"

	"github.com/flare-net/flare/wire"
)

// BenchmarkRing measures the ring baseline as users run it: P = 8 ranks,
// each reducing 1 MiB of float32 with sum, all inside this process over
// loopback TCP. The ranks share this machine's cores, so the figure is the
// emulator host's, not a network's. SetBytes is the vector per rank, so
// MB/s is the algorithm bandwidth; algbw_GB/s repeats it in the unit
// collective libraries report.
func BenchmarkRing(b *testing.B) {
	const p, size = 8, 1 << 20
	rings, err := NewLocalRings(context.Background(), p, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer closeRings(rings)
	// Zero vectors stay zero however often they are summed, so every
	// iteration folds ordinary values (no overflow to Inf, no NaN).
	bufs := make([][]byte, p)
	for i := range bufs {
		bufs[i] = make([]byte, size)
	}
	errs := make([]error, p)
	b.SetBytes(size)
	b.ReportAllocs()
	iters := 0
	for b.Loop() {
		var wg sync.WaitGroup
		for i, r := range rings {
			wg.Go(func() { errs[i] = r.AllReduce(context.Background(), bufs[i], wire.Float32, wire.OpSum) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				b.Fatalf("rank %d: %v", i, err)
			}
		}
		iters++
	}
	b.ReportMetric(float64(size)*float64(iters)/b.Elapsed().Seconds()/1e9, "algbw_GB/s")
}
