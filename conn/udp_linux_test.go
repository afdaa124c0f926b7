//go:build linux

package conn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// listenMmsg opens a Linux conn and returns its concrete type.
func listenMmsg(t testing.TB, addr string, cfg Config) *mmsgConn {
	t.Helper()
	return listenLoopback(t, addr, cfg).(*mmsgConn)
}

// sendStamped sends n Flare-sized datagrams from tx to to in one
// WriteBatch, stamped first, first+1, ...
func sendStamped(t *testing.T, tx Conn, to netip.AddrPort, n, first int) {
	t.Helper()
	msgs := newMsgs(n, flarePacket)
	for i := range msgs {
		msgs[i].N, msgs[i].Addr = flarePacket, to
		stamp(msgs[i].Buf, uint64(first+i))
	}
	if k, err := tx.WriteBatch(msgs); k != n || err != nil {
		t.Fatalf("WriteBatch = %d, %v", k, err)
	}
}

func TestOffloadProbe(t *testing.T) {
	on := listenLoopback(t, "127.0.0.1:0", Config{})
	off := listenLoopback(t, "127.0.0.1:0", Config{DisableOffload: true})
	t.Logf("loopback offload: %+v (kernel supports it where true)", on.Offload())
	if off.Offload() != (Offload{}) {
		t.Errorf("DisableOffload: Offload() = %+v, want none", off.Offload())
	}
}

// pack groups runs for GSO by the rules: same address, same size, the last
// of a run may be shorter, at most 64 segments and gsoMaxBytes per message,
// and never past a datagram that cannot be sent.
func TestPackRuns(t *testing.T) {
	a := netip.MustParseAddrPort("127.0.0.1:1000")
	b := netip.MustParseAddrPort("127.0.0.1:2000")
	type dg struct {
		n    int
		addr netip.AddrPort
	}
	run := func(n, size int, addr netip.AddrPort) []dg {
		out := make([]dg, n)
		for i := range out {
			out[i] = dg{size, addr}
		}
		return out
	}
	cat := func(parts ...[]dg) []dg {
		var out []dg
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		name    string
		batch   int
		gso     bool
		in      []dg
		segs    []int
		wantErr error
	}{
		{"64-segment limit", 100, true, run(70, 1000, a), []int{64, 6}, nil},
		{"shorter last ends a run", 64, true, cat(run(2, 100, a), run(1, 50, a), run(1, 100, a)), []int{3, 1}, nil},
		{"longer starts a run", 64, true, cat(run(1, 100, a), run(2, 200, a)), []int{1, 2}, nil},
		{"address change", 64, true, cat(run(2, 100, a), run(2, 100, b)), []int{2, 2}, nil},
		{"empty datagrams", 64, true, run(3, 0, a), []int{1, 1, 1}, nil},
		{"64 KiB limit", 64, true, run(8, 9000, a), []int{7, 1}, nil},
		{"gso off", 64, false, run(3, 100, a), []int{1, 1, 1}, nil},
		{"iovec limit", 8, true, run(20, 100, a), []int{16}, nil},
		{"message limit", 2, true, cat(run(2, 100, a), run(2, 100, b), run(2, 100, a)), []int{2, 2}, nil},
		{"stops at a bad one", 64, true, cat(run(2, 100, a), run(1, 9001, a), run(1, 100, a)), []int{2}, ErrDatagramTooLarge},
		{"bad one ends a run", 64, true, cat(run(2, 100, a), []dg{{100, netip.AddrPort{}}}), []int{2}, ErrBadAddr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := listenMmsg(t, "127.0.0.1:0", Config{BatchSize: tt.batch, DisableOffload: true})
			c.gso.Store(tt.gso) // pack makes no system call: no kernel support needed
			msgs := newMsgs(len(tt.in), 9001)
			for i, d := range tt.in {
				msgs[i].N, msgs[i].Addr = d.n, d.addr
			}
			nmsg, err := c.pack(msgs, 0)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("pack error %v, want %v", err, tt.wantErr)
			}
			if got := fmt.Sprint(c.w.ends[:nmsg]); got != fmt.Sprint(tt.segs) {
				t.Fatalf("segments per message %v, want %v", got, tt.segs)
			}
			first := 0
			for m, segs := range tt.segs {
				h := &c.w.hs[m].Hdr
				if int(h.Iovlen) != segs || h.Iov != &c.w.iovs[first] {
					t.Errorf("message %d: %d iovecs from %p, want %d from %p", m, h.Iovlen, h.Iov, segs, &c.w.iovs[first])
				}
				if got := segmentCmsg(t, c.w.oob[m*oobLen:][:h.Controllen]); segs > 1 && got != tt.in[first].n || segs == 1 && got != 0 {
					t.Errorf("message %d: UDP_SEGMENT %d, want %d", m, got, tt.in[first].n)
				}
				first += segs
			}
		})
	}
}

