package swtch

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/flare-net/flare/conn"
)

// TestSendOwn checks what a reader sends itself after its batch: with
// Config.SharedCPUs, everything queued for its writer, in batches of at
// most writerHold, each datagram once, the queue left empty and the send
// buffers back on the reader's list; without it, nothing, the writer
// alone sending.
func TestSendOwn(t *testing.T) {
	const queued = writerHold*2 + 5 // three sends: two full batches and the rest
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared-cpus-%v", shared), func(t *testing.T) {
			s := newJobFixture(t, func(c *Config) { c.SharedCPUs = shared }).s
			base, err := conn.NewMemNetwork().Listen(netip.MustParseAddrPort("127.0.0.1:0"))
			if err != nil {
				t.Fatal(err)
			}
			fc := &faultConn{Conn: base, offered: map[netip.AddrPort]int{}}
			s.conns = []conn.Conn{fc}
			var dests []netip.AddrPort
			for i := range queued {
				to := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 1, byte(i)}), 9000)
				dests = append(dests, to)
				queueLeave(s, to)
			}
			free := len(s.outFree[0].free)
			s.sendOwn(0)
			if !shared {
				if fc.writes != 0 || len(s.outs[0]) != queued {
					t.Fatalf("without SharedCPUs the reader sent %d batches and left %d of %d queued; want none sent", fc.writes, len(s.outs[0]), queued)
				}
				return
			}
			if n := len(s.outs[0]); n != 0 {
				t.Errorf("%d packets left in the writer's queue", n)
			}
			if fc.writes != 3 {
				t.Errorf("%d WriteBatch calls for %d datagrams, want 3 (batches of at most %d)", fc.writes, queued, writerHold)
			}
			for _, to := range dests {
				if n := fc.offered[to]; n != 1 {
					t.Errorf("the datagram to %v was sent %d times, want once", to, n)
				}
			}
			if n := len(s.outFree[0].free) - free; n != queued {
				t.Errorf("%d send buffers back on the reader's list, want %d", n, queued)
			}
		})
	}
}
