package swtch

import (
	"bytes"
	"fmt"
	"net/netip"
	"testing"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/wire"
)

// TestBatchesWholeRuns checks that the batches of results for every
// member that the writer sends, and a reader that sends itself (sendOwn,
// Config.SharedCPUs), hold whole GSO runs: with GSO and 1 KiB packets, 62
// results (62 datagrams of 1,056 bytes are the most one send carries), so
// that each member gets one send of 62 rather than one of 62 and one of 2
// from a batch of 64; without GSO, writerHold. A run of the cores' that
// does not fit a batch starts the next one, and every member gets every
// result once, in the order queued.
func TestBatchesWholeRuns(t *testing.T) {
	for _, tc := range []struct {
		gso, own bool
		hold     int
	}{{true, false, 62}, {false, false, writerHold}, {true, true, 62}} {
		t.Run(fmt.Sprintf("gso-%v-sendown-%v", tc.gso, tc.own), func(t *testing.T) {
			s := newJobFixture(t, func(c *Config) { c.PacketBytes, c.SharedCPUs = 1024, tc.own }).s
			rec := &recordConn{gso: tc.gso}
			s.conns = []conn.Conn{rec}
			if got := s.batchHold(0); got != tc.hold {
				t.Fatalf("batchHold = %d, want %d", got, tc.hold)
			}
			members := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:9001"), netip.MustParseAddrPort("127.0.0.1:9002"), netip.MustParseAddrPort("127.0.0.1:9003")}
			job := &liveJob{addrs: members}
			const results = 150
			var want [][]byte
			var run outRun
			for b := range results {
				h := wire.Header{Version: wire.Version, Type: wire.TypeResult, Job: 7, Block: uint32(b), Count: 256}
				op := s.outFree[0].get()
				op.buf = wire.AppendPacket(op.buf[:0], &h, make([]byte, 1024))
				op.job, op.to = job, netip.AddrPort{}
				want = append(want, bytes.Clone(op.buf))
				if run.add(op) == coreRun || b == results-1 {
					s.handOn(0, &run) // as a core hands its runs on
				}
			}
			if tc.own {
				s.sendOwn(0)
			} else {
				close(s.outs[0])
				s.writer(0)
			}

			var calls []int
			for r := results; r > 0; r -= tc.hold {
				calls = append(calls, min(r, tc.hold)*len(members))
			}
			if fmt.Sprint(rec.calls) != fmt.Sprint(calls) {
				t.Errorf("WriteBatch calls of %v datagrams, want %v (batches of %d results for %d members)", rec.calls, calls, tc.hold, len(members))
			}
			next := make(map[netip.AddrPort]int) // the result each member gets next
			for _, d := range rec.sent {
				b := next[d.to]
				if b >= results || !bytes.Equal(d.bytes, want[b]) {
					t.Fatalf("member %v: datagram %d is not block %d's result", d.to, b, b)
				}
				next[d.to]++
			}
			for _, m := range members {
				if next[m] != results {
					t.Errorf("member %v got %d results, want %d", m, next[m], results)
				}
			}
		})
	}
}
