package swtch

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/wire"
)

// The capture stops at its size bound and says so once.
func TestCaptureBound(t *testing.T) {
	size, logged := captureOfSize(t, 3000, 5)
	if size > 3000 || size < 2000 {
		t.Errorf("capture of %d bytes, want at most the 3000 bound and two packets' worth", size)
	}
	if logged != 1 {
		t.Errorf("the bound was reported %d times, want once", logged)
	}
}

// captureOfSize captures n received and n sent datagrams of 1000 bytes
// to and from [::1]:9000 (IPv6 frames) with the size bound max, and
// returns the file's size and how many times the capture logged.
func captureOfSize(t *testing.T, max int64, n int) (size int64, logged int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.pcap")
	c, err := openCapture(path, max, netip.MustParseAddrPort("127.0.0.1:7470"), func(string, ...any) { logged++ })
	if err != nil {
		t.Fatal(err)
	}
	msgs := make([]conn.Datagram, n)
	for i := range msgs {
		msgs[i] = conn.Datagram{Buf: make([]byte, 1000), N: 1000, Addr: netip.MustParseAddrPort("[::1]:9000")}
	}
	c.record(msgs, true)
	c.record(msgs, false)
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size(), logged
}

// A sent datagram whose payload is a kept result (conn.Datagram's Tail) is
// captured whole: a reader decodes it, which it would not with the header
// alone (the header's count names the payload's length).
func TestCaptureKeptPayload(t *testing.T) {
	h := wire.Header{Version: wire.Version, Type: wire.TypeResult, Job: 3, Token: 9, Generation: 1, DType: wire.Float32, Op: wire.OpSum, Count: 4}
	d := conn.Datagram{Buf: wire.AppendPacket(nil, &h, nil), Tail: make([]byte, 16), Addr: netip.MustParseAddrPort("127.0.0.1:9000")}
	d.N = len(d.Buf)
	r := captureSent(t, []conn.Datagram{d})
	p, err := r.Next()
	if err != nil {
		t.Fatalf("the kept result was not read back (%d skipped): %v", r.Skipped(), err)
	}
	if p.Header != h || p.Dir != "out" {
		t.Errorf("read %+v (%s), want %+v out", p.Header, p.Dir, h)
	}
}

// A run of datagrams (conn.Datagram.Seg), as the writer sends a member's
// results, is captured as its datagrams, each read back on its own.
func TestCaptureRun(t *testing.T) {
	var run []byte
	var want []wire.Header
	for b, count := range []uint32{4, 4, 2} { // the last shorter
		h := wire.Header{Version: wire.Version, Type: wire.TypeResult, Job: 3, Token: 9, Generation: 1, Block: uint32(b), DType: wire.Float32, Op: wire.OpSum, Count: count}
		run = wire.AppendPacket(run, &h, make([]byte, 4*count))
		want = append(want, h)
	}
	r := captureSent(t, []conn.Datagram{{Buf: run, N: len(run), Seg: wire.HeaderLen + 16, Addr: netip.MustParseAddrPort("127.0.0.1:9000")}})
	for i, h := range want {
		p, err := r.Next()
		if err != nil {
			t.Fatalf("datagram %d of the run not read back (%d skipped): %v", i, r.Skipped(), err)
		}
		if p.Header != h || p.Dir != "out" {
			t.Errorf("datagram %d: read %+v (%s), want %+v out", i, p.Header, p.Dir, h)
		}
	}
	if p, err := r.Next(); err == nil {
		t.Errorf("a fourth packet read back: %+v", p.Header)
	}
}

// captureSent captures msgs as sent by a switch on 127.0.0.1:7470 and
// returns a reader of the capture.
func captureSent(t *testing.T, msgs []conn.Datagram) *CaptureReader {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.pcap")
	c, err := openCapture(path, 1<<20, netip.MustParseAddrPort("127.0.0.1:7470"), func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	c.record(msgs, false)
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	r, err := NewCaptureReader(f, 7470)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The size bound counts the file header and each record's header: three
// packets that fit to the byte are written, and with one byte less only
// two (never a file past the bound).
func TestCaptureBoundExact(t *testing.T) {
	const frame = 14 + 40 + 8 + 1000 // Ethernet, IPv6, UDP, payload
	for _, tc := range []struct {
		max     int64
		packets int64
	}{{24 + 3*(16+frame), 3}, {24 + 3*(16+frame) - 1, 2}} {
		if size, _ := captureOfSize(t, tc.max, 4); size != 24+tc.packets*(16+frame) {
			t.Errorf("bound %d: a capture of %d bytes, want %d (%d packets)", tc.max, size, 24+tc.packets*(16+frame), tc.packets)
		}
	}
}

// A switch listening on both families ([::]) captures a host's IPv4
// datagrams (IPv4-mapped addresses), in and out, in IPv6 frames; and
// what it holds to make a kept result whole does not grow with the
// batches it has captured.
func TestCaptureMixedFamiliesAndScratch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.pcap")
	c, err := openCapture(path, 1<<20, netip.MustParseAddrPort("[::]:7470"), func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	h := wire.Header{Version: wire.Version, Type: wire.TypeResult, Job: 3, Token: 9, Generation: 1, DType: wire.Float32, Op: wire.OpSum, Count: 4}
	d := conn.Datagram{Buf: wire.AppendPacket(nil, &h, nil), Tail: make([]byte, 16), Addr: netip.MustParseAddrPort("[::ffff:127.0.0.1]:9000")}
	d.N = len(d.Buf)
	for range 100 {
		c.record([]conn.Datagram{d}, false)
		c.record([]conn.Datagram{d}, true) // from the host, as a data packet would come
	}
	if n := len(c.whole); n > d.Size() {
		t.Errorf("after 200 batches of one kept result of %d bytes, the scratch holds %d", d.Size(), n)
	}
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := NewCaptureReader(f, 7470)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if p, err := r.Next(); err != nil || p.Header != h {
			t.Fatalf("packet %d: %+v, %v; want the result (%d skipped)", i, p.Header, err, r.Skipped())
		}
	}
}

// A capture that cannot be opened, or whose file refuses even its header
// (a full disk), is an error at once; one whose writes start failing
// later says so once and stops writing, and the switch runs on.
func TestCaptureFailures(t *testing.T) {
	local := netip.MustParseAddrPort("127.0.0.1:7470")
	nolog := func(string, ...any) {}
	if _, err := openCapture(filepath.Join(t.TempDir(), "no", "such", "dir.pcap"), 1<<20, local, nolog); err == nil {
		t.Error("a capture in a directory that does not exist opened")
	}
	if _, err := os.Stat("/dev/full"); err == nil {
		if _, err := openCapture("/dev/full", 1<<20, local, nolog); err == nil {
			t.Error("a capture on /dev/full (no space for its header) opened")
		}
	}
	logged := 0
	c, err := openCapture(filepath.Join(t.TempDir(), "c.pcap"), 1<<20, local, func(string, ...any) { logged++ })
	if err != nil {
		t.Fatal(err)
	}
	c.f.Close() // the file's writes fail from now on
	msgs := []conn.Datagram{{Buf: make([]byte, 100), N: 100, Addr: netip.MustParseAddrPort("127.0.0.1:9000")}}
	for range 3 {
		c.record(msgs, true)
	}
	if !c.full || logged != 1 {
		t.Fatalf("after failed writes: stopped %v, said so %d times; want stopped, once", c.full, logged)
	}
}
