package swtch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/internal/pcaptest"
	"github.com/flare-net/flare/wire"
)

// writeTestCapture writes, through the daemon's capture, a data packet
// received from an IPv4 and from an IPv6 host, a datagram that is no
// Flare packet, a version-1 join, and a result sent to the first host.
// (An IPv4 address in an IPv6 frame prints as IPv4, as net.IP prints it.)
func writeTestCapture(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.pcap")
	c, err := openCapture(path, 1<<20, netip.MustParseAddrPort("127.0.0.1:7470"), func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	v4, v6 := netip.MustParseAddrPort("127.0.0.1:40000"), netip.MustParseAddrPort("[::1]:40001")
	pkt := func(h wire.Header, payload []byte, to netip.AddrPort) conn.Datagram {
		b := wire.AppendPacket(nil, &h, payload)
		return conn.Datagram{Buf: b, N: len(b), Addr: to}
	}
	data := wire.Header{Type: wire.TypeData, Job: 7, Generation: 3, Block: 5, Child: 1, DType: wire.Int32, Op: wire.OpSum,
		Count: 2, Flags: wire.FlagLast | wire.FlagRetransmit}
	oldJoin := wire.Header{Version: wire.Version1, Type: wire.TypeJoin, Job: 9, Token: 1, DType: wire.Float32, Op: wire.OpSum}
	c.record([]conn.Datagram{
		pkt(data, make([]byte, 8), v4),
		pkt(data, make([]byte, 8), v6),
		{Buf: []byte("not flare"), N: 9, Addr: v4},
		pkt(oldJoin, make([]byte, wire.JoinBodyLenV1), v4),
	}, true)
	res := data
	res.Type, res.Flags = wire.TypeResult, wire.FlagPartial
	c.record([]conn.Datagram{pkt(res, make([]byte, 8), v4)}, false)
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// What the capture writes, the reader reads back: the header fields, the
// addresses and the direction (by the switch's link address, whatever
// the port), and the datagrams it skipped.
func TestCaptureReadBack(t *testing.T) {
	f, err := os.Open(writeTestCapture(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := NewCaptureReader(f, 1) // no packet is on port 1: the direction comes from the MACs
	if err != nil {
		t.Fatal(err)
	}
	var got []CapturedPacket
	for {
		p, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p)
	}
	want := []struct {
		dir, src, dst string
		typ           wire.Type
		flags         wire.Flags
	}{
		{"in", "127.0.0.1:40000", "127.0.0.1:7470", wire.TypeData, wire.FlagLast | wire.FlagRetransmit},
		{"in", "[::1]:40001", "127.0.0.1:7470", wire.TypeData, wire.FlagLast | wire.FlagRetransmit},
		{"out", "127.0.0.1:7470", "127.0.0.1:40000", wire.TypeResult, wire.FlagPartial},
	}
	if len(got) != len(want) {
		t.Fatalf("read %d packets, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Dir != w.dir || g.Src != w.src || g.Dst != w.dst || g.Header.Type != w.typ || g.Header.Flags != w.flags ||
			g.Header.Job != 7 || g.Header.Generation != 3 || g.Header.Block != 5 || g.Header.Child != 1 || g.Header.Count != 2 {
			t.Errorf("packet %d: %+v, want %+v of job 7 gen 3 block 5 child 1 count 2", i, g, w)
		}
		if i > 0 && g.Time.Before(got[i-1].Time) {
			t.Errorf("packet %d at %v, before packet %d at %v", i, g.Time, i-1, got[i-1].Time)
		}
	}
	if r.Skipped() != 2 || r.OldJoins() != 1 {
		t.Errorf("skipped %d (old joins %d), want 2 (1)", r.Skipped(), r.OldJoins())
	}
}

// In a capture the daemon did not write, the direction comes from the
// switch's port; the table prints a row per packet with the flags named.
func TestCaptureTable(t *testing.T) {
	raw, err := os.ReadFile(writeTestCapture(t))
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewCaptureReader(bytes.NewReader(raw), 7470)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := WriteCaptureTable(&out, r); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || strings.Join(strings.Fields(lines[0]), " ") != "time dir src dst type job gen block child count flags" {
		t.Fatalf("table:\n%s", out.String())
	}
	for i, want := range []string{"in 127.0.0.1:40000 127.0.0.1:7470 data 7 3 5 1 2 last,retransmit",
		"in [::1]:40001 127.0.0.1:7470 data 7 3 5 1 2 last,retransmit",
		"out 127.0.0.1:7470 127.0.0.1:40000 result 7 3 5 1 2 partial"} {
		f := strings.Fields(lines[i+1])
		if got := strings.Join(f[1:], " "); got != want {
			t.Errorf("row %d: %q, want %q", i+1, got, want)
		}
	}
	if f := strings.Fields(lines[1]); f[0] != "0.000000" {
		t.Errorf("the first packet at %s, want 0.000000", f[0])
	}

	// A truncated record is an error naming the packet, and no table.
	binary.LittleEndian.PutUint32(raw[24+8:], 1<<20) // the first record's captured length
	r, err = NewCaptureReader(bytes.NewReader(raw), 7470)
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := WriteCaptureTable(&out, r); err == nil || !strings.Contains(err.Error(), "packet 1:") || out.Len() != 0 {
		t.Errorf("a truncated pcap: %v, printed %q", err, out.String())
	}
	if _, err := NewCaptureReader(strings.NewReader("not a pcap"), 7470); err == nil {
		t.Error("a file that is no pcap read without an error")
	}
}

// A capture another tool wrote (frames between MACs that are not the
// daemon's CaptureSwitchMAC): the direction from the switch's port (to
// it, from it, neither), an IPv6 address without a run of zeros in
// brackets, each packet's own time, and a bad record named by its place
// in the file, the skipped datagrams counted.
func TestCaptureForeign(t *testing.T) {
	host := net.ParseIP("2001:db8:1:2:3:4:5:6")
	sw := net.ParseIP("2001:db8::7")
	at := time.Unix(1_700_000_000, 0)
	h := wire.Header{Type: wire.TypeData, Job: 7, Block: 1, DType: wire.Int32, Op: wire.OpSum, Count: 2}
	data := wire.AppendPacket(nil, &h, make([]byte, 8))
	h.Type = wire.TypeResult
	result := wire.AppendPacket(nil, &h, make([]byte, 8))
	frames := [][]byte{
		pcaptest.Frame(t, host, sw, 40000, 9000, data),
		pcaptest.Frame(t, host, sw, 40000, 9000, []byte("not flare")),
		pcaptest.Frame(t, sw, host, 9000, 40000, result),
		pcaptest.Frame(t, host, sw, 40000, 40001, data),
		pcaptest.Frame(t, host, sw, 40000, 9000, data),
	}
	b := pcaptest.Pcap(t, frames, at, time.Millisecond)
	off := 24 // the file header; each record: a 16-byte header, then its bytes
	for _, f := range frames[:4] {
		off += 16 + len(f)
	}
	binary.LittleEndian.PutUint32(b[off+8:], 1<<20) // the fifth record's captured length
	r, err := NewCaptureReader(bytes.NewReader(b), 9000)
	if err != nil {
		t.Fatal(err)
	}
	want := []CapturedPacket{
		{Time: at, Dir: "in", Src: "[2001:db8:1:2:3:4:5:6]:40000", Dst: "[2001:db8::7]:9000"},
		{Time: at.Add(2 * time.Millisecond), Dir: "out", Src: "[2001:db8::7]:9000", Dst: "[2001:db8:1:2:3:4:5:6]:40000"},
		{Time: at.Add(3 * time.Millisecond), Dir: "-", Src: "[2001:db8:1:2:3:4:5:6]:40000", Dst: "[2001:db8::7]:40001"},
	}
	for i, w := range want {
		p, err := r.Next()
		if err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		if !p.Time.Equal(w.Time) || p.Dir != w.Dir || p.Src != w.Src || p.Dst != w.Dst || p.Header.Job != 7 {
			t.Errorf("packet %d: %+v, want %+v", i, p, w)
		}
	}
	if _, err := r.Next(); err == nil || !strings.Contains(err.Error(), "packet 5:") {
		t.Errorf("the fifth record cut short: %v, want an error naming packet 5", err)
	}
	if r.Skipped() != 1 {
		t.Errorf("skipped %d, want 1", r.Skipped())
	}

	// As a table, the four whole records: each packet's time since the
	// first, in seconds.
	r, err = NewCaptureReader(bytes.NewReader(b[:off]), 9000)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := WriteCaptureTable(&out, r); err != nil {
		t.Fatal(err)
	}
	var times []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n")[1:] {
		times = append(times, strings.Fields(l)[0])
	}
	if got := strings.Join(times, " "); got != "0.000000 0.002000 0.003000" {
		t.Errorf("times %q, want 0.000000 0.002000 0.003000:\n%s", got, out.String())
	}
}

// A header's flags by name, in a fixed order; "-" for none.
func TestFlagNames(t *testing.T) {
	for f, want := range map[wire.Flags]string{0: "-", wire.FlagLast: "last", wire.FlagRetransmit: "retransmit", wire.FlagPartial: "partial",
		wire.FlagFromSwitch: "from-switch", wire.FlagGroup: "group",
		wire.FlagLast | wire.FlagRetransmit | wire.FlagPartial | wire.FlagFromSwitch | wire.FlagGroup: "last,retransmit,partial,from-switch,group"} {
		if got := flagNames(f); got != want {
			t.Errorf("flagNames(%#x) = %q, want %q", f, got, want)
		}
	}
}