// gsoRun is the run pack makes of datagrams of one size to one address:
// gsoRun(size) of them go as one message, one more starts a second; and
// WholeRuns rounds a batch down to it where the conn has GSO.
func TestWholeRuns(t *testing.T) {
	a := netip.MustParseAddrPort("127.0.0.1:1000")
	c := listenMmsg(t, "127.0.0.1:0", Config{BatchSize: 100, MaxDatagram: MaxDatagramLimit, DisableOffload: true})
	c.gso.Store(true) // pack makes no system call: no kernel support needed
	for _, tt := range []struct{ size, run int }{{1, 64}, {100, 64}, {1056, 62}, {8224, 7}, {9000, 7}, {40000, 1}, {MaxDatagramLimit, 1}} {
		if got := gsoRun(tt.size); got != tt.run {
			t.Errorf("gsoRun(%d) = %d, want %d", tt.size, got, tt.run)
		}
		msgs := newMsgs(tt.run+1, tt.size)
		for i := range msgs {
			msgs[i].N, msgs[i].Addr = tt.size, a
		}
		nmsg, err := c.pack(msgs, 0)
		if want := fmt.Sprint([]int{tt.run, 1}); err != nil || fmt.Sprint(c.w.ends[:nmsg]) != want {
			t.Errorf("pack of %d datagrams of %d bytes: %v segments a message, %v; want %s", len(msgs), tt.size, c.w.ends[:nmsg], err, want)
		}
	}
	for _, tt := range []struct {
		gso           bool
		n, size, want int
	}{{true, 64, 1056, 62}, {true, 130, 1056, 124}, {true, 40, 1056, 40}, {true, 64, 8224, 63}, {true, 64, 100, 64}, {false, 64, 1056, 64}} {
		c.gso.Store(tt.gso)
		if got := WholeRuns(c, tt.n, tt.size); got != tt.want {
			t.Errorf("WholeRuns(gso %v, %d, %d) = %d, want %d", tt.gso, tt.n, tt.size, got, tt.want)
		}
	}
}

