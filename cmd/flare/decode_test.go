package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/flare-net/flare/wire"
)

// foreignCapture writes a pcap another tool could have: a Flare data
// packet from a host to a switch on port 9000, its result back, and a
// datagram that is not Flare, between addresses that are not the
// daemon's capture MACs (swtch.CaptureSwitchMAC).
func foreignCapture(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "foreign.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := pcapgo.NewWriter(f)
	if err := w.WriteFileHeader(65536, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	host, sw := net.IPv4(10, 0, 0, 1), net.IPv4(10, 0, 0, 2)
	frame := func(src, dst net.IP, sport, dport uint16, payload []byte) []byte {
		eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0xa, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0xa, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4}
		ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: src, DstIP: dst}
		udp := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
		if err := udp.SetNetworkLayerForChecksum(ip); err != nil {
			t.Fatal(err)
		}
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, udp, gopacket.Payload(payload)); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	h := wire.Header{Type: wire.TypeData, Job: 7, Block: 1, DType: wire.Int32, Op: wire.OpSum, Count: 2}
	data := wire.AppendPacket(nil, &h, make([]byte, 8))
	h.Type = wire.TypeResult
	result := wire.AppendPacket(nil, &h, make([]byte, 8))
	at := time.Unix(1_700_000_000, 0)
	for i, fr := range [][]byte{frame(host, sw, 40000, 9000, data), frame(sw, host, 9000, 40000, result), frame(host, sw, 40000, 9000, []byte("not flare"))} {
		if err := w.WritePacket(gopacket.CaptureInfo{Timestamp: at.Add(time.Duration(i) * time.Millisecond), CaptureLength: len(fr), Length: len(fr)}, fr); err != nil {
			t.Fatal(err)
		}
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
