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
// discard), and how many each call offered (datagrams, and entries: a
// run is one), and sends none; it says it has GSO when gso is set.
type recordConn struct {
	conn.Conn
	gso     bool
	discard bool
	sent    []sentDatagram
	calls   []int
	entries []int
}

func (c *recordConn) Offload() conn.Offload { return conn.Offload{GSO: c.gso} }

func (c *recordConn) WriteBatch(msgs []conn.Datagram) (int, error) {
	if c.discard {
		return len(msgs), nil
	}
	c.calls = append(c.calls, conn.Count(msgs))
	c.entries = append(c.entries, len(msgs))
	for _, d := range msgs {
		if d.Seg > 0 { // a run: its datagrams, one by one
			for seg := range d.Segments() {
				c.sent = append(c.sent, sentDatagram{d.Addr, append([]byte(nil), seg...), uintptr(unsafe.Pointer(unsafe.SliceData(seg))), false})
			}
			continue
		}
		whole := append(append([]byte(nil), d.Buf[:d.N]...), d.Tail...)
		c.sent = append(c.sent, sentDatagram{d.Addr, whole, uintptr(unsafe.Pointer(unsafe.SliceData(d.Buf))), len(d.Tail) > 0})
	}
	return len(msgs), nil
}

// TestStageFanOut checks how a sender sends a batch of results for every
// member: each member's run holds the batch's results in order, whole
// (header and payload, whether the payload was kept in place or copied
// with its header), back to back in memory, and goes to the conn as one
// entry (conn.Datagram.Seg), which the kernel copies as one piece; a
// packet for one address is sent from its own buffer; nothing is left on
// the packets afterwards.
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
	entries := 1 + len(want)*len(members)
	if gso {
		entries = 1 + len(members) // a run for each member
	}
	if fmt.Sprint(rec.entries) != fmt.Sprint([]int{entries}) {
		t.Errorf("WriteBatch calls of %v entries, want one of %d", rec.entries, entries)
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
		if op.tail != nil || op.job != nil {
			t.Errorf("packet %d after the send: tail %v, job %v; want both cleared", i, op.tail != nil, op.job != nil)
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

// Results of jobs of different sizes and members, one of them shorter,
// staged in one batch: every member gets each of its jobs' results in
// order, whole, and a run (one entry) never holds another address's, a
// result not right after it in the stage, or anything after a shorter
// one, as a GSO send could not.
func TestStageFanOutRuns(t *testing.T) {
	s := newJobFixture(t, nil).s
	rec := &recordConn{gso: true}
	s.conns = []conn.Conn{rec}
	addrs := func(host byte, n int) []netip.AddrPort {
		var out []netip.AddrPort
		for i := range n {
			out = append(out, netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, host, byte(i)}), 9000))
		}
		return out
	}
	a, b := &liveJob{addrs: addrs(1, 3)}, &liveJob{addrs: addrs(2, 2)}
	type result struct {
		job  *liveJob
		size int
	}
	batch := []result{{a, 64}, {a, 64}, {b, 64}, {b, 64}, {a, 64}, {a, 32}, {a, 64}, {b, 16}, {b, 64}}
	w := s.newSender(0)
	want := map[netip.AddrPort][][]byte{}
	for i, r := range batch {
		h := wire.Header{Version: wire.Version, Type: wire.TypeResult, Job: 7, Block: uint32(i), Count: uint32(r.size / 4)}
		pkt := wire.AppendPacket(nil, &h, bytes.Repeat([]byte{byte(i)}, r.size))
		op := s.outFree[0].get()
		op.buf, op.job, op.to = append(op.buf[:0], pkt...), r.job, netip.AddrPort{}
		w.held = append(w.held, op)
		for _, m := range r.job.addrs {
			want[m] = append(want[m], pkt)
		}
	}
	w.flush()
	got := map[netip.AddrPort][][]byte{}
	for _, d := range rec.sent {
		got[d.to] = append(got[d.to], d.bytes)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("sent, by member:\n%v\nwant\n%v", got, want)
	}
	// Member 0 of a: blocks 0-1 (one run), 4-5 (the shorter 5 ends it), 6;
	// of b: blocks 2-3, 7, 8 (a run's segments are its first's size, so a
	// larger after a short one starts a run). Three members of a, two of b.
	if fmt.Sprint(rec.entries) != "[15]" {
		t.Errorf("WriteBatch calls of %v entries, want one of 15", rec.entries)
	}
}