// A datagram's Tail counts in its size for GSO runs and takes an iovec of
// its own: a run may mix datagrams whole in Buf with split ones.
func TestPackTails(t *testing.T) {
	a := netip.MustParseAddrPort("127.0.0.1:1000")
	c := listenMmsg(t, "127.0.0.1:0", Config{BatchSize: 100, DisableOffload: true})
	c.gso.Store(true) // pack makes no system call: no kernel support needed
	tail := make([]byte, 9000)
	msgs := newMsgs(70, 9001)
	for i := range msgs {
		msgs[i].Addr = a
		switch {
		case i == 1:
			msgs[i].N = 1000 // whole in Buf
		case i == 69:
			msgs[i].N, msgs[i].Tail = 32, tail[:468] // shorter: ends the second run
		default:
			msgs[i].N, msgs[i].Tail = 32, tail[:968]
		}
	}
	nmsg, err := c.pack(msgs, 0)
	if err != nil || fmt.Sprint(c.w.ends[:nmsg]) != "[64 6]" {
		t.Fatalf("pack = %d messages of %v segments, %v; want [64 6]", nmsg, c.w.ends[:nmsg], err)
	}
	for m, want := range []struct{ iovs, first, seg int }{{127, 0, 1000}, {12, 127, 1000}} {
		h := &c.w.hs[m].Hdr
		if int(h.Iovlen) != want.iovs || h.Iov != &c.w.iovs[want.first] {
			t.Errorf("message %d: %d iovecs from %p, want %d from %p", m, h.Iovlen, h.Iov, want.iovs, &c.w.iovs[want.first])
		}
		if got := segmentCmsg(t, c.w.oob[m*oobLen:][:h.Controllen]); got != want.seg {
			t.Errorf("message %d: UDP_SEGMENT %d, want %d", m, got, want.seg)
		}
	}
	if iov := c.w.iovs[1]; iov.Base != &tail[0] || iov.Len != 968 {
		t.Errorf("datagram 0's tail iovec %p+%d, want %p+968", iov.Base, iov.Len, &tail[0])
	}
	msgs[5].Tail = tail[:9000] // 32 + 9000 is over the limit
	if _, err := c.pack(msgs, 0); !errors.Is(err, ErrDatagramTooLarge) {
		t.Errorf("pack of a datagram whose tail passes MaxDatagram: %v, want ErrDatagramTooLarge", err)
	}
}

// An entry that is a run (Datagram.Seg) goes as messages of its own, one
// iovec each: as few GSO sends as the limits allow, or one datagram each
// without GSO; a pack that fills its messages mid-run says where the next
// starts (offs), and the run counts as sent with its last message (ends).
func TestPackRunEntries(t *testing.T) {
	a := netip.MustParseAddrPort("127.0.0.1:1000")
	stage := make([]byte, 70*1000)
	msgs := newMsgs(4, 100)
	for i := range msgs {
		msgs[i].N, msgs[i].Addr = 100, a
	}
	msgs[2] = Datagram{Buf: stage, N: len(stage), Seg: 1000, Addr: a}
	c := listenMmsg(t, "127.0.0.1:0", Config{BatchSize: 64, DisableOffload: true})
	c.gso.Store(true) // pack makes no system call: no kernel support needed
	nmsg, err := c.pack(msgs[1:], 0)
	if got := fmt.Sprint(c.w.ends[:nmsg], c.w.offs[:nmsg]); err != nil || got != "[1 0 1 1] [0 64000 0 0]" {
		t.Fatalf("pack = %s, %v; want [1 0 1 1] [0 64000 0 0]", got, err)
	}
	for m, want := range []struct {
		base     *byte
		len, seg int
	}{{&msgs[1].Buf[0], 100, 0}, {&stage[0], 64000, 1000}, {&stage[64000], 6000, 1000}, {&msgs[3].Buf[0], 100, 0}} {
		h := &c.w.hs[m].Hdr
		if iov := unsafe.Slice(h.Iov, h.Iovlen); len(iov) != 1 || iov[0].Base != want.base || int(iov[0].Len) != want.len {
			t.Errorf("message %d: iovecs %v, want one of %d bytes", m, iov, want.len)
		}
		if got := segmentCmsg(t, c.w.oob[m*oobLen:][:h.Controllen]); got != want.seg {
			t.Errorf("message %d: UDP_SEGMENT %d, want %d", m, got, want.seg)
		}
	}
	if nmsg, err = c.pack(msgs, 0); err != nil || fmt.Sprint(c.w.ends[:nmsg]) != "[2 0 1 1]" {
		t.Errorf("pack from a plain run of two = %v, %v; want [2 0 1 1]: a run entry ends a plain run", c.w.ends[:nmsg], err)
	}

	c = listenMmsg(t, "127.0.0.1:0", Config{BatchSize: 4, DisableOffload: true})
	run := []Datagram{{Buf: stage, N: 450, Seg: 100, Addr: a}}
	nmsg, err = c.pack(run, 0)
	if got := fmt.Sprint(c.w.ends[:nmsg], c.w.offs[:nmsg]); err != nil || got != "[0 0 0 0] [100 200 300 400]" {
		t.Fatalf("pack without GSO = %s, %v; want [0 0 0 0] [100 200 300 400]", got, err)
	}
	c.w.start = 3 // as if flush had sent three messages
	if off := c.w.resume(0); off != 300 {
		t.Fatalf("resume after three messages = %d, want 300", off)
	}
	nmsg, err = c.pack(run, 300)
	if got := fmt.Sprint(c.w.ends[:nmsg], c.w.offs[:nmsg]); err != nil || got != "[0 1] [400 0]" {
		t.Fatalf("pack from byte 300 = %s, %v; want [0 1] [400 0]", got, err)
	}
	if iov := c.w.iovs[1]; iov.Base != &stage[400] || iov.Len != 50 || c.w.hs[1].Hdr.Controllen != 0 {
		t.Errorf("the run's last datagram: %p+%d (control %d), want %p+50 and no UDP_SEGMENT", iov.Base, iov.Len, c.w.hs[1].Hdr.Controllen, &stage[400])
	}
}

