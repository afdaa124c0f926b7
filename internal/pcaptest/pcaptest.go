// Package pcaptest writes captures as another tool than the daemon could
// have: Ethernet frames between MACs that are not the daemon's capture
// MACs (swtch.CaptureSwitchMAC), so a reader judges each packet's
// direction by the switch's UDP port, with the times the test sets.
package pcaptest

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// Frame is a UDP datagram from src:sport to dst:dport carrying payload,
// over IPv4 or IPv6 as the addresses are, in an Ethernet frame.
func Frame(t testing.TB, src, dst net.IP, sport, dport uint16, payload []byte) []byte {
	t.Helper()
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0xa, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0xa, 0, 0, 0, 2}}
	var ip gopacket.NetworkLayer
	var ipLayer gopacket.SerializableLayer
	if src.To4() != nil {
		eth.EthernetType = layers.EthernetTypeIPv4
		v4 := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: src, DstIP: dst}
		ip, ipLayer = v4, v4
	} else {
		eth.EthernetType = layers.EthernetTypeIPv6
		v6 := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolUDP, SrcIP: src, DstIP: dst}
		ip, ipLayer = v6, v6
	}
	udp := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
	if err := udp.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, eth, ipLayer, udp, gopacket.Payload(payload)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Pcap is a capture file of frames, frame i at at + i × step.
func Pcap(t testing.TB, frames [][]byte, at time.Time, step time.Duration) []byte {
	t.Helper()
	var raw bytes.Buffer
	w := pcapgo.NewWriter(&raw)
	if err := w.WriteFileHeader(65536, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	for i, f := range frames {
		ci := gopacket.CaptureInfo{Timestamp: at.Add(time.Duration(i) * step), CaptureLength: len(f), Length: len(f)}
		if err := w.WritePacket(ci, f); err != nil {
			t.Fatal(err)
		}
	}
	return raw.Bytes()
}
