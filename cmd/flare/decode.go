package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	swtch "github.com/flare-net/flare/switch"
	"github.com/flare-net/flare/wire"
)

func runDecode(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("decode", "Print a pcap of Flare traffic (such as one written by flare switch --pcap) as a table:\n"+
		"time since the first packet, direction, addresses and the Flare header fields.\n"+
		"Packets are decoded through gopacket with Flare's wire layer.",
		"  flare decode /var/lib/flare-switch/flare.pcap\n  flare decode --port 9000 capture.pcap | grep result\n", stdout)
	port := fs.Uint16("port", wire.DefaultPort, "the switch's UDP port, for the direction of captures not written by flare switch")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError(fs, "want one pcap file")
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", fs.Arg(0), err)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "time\tdir\tsrc\tdst\ttype\tjob\tgen\tblock\tchild\tcount\tflags")
	var first int64
	n, skipped, oldJoins := 0, 0, 0
	for {
		data, ci, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: packet %d: %w", fs.Arg(0), n+skipped+1, err)
		}
		pkt := gopacket.NewPacket(data, r.LinkType(), gopacket.Default)
		udp, _ := pkt.Layer(layers.LayerTypeUDP).(*layers.UDP)
		if udp == nil {
			skipped++
			continue
		}
		// On the default port gopacket's decoder has already run the wire
		// layer; on any other port the same layer decodes the UDP payload.
		fl, ok := pkt.Layer(wire.LayerTypeFlare).(*wire.Flare)
		if !ok {
			fl = &wire.Flare{}
			if err := fl.DecodeFromBytes(udp.Payload, gopacket.NilDecodeFeedback); err != nil {
				if fl.UnmarshalOldJoin(udp.Payload) == nil {
					oldJoins++
				}
				skipped++
				continue
			}
		}
		var src, dst string
		if nl := pkt.NetworkLayer(); nl != nil {
			src, dst = nl.NetworkFlow().Src().String(), nl.NetworkFlow().Dst().String()
		}
		src, dst = joinHostPort(src, uint16(udp.SrcPort)), joinHostPort(dst, uint16(udp.DstPort))
		if n == 0 {
			first = ci.Timestamp.UnixNano()
		}
		n++
		fmt.Fprintf(tw, "%.6f\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n", float64(ci.Timestamp.UnixNano()-first)/1e9,
			direction(pkt, udp, *port), src, dst, fl.Type, fl.Job, fl.Generation, fl.Block, fl.Child, fl.Count, flagNames(fl.Flags))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if skipped > 0 {
		fmt.Fprintf(stderr, "flare decode: %d packets are not Flare packets of protocol version %d and were skipped\n", skipped, wire.Version)
	}
	if oldJoins > 0 {
		fmt.Fprintf(stderr, "flare decode: %d of them are joins of protocol version %d, which a version-%d switch refuses\n", oldJoins, wire.Version1, wire.Version)
	}
	return nil
}

func joinHostPort(host string, port uint16) string {
	if strings.Contains(host, ":") {
		return fmt.Sprintf("[%s]:%d", host, port)
	}
	return fmt.Sprintf("%s:%d", host, port)
}

// direction is "in" for a packet to the switch and "out" for one from it:
// the daemon's captures mark the switch's link address (02:00:00:00:00:01),
// other captures are judged by the switch's UDP port.
func direction(pkt gopacket.Packet, udp *layers.UDP, port uint16) string {
	if eth, ok := pkt.LinkLayer().(*layers.Ethernet); ok {
		switch {
		case bytes.Equal(eth.DstMAC, swtch.CaptureSwitchMAC):
			return "in"
		case bytes.Equal(eth.SrcMAC, swtch.CaptureSwitchMAC):
			return "out"
		}
	}
	switch {
	case uint16(udp.DstPort) == port:
		return "in"
	case uint16(udp.SrcPort) == port:
		return "out"
	}
	return "-"
}

// flagNames lists the set flags, "-" for none.
func flagNames(f wire.Flags) string {
	var names []string
	for _, x := range []struct {
		f    wire.Flags
		name string
	}{{wire.FlagLast, "last"}, {wire.FlagRetransmit, "retransmit"}, {wire.FlagPartial, "partial"}, {wire.FlagFromSwitch, "from-switch"}} {
		if f&x.f != 0 {
			names = append(names, x.name)
		}
	}
	if len(names) == 0 {
		return "-"
	}
	return strings.Join(names, ",")
}