// A run laid out back to back in memory (as the switch stages its
// results) crosses in one iovec, whether each datagram is whole in Buf or
// split between Buf and a Tail that follows it; a call then carries more
// datagrams than 2×BatchSize pieces would allow. A gap starts an iovec.
func TestPackContiguous(t *testing.T) {
	a := netip.MustParseAddrPort("127.0.0.1:1000")
	b := netip.MustParseAddrPort("127.0.0.1:1001")
	c := listenMmsg(t, "127.0.0.1:0", Config{BatchSize: 4, DisableOffload: true})
	c.gso.Store(true) // pack makes no system call: no kernel support needed
	const size = 100
	stage := make([]byte, 40*size+1)
	msgs := make([]Datagram, 40)
	for i := range msgs {
		at := i * size
		if i >= 35 {
			at++ // a gap before datagram 35
		}
		d := stage[at : at+size]
		msgs[i].Addr = a
		if i%2 == 0 {
			msgs[i].Buf, msgs[i].N = d, size
		} else {
			msgs[i].Buf, msgs[i].N, msgs[i].Tail = d, 32, d[32:]
		}
	}
	for i := 30; i < 40; i++ {
		msgs[i].Addr = b
	}
	nmsg, err := c.pack(msgs, 0)
	if err != nil || fmt.Sprint(c.w.ends[:nmsg]) != "[30 10]" {
		t.Fatalf("pack = %d messages of %v segments, %v; want [30 10]", nmsg, c.w.ends[:nmsg], err)
	}
	for m, want := range []struct {
		iovs  int
		bases []*byte
		lens  []uint64
	}{
		{1, []*byte{&stage[0]}, []uint64{30 * size}},
		{2, []*byte{&stage[30*size], &stage[35*size+1]}, []uint64{5 * size, 5 * size}},
	} {
		h := &c.w.hs[m].Hdr
		iovs := unsafe.Slice(h.Iov, h.Iovlen)
		if len(iovs) != want.iovs {
			t.Fatalf("message %d: %d iovecs, want %d", m, len(iovs), want.iovs)
		}
		for k, iov := range iovs {
			if iov.Base != want.bases[k] || uint64(iov.Len) != want.lens[k] {
				t.Errorf("message %d iovec %d: %p+%d, want %p+%d", m, k, iov.Base, iov.Len, want.bases[k], want.lens[k])
			}
		}
	}
}

// segmentCmsg returns the size in a UDP_SEGMENT control message, or 0.
func segmentCmsg(t *testing.T, oob []byte) int {
	t.Helper()
	if len(oob) == 0 {
		return 0
	}
	cms, err := unix.ParseSocketControlMessage(oob)
	if err != nil || len(cms) != 1 || cms[0].Header.Level != unix.SOL_UDP || cms[0].Header.Type != unix.UDP_SEGMENT || len(cms[0].Data) != 2 {
		t.Fatalf("bad UDP_SEGMENT cmsg %x: %v", oob, err)
	}
	return int(binary.NativeEndian.Uint16(cms[0].Data))
}

