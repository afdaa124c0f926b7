package main

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"text/tabwriter"

	"golang.org/x/sync/errgroup"

	swtch "github.com/flare-net/flare/switch"
)

// benchLeg is one measured row of a (P, size) group: a path at one packet
// size. The switch and the relays run once per --packet size; the ring,
// which sends no switch packets, and the peers have packet 0.
type benchLeg struct {
	path   string
	packet int
}

func (l benchLeg) String() string {
	if l.packet == 0 {
		return l.path
	}
	return fmt.Sprintf("%s (%s packets)", l.path, formatSize(int64(l.packet)))
}

// benchServers are the switch and the relays of one packet size.
type benchServers struct {
	sw       string            // the switch's data address: --switch's, or the embedded one's
	embedded *swtch.Switch     // nil with --switch
	relays   map[string]string // the relay's and the fan-out relay's addresses, by path
}

// parsePackets reads --packet: payload sizes per packet, each one the
// switch accepts (a multiple of 8 in 8..8192 bytes), none twice.
func parsePackets(list []string) ([]int, error) {
	var packets []int
	for _, s := range list {
		n, err := parseSize(s)
		if err != nil {
			return nil, flagError("--packet", err)
		}
		if n < 8 || n > 8192 || n%8 != 0 {
			return nil, fmt.Errorf("--packet %s: must be a multiple of 8 in 8..8KiB bytes", s)
		}
		if slices.Contains(packets, int(n)) {
			return nil, fmt.Errorf("--packet %s: given twice", s)
		}
		packets = append(packets, int(n))
	}
	if len(packets) == 0 {
		return nil, fmt.Errorf("--packet: give at least one size")
	}
	return packets, nil
}

// startBenchServers starts, for every packet size, the relays wanted and,
// without --switch, a switch of that packet size, each run under g until
// stop ends; ready ends when one of them fails.
func (c *benchConfig) startBenchServers(g *errgroup.Group, ready, stop context.Context, want map[string]bool, packets []int, logger *slog.Logger) (map[int]*benchServers, error) {
	servers := map[int]*benchServers{}
	for _, pk := range packets {
		srv := &benchServers{sw: c.sw, relays: map[string]string{}}
		servers[pk] = srv
		for path, build := range map[string]func(swtch.Config) (*swtch.Relay, error){"relay": swtch.NewRelay, "fanout": swtch.NewFanoutRelay} {
			if !want[path] {
				continue
			}
			relay, err := build(swtch.Config{Listen: "127.0.0.1:0", PacketBytes: pk})
			if err != nil {
				return nil, err
			}
			g.Go(func() error { return relay.Run(stop) })
			<-relay.Ready()
			srv.relays[path] = relay.Addr().String()
		}
		if !want["switch"] || c.sw != "" {
			continue
		}
		sw, err := swtch.New(swtch.Config{Listen: "127.0.0.1:0", Admin: "off", Logger: logger, PacketBytes: pk})
		if err != nil {
			return nil, err
		}
		g.Go(func() error { return sw.Run(stop) })
		select {
		case <-sw.Ready():
		case <-ready.Done():
			if err := g.Wait(); err != nil {
				return nil, err
			}
			return nil, ready.Err()
		}
		srv.sw, srv.embedded = sw.Addr().String(), sw
	}
	return servers, nil
}

// measureLegs lists what one (P, size) group measures, in order: for each
// packet size the ceilings and then the switch (close in time to the
// ceilings it is compared with), then the ring.
func measureLegs(want map[string]bool, packets []int) []benchLeg {
	var legs []benchLeg
	for _, pk := range packets {
		for _, path := range []string{"relay", "fanout", "switch"} {
			if want[path] {
				legs = append(legs, benchLeg{path, pk})
			}
		}
	}
	if want["ring"] {
		legs = append(legs, benchLeg{"ring", 0})
	}
	return legs
}

// tableLegs lists a (P, size) group's legs in the table's order: switch,
// ring, relay, fanout, each at every packet size.
func tableLegs(packets []int) []benchLeg {
	legs := []benchLeg{}
	for _, path := range []string{"switch", "ring", "relay", "fanout"} {
		if path == "ring" {
			legs = append(legs, benchLeg{path, 0})
			continue
		}
		for _, pk := range packets {
			legs = append(legs, benchLeg{path, pk})
		}
	}
	return legs
}

// groupRows builds a (P, size) group's rows in the table's order, the
// peers last, with their ratios. A row at packet 0 (the ring, a peer) is
// compared with the relays at the first packet size.
func groupRows(res map[benchLeg]*arResult, links map[benchLeg]*benchRow, peers []benchRow, packets []int) []benchRow {
	var rows []benchRow
	for _, leg := range tableLegs(packets) {
		r := res[leg]
		if r == nil {
			continue
		}
		row := benchRow{Path: leg.path, arResult: *r, PacketBytes: r.PacketBytes}
		if l := links[leg]; l != nil {
			row.HostUpBytes, row.HostDownBytes, row.LinkBytesFrom = l.HostUpBytes, l.HostDownBytes, l.LinkBytesFrom
		}
		rows = append(rows, row)
	}
	rows = append(rows, peers...)
	best := 0.0
	for _, p := range peers {
		if best == 0 || p.MedianS < best {
			best = p.MedianS
		}
	}
	for i := range rows {
		row := &rows[i]
		pk := row.PacketBytes
		if pk == 0 || !slices.Contains(packets, pk) {
			pk = packets[0]
		}
		row.VsRing = ratioOf(res[benchLeg{"ring", 0}], row.MedianS)
		row.OfRelay = ratioOf(res[benchLeg{"relay", pk}], row.MedianS)
		row.OfFanout = ratioOf(res[benchLeg{"fanout", pk}], row.MedianS)
		if best > 0 {
			row.OverBestPeer = row.MedianS / best
		}
	}
	return rows
}

// ratioOf is base's median time over t: 0 (no ratio) without base.
func ratioOf(base *arResult, t float64) float64 {
	if base == nil {
		return 0
	}
	return base.MedianS / t
}

// checkPacket says whether a leg ran at its packet size: the hosts report
// what the switch (or relay) they joined granted.
func (l benchLeg) checkPacket(res *arResult, embedded bool) error {
	if l.packet == 0 || (l.path == "switch" && !embedded) || res.PacketBytes == l.packet {
		return nil
	}
	return fmt.Errorf("the hosts were granted %d-byte packets, want %d", res.PacketBytes, l.packet)
}

const benchHeader = "P\tsize\tpath\tpacket\talgo\tmedian\tp99\talgbw\tvs ring\tof relay\tof fanout\t÷ best peer\thost↑\thost↓\tretransmits\tverified\t"

// printBenchRow writes one row of the table under benchHeader.
func printBenchRow(tw *tabwriter.Writer, row benchRow) {
	packet := "-"
	if row.PacketBytes > 0 {
		packet = formatSize(int64(row.PacketBytes))
	}
	fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%.2f ms\t%.2f ms\t%.3f GB/s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t\n",
		row.Ranks, formatSize(row.Bytes), row.Path, packet, row.Algo, row.MedianS*1e3, row.P99S*1e3, row.AlgbwGBps,
		ratio(row.VsRing), ratio(row.OfRelay), ratio(row.OfFanout), ratio(row.OverBestPeer),
		linkCell(row.HostUpBytes, row.LinkBytesFrom), linkCell(row.HostDownBytes, row.LinkBytesFrom), row.Retransmits, yesNo(row.Verified, row.Path))
}
