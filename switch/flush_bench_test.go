package swtch

import (
	"log/slog"
	"net/netip"
	"testing"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/wire"
)

// BenchmarkSenderFlush is the writer's cost for a batch of results that
// fan out, apart from the kernel's: 62 results of 1 KiB to 8 members
// (a full batch, whole GSO sends) through a conn that sends nothing,
// with and without GSO (the stage and its runs, or a datagram each).
// ns/op is a batch; ns/datagram a member's result.
func BenchmarkSenderFlush(b *testing.B) {
	for _, gso := range []bool{true, false} {
		name := "gso"
		if !gso {
			name = "plain"
		}
		b.Run(name, func(b *testing.B) {
			s, err := New(Config{Listen: "127.0.0.1:0", Admin: "off", PacketBytes: 1024,
				HPU: hpu.Config{Clusters: 1, CoresPerCluster: 1, L1Bytes: hpu.MinL1Bytes}, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			s.conns = []conn.Conn{&recordConn{gso: gso, discard: true}}
			var members []netip.AddrPort
			for i := range 8 {
				members = append(members, netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 3, byte(i)}), 9000))
			}
			job := &liveJob{addrs: members}
			const results = 62
			pkts := make([][]byte, results)
			for r := range pkts {
				h := wire.Header{Version: wire.Version, Type: wire.TypeResult, Job: 7, Block: uint32(r), Count: 256}
				pkts[r] = wire.AppendPacket(nil, &h, make([]byte, 1024))
			}
			w := s.newSender(0)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				for _, p := range pkts {
					op := s.outFree[0].get()
					op.buf, op.job, op.to = append(op.buf[:0], p...), job, netip.AddrPort{}
					w.held = append(w.held, op)
				}
				w.flush()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*results*len(members)), "ns/datagram")
		})
	}
}