// A GSO send of 62 Flare packets (as many as fit 64 KiB) arrives as one GRO
// message; a reader with room for 10 gets them 10 at a time, in order, the
// rest kept between calls.
func TestGROLeftover(t *testing.T) {
	tx := listenMmsg(t, "127.0.0.1:0", Config{})
	rx := listenMmsg(t, "127.0.0.1:0", Config{})
	if !tx.Offload().GSO || !rx.Offload().GRO {
		t.Skipf("no UDP GSO/GRO here: tx %+v, rx %+v", tx.Offload(), rx.Offload())
	}
	const n = gsoMaxBytes / flarePacket
	sendStamped(t, tx, rx.LocalAddr(), n, 0)
	in := newMsgs(10, DefaultMaxDatagram)
	var counts []int
	for got := 0; got < n; {
		k, err := rx.ReadBatch(in)
		if err != nil {
			t.Fatal(err)
		}
		if got == 0 && (rx.r.count != 1 || rx.r.segs[0] != flarePacket) {
			t.Errorf("first receive: %d messages, segment %d; want 1 coalesced message of %d-byte datagrams", rx.r.count, rx.r.segs[0], flarePacket)
		}
		for _, m := range in[:k] {
			if seq, ok := unstamp(m.Buf[:m.N]); !ok || seq != uint64(got) || m.N != flarePacket || m.Addr != tx.LocalAddr() {
				t.Fatalf("datagram %d: seq %d intact %v, %d bytes from %v", got, seq, ok, m.N, m.Addr)
			}
			got++
		}
		counts = append(counts, k)
	}
	if fmt.Sprint(counts) != "[10 10 10 10 10 10 2]" {
		t.Errorf("datagrams per ReadBatch %v, want [10 10 10 10 10 10 2]", counts)
	}
}

// ReadInto lends the datagrams in place: out of the caller's region for
// what it receives, out of the conn's memory for what ReadBatch left.
func TestReadInto(t *testing.T) {
	tx := listenMmsg(t, "127.0.0.1:0", Config{})
	rx := listenMmsg(t, "127.0.0.1:0", Config{})
	if !tx.Offload().GSO || !rx.Offload().GRO {
		t.Skipf("no UDP GSO/GRO here: tx %+v, rx %+v", tx.Offload(), rx.Offload())
	}
	const n = gsoMaxBytes / flarePacket // one coalesced message
	send := func(first int) { t.Helper(); sendStamped(t, tx, rx.LocalAddr(), n, first) }
	within := func(b, mem []byte) bool {
		p, lo := uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
		return p >= lo && p+uintptr(cap(b)) <= lo+uintptr(len(mem))
	}
	check := func(what string, in []Datagram, k, first int, mem []byte) {
		t.Helper()
		for i, m := range in[:k] {
			seq, ok := unstamp(m.Buf[:m.N])
			if !ok || seq != uint64(first+i) || m.N != flarePacket || cap(m.Buf) != m.N || m.Addr != tx.LocalAddr() {
				t.Fatalf("%s: datagram %d: seq %d intact %v, %d bytes (cap %d) from %v", what, first+i, seq, ok, m.N, cap(m.Buf), m.Addr)
			}
			if !within(m.Buf, mem) {
				t.Fatalf("%s: datagram %d is not lent from the memory it was received into", what, first+i)
			}
		}
	}

	// ReadBatch takes 10 and leaves the rest in the conn's memory;
	// ReadInto lends those, then receives the next message into region.
	send(0)
	few := newMsgs(10, DefaultMaxDatagram)
	if k, err := rx.ReadBatch(few); k != 10 || err != nil {
		t.Fatalf("ReadBatch = %d, %v", k, err)
	}
	region, in := NewRegion(2)
	k, err := rx.ReadInto(region, in)
	if err != nil || k != n-10 {
		t.Fatalf("ReadInto after ReadBatch = %d, %v; want the %d left", k, err, n-10)
	}
	check("left by ReadBatch", in, k, 10, rx.r.bufs)
	send(n)
	if k, err = rx.ReadInto(region, in); err != nil || k != n {
		t.Fatalf("ReadInto = %d, %v; want %d", k, err, n)
	}
	check("received", in, k, n, region)
	if rx.r.next != rx.r.count {
		t.Errorf("ReadInto left %d messages in the region", rx.r.count-rx.r.next)
	}

	// Too small a region or msgs for one message: ReadBatch's copy into
	// the Bufs msgs has.
	send(2 * n)
	small := newMsgs(10, DefaultMaxDatagram)
	mine := small[0].Buf
	if k, err = rx.ReadInto(region[:MaxGROMessage-1], small); err != nil || k != 10 || unsafe.SliceData(small[0].Buf) != unsafe.SliceData(mine) {
		t.Fatalf("ReadInto with a small region = %d, %v, into the caller's buffer %v", k, err, unsafe.SliceData(small[0].Buf) == unsafe.SliceData(mine))
	}
}

