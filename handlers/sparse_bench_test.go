package handlers

import (
	"math/rand/v2"
	"testing"

	"github.com/flare-net/flare/wire"
)

// BenchmarkSparseHandler measures the handler path alone (virtual-time
// tasks, no goroutines): P = 8 hosts, float32 sum, 1% and 10% density over
// blocks of 4096 indices, 1 KiB packets. It reports packets/s and the
// modelled cycles per packet.
func BenchmarkSparseHandler(b *testing.B) {
	for _, dg := range sparseDesigns {
		for _, density := range []float64{0.01, 0.1} {
			b.Run(dg.String()+"/"+map[float64]string{0.01: "1%", 0.1: "10%"}[density], func(b *testing.B) {
				cfg := SparseConfig{Job: 1, Children: 8, DType: wire.Float32, Op: wire.OpSum, Storage: dg.storage, Buffers: dg.b,
					Elements: 1 << 16, BlockElems: 4096, HashSlots: 1024, PacketPairs: 128}
				s, _ := newTestSparse(b, cfg)
				r := rand.New(rand.NewPCG(1, 1))
				pkts := sparsePackets(r, cfg, randomSparseInputs(r, cfg.DType, cfg.Op, 8, cfg.Elements, density, patRandom), 0, 0)
				v := newVUnit(nopEgress{}, 8)
				defer v.close()
				var n, clock int64
				gen := uint32(0)
				b.ReportAllocs()
				for b.Loop() {
					gen++
					for _, p := range pkts {
						p.Hdr.Generation = gen
						p.Handler = s
						clock += 1 << 20 // far apart: no lock waits, service time only
						v.run(p, clock)
					}
					n += int64(len(pkts))
				}
				var cycles int64
				for _, c := range v.u.Stats().Cores {
					cycles += c.Cycles
				}
				b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "pkts/s")
				b.ReportMetric(float64(cycles)/float64(n), "cycles/pkt")
			})
		}
	}
}
