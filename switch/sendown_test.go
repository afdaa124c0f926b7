package swtch

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/wire"
)

// TestSendOwn checks what a reader sends itself after its batch: with
// Config.SharedCPUs, what the cores it borrowed emitted (hold) and
// everything queued for its writer, in batches of at most writerHold,
// each datagram once, the queue left empty and the send buffers back on
// the reader's list; without it, nothing, the writer alone sending.
func TestSendOwn(t *testing.T) {
	const queued = writerHold*2 + 5 // three sends: two full batches and the rest
	const held = 7                  // of them, emitted by cores the reader ran (hold)
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
				if shared && i < held {
					s.sends[0].hold(leave(s, to))
					continue
				}
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
			if n := len(s.sends[0].own.held); n != 0 {
				t.Errorf("%d packets left in the reader's own batch", n)
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

// leave is a leave packet to `to` in one of reader 0's send buffers, as a
// core emits one: not yet queued for anyone.
func leave(s *Switch, to netip.AddrPort) *outPacket {
	op := s.outFree[0].get()
	op.buf = appendLeave(op.buf[:0])
	op.to, op.job = to, nil
	return op
}

// TestSendRun checks a core goroutine's send of its own run: with
// Config.SharedCPUs and the socket free, the run goes out at once, each
// datagram once, the run left empty and its buffers back on the reader's
// list; while another sends on the socket (the lane's lock held), or
// without SharedCPUs, nothing is sent and the run stays for the writer.
func TestSendRun(t *testing.T) {
	for _, tc := range []struct {
		name         string
		shared, busy bool
		sent         bool
	}{
		{"shared-cpus", true, false, true},
		{"shared-cpus-socket-busy", true, true, false},
		{"writer-sends", false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newJobFixture(t, func(c *Config) { c.SharedCPUs = tc.shared }).s
			base, err := conn.NewMemNetwork().Listen(netip.MustParseAddrPort("127.0.0.1:0"))
			if err != nil {
				t.Fatal(err)
			}
			fc := &faultConn{Conn: base, offered: map[netip.AddrPort]int{}}
			s.conns = []conn.Conn{fc}
			var r outRun
			var dests []netip.AddrPort
			for i := range coreRun - 1 {
				to := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 2, byte(i)}), 9000)
				dests = append(dests, to)
				r.add(leave(s, to))
			}
			free := len(s.outFree[0].free)
			l := &s.sends[0]
			if tc.busy {
				l.mu.Lock()
			}
			sent := l.sendRun(&r)
			if tc.busy {
				l.mu.Unlock()
			}
			if sent != tc.sent {
				t.Fatalf("sendRun = %v, want %v", sent, tc.sent)
			}
			if !sent {
				if fc.writes != 0 || r.n != coreRun-1 {
					t.Errorf("%d sends and a run of %d left, want none sent and the run of %d kept for the writer", fc.writes, r.n, coreRun-1)
				}
				return
			}
			if r.head != nil || r.n != 0 {
				t.Errorf("the run was not emptied: %d left", r.n)
			}
			for _, to := range dests {
				if n := fc.offered[to]; n != 1 {
					t.Errorf("the datagram to %v was sent %d times, want once", to, n)
				}
			}
			if n := len(s.outFree[0].free) - free; n != coreRun-1 {
				t.Errorf("%d send buffers back on the reader's list, want the run's %d", n, coreRun-1)
			}
		})
	}
}

// TestEmitFromCollectsOnItsCore: with Config.SharedCPUs, a core running
// on its own goroutine (not borrowed by a reader) collects what it emits
// in its own run for the writer; only a borrowed core's emits join the
// reader's own batch, which the reader alone may touch.
func TestEmitFromCollectsOnItsCore(t *testing.T) {
	const id, token = 7, 0x1234
	fx := newJobFixture(t, func(c *Config) { c.SharedCPUs = true })
	s := fx.s
	fx.deliver(fzRank0, testJoin(id, token, 0, 2, 0))
	fx.deliver(fzRank1, testJoin(id, token, 1, 2, 0))
	ip := fx.deliver(fzRank0, testData(id, token, 0, 1, 0, 0))
	if ip == nil {
		t.Fatal("the data packet was not accepted")
	}
	defer s.inFree[ip.rd].put(ip)
	if s.sends[ip.rd].own == nil || s.unit.Borrowed(0) {
		t.Fatal("want a reader that sends its own batch, and core 0 not borrowed")
	}
	h := wire.Header{Version: wire.Version, Type: wire.TypeResult, Job: id, Token: token, Generation: 1, Count: 1}
	s.EmitFrom(0, &ip.pkt, &h, make([]byte, 4))
	if n := len(s.sends[ip.rd].own.held); n != 0 {
		t.Errorf("%d packets in the reader's own batch from a core on its own goroutine, want 0", n)
	}
	if n := s.cores[0][ip.rd].run.n; n != 1 {
		t.Errorf("core 0's run holds %d packets, want the 1 it emitted", n)
	}
}