// When the kernel refuses a segmented send (here: UDP checksums turned off
// with SO_NO_CHECK, which GSO requires), the conn turns GSO off for good and
// sends the same datagrams one by one.
func TestGSOFallback(t *testing.T) {
	tx := listenMmsg(t, "127.0.0.1:0", Config{})
	rx := listenLoopback(t, "127.0.0.1:0", Config{})
	if !tx.Offload().GSO {
		t.Skip("no UDP GSO here")
	}
	var serr error
	if err := tx.rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_NO_CHECK, 1)
	}); err != nil || serr != nil {
		t.Skipf("SO_NO_CHECK: %v %v", err, serr)
	}
	transfer(t, tx, rx, rx.LocalAddr(), sameSizes(200, flarePacket))
	if tx.Offload().GSO {
		t.Error("GSO still on after the kernel refused it")
	}
}

func TestIPv6ToIPv4Socket(t *testing.T) {
	tx := listenLoopback(t, "127.0.0.1:0", Config{})
	msgs := newMsgs(1, 10)
	msgs[0].N, msgs[0].Addr = 10, netip.MustParseAddrPort("[::1]:9")
	if n, err := tx.WriteBatch(msgs); n != 0 || !errors.Is(err, ErrBadAddr) {
		t.Fatalf("WriteBatch to IPv6 on an IPv4 socket = %d, %v; want 0, ErrBadAddr", n, err)
	}
}

// The hot path allocates nothing: a WriteBatch of 64 Flare packets and the
// ReadBatch calls that take them in, with and without GSO/GRO.
func TestZeroAllocs(t *testing.T) {
	for _, cfg := range []Config{{}, {DisableOffload: true}, {BatchSize: 1}, {BusyPoll: DefaultBusyPoll}} {
		t.Run(fmt.Sprintf("%+v", cfg), func(t *testing.T) {
			tx := listenLoopback(t, "127.0.0.1:0", cfg)
			rx := listenLoopback(t, "127.0.0.1:0", cfg)
			out := newMsgs(64, flarePacket)
			tails := newMsgs(64, flarePacket)
			for i := range out {
				out[i].N, out[i].Addr = flarePacket, rx.LocalAddr()
				stamp(out[i].Buf, uint64(i))
				if i%2 == 1 {
					moveToTail(&out[i], uint64(i), tails[i].Buf)
				}
			}
			in := newMsgs(64, DefaultMaxDatagram)
			var werr, rerr error
			allocs := testing.AllocsPerRun(100, func() {
				if _, err := tx.WriteBatch(out); err != nil {
					werr = err
				}
				for got := 0; got < len(out); {
					n, err := rx.ReadBatch(in)
					if err != nil {
						rerr = err
						return
					}
					got += n
				}
			})
			if werr != nil || rerr != nil {
				t.Fatal(werr, rerr)
			}
			if allocs != 0 {
				t.Errorf("%v allocations per 64-datagram write and read, want 0 (offload %+v)", allocs, rx.Offload())
			}
		})
	}
}

