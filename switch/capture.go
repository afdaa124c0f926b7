package swtch

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/flare-net/flare/conn"
)

// capture writes every Flare datagram the daemon receives or sends to a
// pcap file (nanosecond timestamps, Ethernet/IP/UDP framing synthesised
// from the socket addresses), until the file reaches its size bound. It is
// nil when capturing is off, and the packet path then pays one nil check
// per batch.
type capture struct {
	mu      sync.Mutex
	f       *os.File
	w       *pcapgo.Writer
	max     int64
	written int64
	full    bool
	local   netip.AddrPort
	buf     gopacket.SerializeBuffer
	whole   []byte // a sent datagram's header and kept payload, made one
	log     func(msg string, args ...any)
}

// The synthesised link addresses of a capture: the switch is
// CaptureSwitchMAC, every host 02:00:00:00:00:02 (a pcap needs some; the
// IP addresses and ports are the real ones). flare decode tells the
// direction of a packet by them.
var (
	CaptureSwitchMAC = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x00, 0x01}
	captureHostMAC   = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x00, 0x02}
)

func openCapture(path string, max int64, local netip.AddrPort, log func(string, ...any)) (*capture, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := pcapgo.NewWriterNanos(f)
	if err := w.WriteFileHeader(65536, layers.LinkTypeEthernet); err != nil {
		f.Close()
		return nil, err
	}
	return &capture{f: f, w: w, max: max, written: 24, local: local, buf: gopacket.NewSerializeBuffer(), log: log}, nil
}

// record writes the datagrams of one batch: received (from each msg's
// address to the switch) or sent (from the switch to each address).
func (c *capture) record(msgs []conn.Datagram, received bool) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range msgs {
		d := &msgs[i]
		src, dst := d.Addr, c.local
		if !received {
			src, dst = c.local, d.Addr
		}
		c.whole = c.whole[:0]
		for pkt := range d.Datagrams(&c.whole) {
			c.write(now, src, dst, pkt, received)
		}
	}
}

func (c *capture) write(ts time.Time, src, dst netip.AddrPort, payload []byte, received bool) {
	if c.full {
		return
	}
	srcMAC, dstMAC := CaptureSwitchMAC, captureHostMAC
	if received {
		srcMAC, dstMAC = captureHostMAC, CaptureSwitchMAC
	}
	udp := &layers.UDP{SrcPort: layers.UDPPort(src.Port()), DstPort: layers.UDPPort(dst.Port())}
	eth := &layers.Ethernet{SrcMAC: srcMAC, DstMAC: dstMAC}
	var ip gopacket.SerializableLayer
	s, t := src.Addr().Unmap(), dst.Addr().Unmap()
	if s.Is4() && t.Is4() {
		eth.EthernetType = layers.EthernetTypeIPv4
		v4 := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: s.AsSlice(), DstIP: t.AsSlice()}
		_ = udp.SetNetworkLayerForChecksum(v4)
		ip = v4
	} else {
		eth.EthernetType = layers.EthernetTypeIPv6
		s16, t16 := s.As16(), t.As16()
		v6 := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolUDP, SrcIP: s16[:], DstIP: t16[:]}
		_ = udp.SetNetworkLayerForChecksum(v6)
		ip = v6
	}
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(c.buf, opts, eth, ip, udp, gopacket.Payload(payload)); err != nil {
		return
	}
	frame := c.buf.Bytes()
	if c.written+16+int64(len(frame)) > c.max {
		c.full = true
		c.log("packet capture reached its size bound (Config.PcapMax); later packets are not written", "bytes", c.written)
		return
	}
	ci := gopacket.CaptureInfo{Timestamp: ts, CaptureLength: len(frame), Length: len(frame)}
	if err := c.w.WritePacket(ci, frame); err != nil {
		c.full = true
		c.log("packet capture failed; later packets are not written", "error", err)
		return
	}
	c.written += 16 + int64(len(frame))
}

func (c *capture) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.f.Close(); err != nil {
		return fmt.Errorf("Config.PcapPath: %w", err)
	}
	return nil
}
