package handlers_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/flare-net/flare/handlers"
	"github.com/flare-net/flare/internal/harness"
	"github.com/flare-net/flare/wire"
)

// BenchmarkHarness measures packets/s through the in-process processing unit
// (default 4×8 cores) for each design: P = 8 hosts, 1 MiB of float32 each.
func BenchmarkHarness(b *testing.B) {
	const p, n = 8, 1 << 18
	r := rand.New(rand.NewPCG(1, 1))
	inputs := handlers.RandomInputs(r, wire.Float32, wire.OpSum, p, n)
	for _, dg := range handlers.Designs {
		b.Run(dg.String(), func(b *testing.B) {
			cfg := harness.Config{Hosts: p, DType: wire.Float32, Op: wire.OpSum, Algo: dg.Algo(), Buffers: dg.B(), Elements: n, Window: 64}
			var pkts int64
			var tau float64
			b.SetBytes(int64(p * n * 4))
			b.ReportAllocs()
			for b.Loop() {
				res, err := harness.Run(context.Background(), cfg, inputs)
				if err != nil {
					b.Fatal(err)
				}
				pkts += res.Packets
				tau = res.HPU.TauCycles()
			}
			b.ReportMetric(float64(pkts)/b.Elapsed().Seconds(), "pkts/s")
			b.ReportMetric(tau, "tau-cycles")
		})
	}
}