// BenchmarkReceiveCoalesced prices a receiver's two ways to take 8 KiB
// datagrams that GRO coalesced: ReadBatch, which copies each one out of
// the conn's memory into the caller's buffer, and ReadInto, which lends
// it in place. One op sends 256 datagrams with the timer stopped (they
// wait in the socket buffer) and times their receipt alone.
func BenchmarkReceiveCoalesced(b *testing.B) {
	const (
		size  = 32 + 8<<10
		count = 256
	)
	for _, mode := range []string{"ReadBatch", "ReadInto"} {
		b.Run(mode, func(b *testing.B) {
			tx := listenLoopback(b, "127.0.0.1:0", Config{})
			rx := listenLoopback(b, "127.0.0.1:0", Config{}).(*mmsgConn)
			if !rx.Offload().GRO || !tx.Offload().GSO {
				b.Skipf("no GRO here: %+v", rx.Offload())
			}
			// The datagrams wait in the socket buffer while nobody reads:
			// one the kernel capped below that (no CAP_NET_ADMIN, a small
			// net.core.rmem_max) would lose some and block the receipt.
			var rcvbuf int
			var gerr error
			if err := rx.rc.Control(func(fd uintptr) { rcvbuf, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF) }); err != nil || gerr != nil || rcvbuf < 4*count*size {
				b.Skipf("receive buffer %d bytes (%v %v): too small to hold %d datagrams of %d bytes", rcvbuf, err, gerr, count, size)
			}
			var rr RegionReader = rx
			out := newMsgs(tx.BatchSize(), size)
			for i := range out {
				out[i].N, out[i].Addr = size, rx.LocalAddr()
			}
			in := newMsgs(rx.BatchSize(), DefaultMaxDatagram)
			region, lent := NewRegion(4)
			b.SetBytes(count * size)
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				for sent := 0; sent < count; sent += len(out) {
					if _, err := tx.WriteBatch(out); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				for got := 0; got < count; {
					var n int
					var err error
					if mode == "ReadInto" {
						n, err = rr.ReadInto(region, lent)
					} else {
						n, err = rx.ReadBatch(in)
					}
					if err != nil {
						b.Fatal(err)
					}
					got += n
				}
			}
		})
	}
}

// BenchmarkPack is what packing a writer's batch costs before the system
// call: 62 results of 1,056 bytes to 8 members, back to back in memory
// as the switch stages them, handed over as a datagram each ("each") or
// as a run each member (Datagram.Seg, "runs"). Both pack into 8 GSO
// messages of one iovec. ns/datagram is a member's result.
func BenchmarkPack(b *testing.B) {
	const results, members, size = 62, 8, 1056
	stage := make([]byte, results*size)
	c := listenMmsg(b, "127.0.0.1:0", Config{DisableOffload: true})
	c.gso.Store(true) // pack makes no system call: no kernel support needed
	each := make([]Datagram, 0, results*members)
	runs := make([]Datagram, 0, members)
	for m := range members {
		to := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 4, byte(m)}), 9000)
		for r := range results {
			each = append(each, Datagram{Buf: stage[r*size : (r+1)*size], N: size, Addr: to})
		}
		runs = append(runs, Datagram{Buf: stage, N: len(stage), Seg: size, Addr: to})
	}
	for _, tc := range []struct {
		name string
		msgs []Datagram
	}{{"each", each}, {"runs", runs}} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				if n, err := c.pack(tc.msgs, 0); n != members || err != nil {
					b.Fatalf("pack = %d messages, %v; want %d", n, err, members)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*results*members), "ns/datagram")
		})
	}
}

