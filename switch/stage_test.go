package swtch

import (
	"bytes"
	"fmt"
	"net/netip"
	"testing"
	"unsafe"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/wire"
)

// sentDatagram is what a recordConn was asked to send: to where, the
// bytes (Buf[:N] and Tail), where in memory Buf began, and whether it had
// a Tail.
type sentDatagram struct {
	to    netip.AddrPort
	bytes []byte
	at    uintptr
	tail  bool
}

// recordConn keeps every datagram offered to WriteBatch (unless
// discard), and how many each call offered, and sends none; it says it
// has GSO when gso is set.
type recordConn struct {
	conn.Conn
	gso     bool
	discard bool
	sent    []sentDatagram
	calls   []int
}

func (c *recordConn) Offload() conn.Offload { return conn.Offload{GSO: c.gso} }

func (c *recordConn) WriteBatch(msgs []conn.Datagram) (int, error) {
	if c.discard {
		return len(msgs), nil
	}
	c.calls = append(c.calls, len(msgs))
	for _, d := range msgs {
		whole := append(append([]byte(nil), d.Buf[:d.N]...), d.Tail...)
		c.sent = append(c.sent, sentDatagram{d.Addr, whole, uintptr(unsafe.Pointer(unsafe.SliceData(d.Buf))), len(d.Tail) > 0})
	}
	return len(msgs), nil
}

// TestStageFanOut checks how a sender sends a batch of results for every
// member: each member's run holds the batch's results in order, whole
// (header and payload, whether the payload was kept in place or copied
// with its header), back to back in memory, so that the kernel copies the
// run as one piece (conn's pack); a packet for one address is sent from
// its own buffer; nothing staged is left on the packets afterwards.
// Without GSO, where each datagram is a message of its own, every packet
// is sent from where it is.
func TestStageFanOut(t *testing.T) {
	for _, gso := range []bool{true, false} {
		t.Run(fmt.Sprintf("gso-%v", gso), func(t *testing.T) { testStageFanOut(t, gso) })
	}
}

func testStageFanOut(t *testing.T, gso bool) {
	s := newJobFixture(t, nil).s
	rec := &recordConn{gso: gso}
	s.conns = []conn.Conn{rec}
	var members []netip.AddrPort
	for i := range 3 {
		members = append(members, netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 2, byte(i)}), 9000))
	}
	job := &liveJob{addrs: members}
	one := netip.MustParseAddrPort("127.0.0.1:7000")
	kept := make([]byte, 5*64)
	var want [][]byte
	for b := range 5 {
		h := wire.Header{Version: wire.Version, Type: wire.TypeResult, Job: 7, Block: uint32(b), Count: 16}
		payload := kept[b*64 : (b+1)*64]
		for i := range payload {
			payload[i] = byte(b*64 + i)
		}
		want = append(want, wire.AppendPacket(nil, &h, payload))
	}
	w := s.newSender(0)
	// fill queues five results for every member, the even ones kept in
	// place (the header alone in the buffer), then a packet for one
	// address, in send buffers of reader 0's list.
	fill := func() {
		for b := range want {
			op := s.outFree[0].get()
			if b%2 == 0 {
				op.buf, op.tail = append(op.buf[:0], want[b][:wire.HeaderLen]...), kept[b*64:(b+1)*64]
			} else {
				op.buf = append(op.buf[:0], want[b]...)
			}
			op.job, op.to = job, netip.AddrPort{}
			w.held = append(w.held, op)
		}
		op := s.outFree[0].get()
		op.buf, op.to = appendLeave(op.buf[:0]), one
		w.held = append(w.held, op)
	}
	fill()
	ops := append([]*outPacket(nil), w.held...)
	var bufs []uintptr // where each packet's send buffer begins
	for _, op := range ops {
		bufs = append(bufs, uintptr(unsafe.Pointer(unsafe.SliceData(op.buf))))
	}

	w.flush()

	if len(rec.sent) != 1+len(want)*len(members) {
		t.Fatalf("%d datagrams sent, want %d", len(rec.sent), 1+len(want)*len(members))
	}
	if d := rec.sent[0]; d.to != one || !bytes.Equal(d.bytes, appendLeave(nil)) || d.at != bufs[5] {
		t.Errorf("the packet for one address: to %v from %#x, want to %v from its own buffer %#x", d.to, d.at, one, bufs[5])
	}
	run := rec.sent[1:]
	for m, to := range members {
		for b := range want {
			d := run[m*len(want)+b]
			if d.to != to || !bytes.Equal(d.bytes, want[b]) {
				t.Errorf("member %d, result %d: to %v, %d bytes; want to %v, the result of block %d", m, b, d.to, len(d.bytes), to, b)
			}
			if !gso {
				if d.at != bufs[b] || d.tail != (b%2 == 0) {
					t.Errorf("member %d, result %d without GSO: from %#x (tail %v), want from its own buffer %#x", m, b, d.at, d.tail, bufs[b])
				}
				continue
			}
			if d.tail {
				t.Errorf("member %d, result %d: sent with a tail, want whole from the stage", m, b)
			}
			if b > 0 {
				if prev := run[m*len(want)+b-1]; d.at != prev.at+uintptr(len(prev.bytes)) {
					t.Errorf("member %d, result %d: begins at %#x, want right after the one before (%#x)", m, b, d.at, prev.at+uintptr(len(prev.bytes)))
				}
			}
		}
	}
	for i, op := range ops {
		if op.staged != nil || op.tail != nil || op.job != nil {
			t.Errorf("packet %d after the send: staged %v, tail %v, job %v; want all cleared", i, op.staged != nil, op.tail != nil, op.job != nil)
		}
	}
	if len(w.held) != 0 || len(w.msgs) != 0 {
		t.Errorf("sender left %d held, %d datagrams", len(w.held), len(w.msgs))
	}

	// The same batch again, the stage grown already: nothing allocated.
	rec.discard = true
	if n := testing.AllocsPerRun(20, func() { fill(); w.flush() }); n != 0 {
		t.Errorf("a batch's send allocated %.1f times, want 0", n)
	}
}
