package swtch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/flare-net/flare/wire"
)

// CapturedPacket is one Flare packet of a pcap, as a CaptureReader reads
// it.
type CapturedPacket struct {
	Time     time.Time
	Dir      string // "in" (to the switch), "out" (from it) or "-" (neither is known)
	Src, Dst string // HOST:PORT ([HOST]:PORT for IPv6)
	Header   wire.Header
}

// CaptureReader reads the Flare packets of a pcap: the daemon's own
// captures (Config.PcapPath, written by capture) or any other of UDP
// traffic, decoded through gopacket with the wire layer. Datagrams that are
// not Flare packets of this protocol version are skipped and counted.
type CaptureReader struct {
	r                 *pcapgo.Reader
	port              uint16
	n, skip, oldJoins int
}

// NewCaptureReader reads the pcap file header from r. port is the
// switch's UDP port, by which the direction of a packet is told in a
// capture that the daemon did not write.
func NewCaptureReader(r io.Reader, port uint16) (*CaptureReader, error) {
	pr, err := pcapgo.NewReader(r)
	if err != nil {
		return nil, err
	}
	return &CaptureReader{r: pr, port: port}, nil
}

// Skipped is how many datagrams so far were not Flare packets of version
// wire.Version; OldJoins how many of them are joins of wire.Version1.
func (c *CaptureReader) Skipped() int  { return c.skip }
func (c *CaptureReader) OldJoins() int { return c.oldJoins }

// Next returns the next Flare packet, or io.EOF after the last. An error
// reading the file names the packet's position in it.
func (c *CaptureReader) Next() (CapturedPacket, error) {
	for {
		data, ci, err := c.r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			return CapturedPacket{}, io.EOF
		}
		if err != nil {
			return CapturedPacket{}, fmt.Errorf("packet %d: %w", c.n+c.skip+1, err)
		}
		if p, ok := c.decode(data); ok {
			c.n++
			p.Time = ci.Timestamp
			return p, nil
		}
		c.skip++
	}
}

// decode reads one frame: false when it holds no Flare packet of this
// version.
func (c *CaptureReader) decode(data []byte) (CapturedPacket, bool) {
	pkt := gopacket.NewPacket(data, c.r.LinkType(), gopacket.Default)
	udp, _ := pkt.Layer(layers.LayerTypeUDP).(*layers.UDP)
	if udp == nil {
		return CapturedPacket{}, false
	}
	// On the default port gopacket's decoder has already run the wire
	// layer; on any other port the same layer decodes the UDP payload.
	fl, ok := pkt.Layer(wire.LayerTypeFlare).(*wire.Flare)
	if !ok {
		fl = &wire.Flare{}
		if err := fl.DecodeFromBytes(udp.Payload, gopacket.NilDecodeFeedback); err != nil {
			if fl.UnmarshalOldJoin(udp.Payload) == nil {
				c.oldJoins++
			}
			return CapturedPacket{}, false
		}
	}
	var src, dst string
	if nl := pkt.NetworkLayer(); nl != nil {
		src, dst = nl.NetworkFlow().Src().String(), nl.NetworkFlow().Dst().String()
	}
	return CapturedPacket{
		Dir: c.direction(pkt, udp),
		Src: joinHostPort(src, uint16(udp.SrcPort)), Dst: joinHostPort(dst, uint16(udp.DstPort)),
		Header: fl.Header,
	}, true
}

func joinHostPort(host string, port uint16) string {
	if strings.Contains(host, ":") {
		return fmt.Sprintf("[%s]:%d", host, port)
	}
	return fmt.Sprintf("%s:%d", host, port)
}

// direction is "in" for a packet to the switch and "out" for one from it:
// the daemon's captures mark the switch's link address
// (CaptureSwitchMAC), other captures are judged by the switch's UDP port.
func (c *CaptureReader) direction(pkt gopacket.Packet, udp *layers.UDP) string {
	if eth, ok := pkt.LinkLayer().(*layers.Ethernet); ok {
		switch {
		case bytes.Equal(eth.DstMAC, CaptureSwitchMAC):
			return "in"
		case bytes.Equal(eth.SrcMAC, CaptureSwitchMAC):
			return "out"
		}
	}
	switch {
	case uint16(udp.DstPort) == c.port:
		return "in"
	case uint16(udp.SrcPort) == c.port:
		return "out"
	}
	return "-"
}