// An empty datagram (a stranger's, or a probe's) is handed up as one of
// no bytes from its sender, and the datagrams after it come through
// intact, whether read into the caller's buffers or through a Batch (lent
// from a region where the conn coalesces).
func TestEmptyDatagram(t *testing.T) {
	for _, cfg := range []Config{{}, {DisableOffload: true}} {
		for _, batch := range []bool{false, true} {
			rx := listenMmsg(t, "127.0.0.1:0", cfg)
			tx, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Close()
			from := tx.LocalAddr().(*net.UDPAddr).AddrPort()
			to := net.UDPAddrFromAddrPort(rx.LocalAddr())
			full := make([]byte, 100)
			stamp(full, 7)
			for _, b := range [][]byte{nil, full, nil} {
				if _, err := tx.WriteToUDP(b, to); err != nil {
					t.Fatal(err)
				}
			}
			var got []Datagram
			stop := time.AfterFunc(5*time.Second, func() { rx.Close() }) // a datagram lost: fail, not hang
			defer stop.Stop()
			b := NewBatch(rx, 1, DefaultMaxDatagram)
			for len(got) < 3 {
				msgs := newMsgs(4, DefaultMaxDatagram)
				var k int
				if batch {
					k, err = b.Read()
					msgs = b.Msgs
				} else {
					k, err = rx.ReadBatch(msgs)
				}
				if err != nil {
					t.Fatalf("%+v, batch %v: after %d datagrams: %v", cfg, batch, len(got), err)
				}
				for _, m := range msgs[:k] {
					got = append(got, Datagram{Buf: append([]byte(nil), m.Buf[:m.N]...), N: m.N, Addr: m.Addr})
				}
			}
			seq, ok := unstamp(got[1].Buf)
			if len(got) != 3 || got[0].N != 0 || got[2].N != 0 || got[1].N != 100 || !ok || seq != 7 ||
				got[0].Addr != from || got[1].Addr != from || got[2].Addr != from {
				t.Fatalf("%+v, batch %v: received %d datagrams: %d, %d (seq %d intact %v), %d bytes from %v, %v, %v; want 0, 100, 0 bytes from %v",
					cfg, batch, len(got), got[0].N, got[1].N, seq, ok, got[2].N, got[0].Addr, got[1].Addr, got[2].Addr, from)
			}
		}
	}
}

// ReadInto with a region's datagrams (NewRegion, no buffers of their own)
// on a conn without GRO lends each datagram from the region, as with GRO,
// rather than receiving into buffers that are not there.
func TestReadIntoWithoutGRO(t *testing.T) {
	tx := listenLoopback(t, "127.0.0.1:0", Config{})
	rx := listenMmsg(t, "127.0.0.1:0", Config{DisableOffload: true})
	stop := time.AfterFunc(5*time.Second, func() { rx.Close() }) // a datagram lost: fail, not hang
	defer stop.Stop()
	const n = 5
	sendStamped(t, tx, rx.LocalAddr(), n, 0)
	region, in := NewRegion(2)
	for got := 0; got < n; {
		k, err := rx.ReadInto(region, in)
		if err != nil {
			t.Fatalf("after %d datagrams: %v", got, err)
		}
		for _, m := range in[:k] {
			seq, ok := unstamp(m.Buf[:m.N])
			lo := uintptr(unsafe.Pointer(unsafe.SliceData(region)))
			p := uintptr(unsafe.Pointer(unsafe.SliceData(m.Buf)))
			if !ok || seq != uint64(got) || m.N != flarePacket || m.Addr != tx.LocalAddr() || p < lo || p+uintptr(m.N) > lo+uintptr(len(region)) {
				t.Fatalf("datagram %d: seq %d intact %v, %d bytes from %v, in the region %v", got, seq, ok, m.N, m.Addr, p >= lo && p+uintptr(m.N) <= lo+uintptr(len(region)))
			}
			got++
		}
	}
}
