package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flare-net/flare/internal/pcaptest"
	"github.com/flare-net/flare/wire"
)

// foreignCapture writes a pcap another tool could have: a Flare data
// packet from a host to a switch on port 9000, its result back, and a
// datagram that is not Flare.
func foreignCapture(t *testing.T) string {
	t.Helper()
	host, sw := net.IPv4(10, 0, 0, 1), net.IPv4(10, 0, 0, 2)
	h := wire.Header{Type: wire.TypeData, Job: 7, Block: 1, DType: wire.Int32, Op: wire.OpSum, Count: 2}
	data := wire.AppendPacket(nil, &h, make([]byte, 8))
	h.Type = wire.TypeResult
	result := wire.AppendPacket(nil, &h, make([]byte, 8))
	frames := [][]byte{pcaptest.Frame(t, host, sw, 40000, 9000, data), pcaptest.Frame(t, sw, host, 9000, 40000, result),
		pcaptest.Frame(t, host, sw, 40000, 9000, []byte("not flare"))}
	path := filepath.Join(t.TempDir(), "foreign.pcap")
	if err := os.WriteFile(path, pcaptest.Pcap(t, frames, time.Unix(1_700_000_000, 0), time.Millisecond), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// flare decode --port names the switch's port of a capture another tool
// wrote, for each packet's direction; it says how many datagrams were not
// Flare's; it takes one file.
func TestDecode(t *testing.T) {
	pcap := foreignCapture(t)
	var out, errs strings.Builder
	if err := run(context.Background(), []string{"decode", "--port", "9000", pcap}, &out, &errs); err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n")[1:] {
		dirs = append(dirs, strings.Fields(l)[1])
	}
	if got := strings.Join(dirs, " "); got != "in out" {
		t.Errorf("directions %q, want \"in out\":\n%s", got, out.String())
	}
	if !strings.Contains(errs.String(), "flare decode: 1 packets are not Flare packets") {
		t.Errorf("stderr %q, want the one skipped datagram counted", errs.String())
	}
	if err := run(context.Background(), []string{"decode", pcap, pcap}, &out, &errs); err == nil || !strings.Contains(err.Error(), "want one pcap file") {
		t.Errorf("two files: %v", err)
	}
}
