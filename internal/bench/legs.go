package bench

import (
	"fmt"
	"slices"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/internal/inproc"
	"github.com/flare-net/flare/internal/units"
	swtch "github.com/flare-net/flare/switch"
)

// leg is one measured row of a (P, size) group: a path at one packet
// size. The switch and the relays run once per Suite.Packets size; the
// ring, which sends no switch packets, and the peers have packet 0.
type leg struct {
	path   string
	packet int
}

func (l leg) String() string {
	if l.packet == 0 {
		return l.path
	}
	return fmt.Sprintf("%s (%s packets)", l.path, units.FormatSize(int64(l.packet)))
}

// servers are the switch and the relays of one packet size.
type servers struct {
	sw       string            // the switch's data address: Suite.Switch's, or the embedded one's
	embedded *swtch.Switch     // nil with Suite.Switch
	relays   map[string]string // path: the relay's address
}

// packets is Suite.Packets, or the switch's default size without them.
func (s Suite) packets() []int {
	if len(s.Packets) == 0 {
		return []int{swtch.DefaultPacketBytes}
	}
	return s.Packets
}

// validatePackets names a packet size the switch refuses (a multiple of
// 8 in 8..8192 bytes) or one given twice.
func (s Suite) validatePackets() error {
	for i, n := range s.Packets {
		if n < 8 || n > 8192 || n%8 != 0 {
			return fmt.Errorf("Suite.Packets %d: must be a multiple of 8 in 8..8192 bytes", n)
		}
		if slices.Contains(s.Packets[:i], n) {
			return fmt.Errorf("Suite.Packets %d: given twice", n)
		}
	}
	if s.Sparse && (len(s.Packets) > 1 || s.Peers != nil) {
		return fmt.Errorf("Suite.Sparse with Suite.Peers or several Suite.Packets: the sparse table compares one switch's paths")
	}
	return nil
}

// startServers starts, in g, the relays the paths ask for at packet size
// pk and, without Suite.Switch, a switch of that size.
func (s Suite) startServers(g *inproc.Group, pk int) (*servers, error) {
	srv := &servers{sw: s.Switch, relays: map[string]string{}}
	for _, path := range []string{PathRelay, PathFanout, PathFanoutMC} {
		if !slices.Contains(s.Paths, path) {
			continue
		}
		cfg := swtch.Config{Listen: "127.0.0.1:0", PacketBytes: pk, Socket: conn.Config{BusyPoll: s.BusyPoll}}
		if path == PathFanoutMC {
			cfg.Multicast = relayGroups
		}
		r, err := g.Relay(path != PathRelay, cfg)
		if err != nil {
			return nil, err
		}
		srv.relays[path] = r.Addr().String()
	}
	if slices.ContainsFunc(s.Paths, ThroughSwitch) && s.Switch == "" {
		// Ranks in this process share its CPUs with the switch. Its
		// multicast groups serve the jobs that ask (PathMulticast) only.
		cfg := swtch.Config{PacketBytes: pk, SharedCPUs: s.Procs == nil, Socket: conn.Config{BusyPoll: s.BusyPoll}}
		if slices.Contains(s.Paths, PathMulticast) {
			cfg.Multicast = BenchGroups
		}
		sw, err := g.Switch(cfg)
		if err != nil {
			return nil, err
		}
		srv.sw, srv.embedded = sw.Addr().String(), sw
	}
	return srv, nil
}

// measureLegs lists what one (P, size) group measures, in order: for each
// packet size the ceilings and then the switch (close in time to the
// ceilings it is compared with), then the ring.
func (s Suite) measureLegs() []leg {
	var legs []leg
	for _, pk := range s.packets() {
		for _, path := range []string{PathRelay, PathFanout, PathFanoutMC, PathSwitch, PathMulticast} {
			if slices.Contains(s.Paths, path) {
				legs = append(legs, leg{path, pk})
			}
		}
	}
	if slices.Contains(s.Paths, PathRing) {
		legs = append(legs, leg{PathRing, 0})
	}
	return legs
}

// tableLegs lists a (P, size) group's legs in the table's order: switch,
// switch-mc, ring, relay, fanout, fanout-mc, each at every packet size.
func tableLegs(packets []int) []leg {
	var legs []leg
	for _, path := range []string{PathSwitch, PathMulticast, PathRing, PathRelay, PathFanout, PathFanoutMC} {
		if path == PathRing {
			legs = append(legs, leg{path, 0})
			continue
		}
		for _, pk := range packets {
			legs = append(legs, leg{path, pk})
		}
	}
	return legs
}

// groupRows builds a (P, size) group's rows in the table's order, the
// peers last, with their ratios. A row at packet 0 (the ring, a peer) is
// compared with the relays at the first packet size.
func groupRows(res map[leg]*Row, peers []Row, packets []int) []Row {
	var rows []Row
	for _, l := range tableLegs(packets) {
		if r := res[l]; r != nil {
			rows = append(rows, *r)
		}
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
		row.VsRing = ratioOf(res[leg{PathRing, 0}], row.MedianS)
		row.OfRelay = ratioOf(res[leg{PathRelay, pk}], row.MedianS)
		row.OfFanout = ratioOf(res[fanoutOf(row.Path, pk, res)], row.MedianS)
		row.OverBestPeer = 0
		if best > 0 {
			row.OverBestPeer = row.MedianS / best
		}
	}
	return rows
}

// fanoutOf is the fan-out relay leg a row of path at packet size pk is
// compared with: the multicast one for the multicast rows where it was
// measured, the unicast one otherwise.
func fanoutOf(path string, pk int, res map[leg]*Row) leg {
	if mc := (leg{PathFanoutMC, pk}); (path == PathMulticast || path == PathFanoutMC) && res[mc] != nil {
		return mc
	}
	return leg{PathFanout, pk}
}

// ratioOf is base's median time over t: 0 (no ratio) without base.
func ratioOf(base *Row, t float64) float64 {
	if base == nil {
		return 0
	}
	return base.MedianS / t
}

// checkPacket says whether a leg ran at its packet size: the hosts report
// what the switch (or relay) they joined granted. A daemon's (Suite.Switch)
// size is its own.
func (l leg) checkPacket(res *Result, embedded bool) error {
	if l.packet == 0 || (ThroughSwitch(l.path) && !embedded) || res.PacketBytes == l.packet {
		return nil
	}
	return fmt.Errorf("the hosts were granted %d-byte packets, want %d", res.PacketBytes, l.packet)
}
