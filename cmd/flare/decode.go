package main

import (
	"context"
	"fmt"
	"io"
	"os"

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
	r, err := swtch.NewCaptureReader(f, *port)
	if err != nil {
		return fmt.Errorf("%s: %w", fs.Arg(0), err)
	}
	if err := swtch.WriteCaptureTable(stdout, r); err != nil {
		return fmt.Errorf("%s: %w", fs.Arg(0), err)
	}
	if r.Skipped() > 0 {
		fmt.Fprintf(stderr, "flare decode: %d packets are not Flare packets of protocol version %d and were skipped\n", r.Skipped(), wire.Version)
	}
	if r.OldJoins() > 0 {
		fmt.Fprintf(stderr, "flare decode: %d of them are joins of protocol version %d, which a version-%d switch refuses\n", r.OldJoins(), wire.Version1, wire.Version)
	}
	return nil
}
