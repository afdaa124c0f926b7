package bench

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"text/tabwriter"

	"github.com/flare-net/flare/internal/units"
	swtch "github.com/flare-net/flare/switch"
)

// Row is one line of `flare bench`: an allreduce result, the path it
// took, and its ratios against the other paths of the same P and size.
type Row struct {
	Path string `json:"path"` // switch, switch-mc (results to a multicast group), ring, relay (the echo relay), fanout (the fan-out relay) or fanout-mc (it, to a group); a peer's own (Suite.Peers)
	Result
	// Rounds is how many times the row was measured, in turn with the
	// other rows of its P and size (Suite.Rounds; mergeRounds). A peer's
	// row, measured apart, says 1.
	Rounds int `json:"rounds"`
	// ServerUserS and ServerSysS are the CPU seconds per measured call,
	// user and kernel, that the process holding the row's switch or relay
	// spent (cpuSpan): with a process per rank, for the relays and the
	// embedded switch; 0 where the server is not this process's alone to
	// read (ranks in this process, a --switch daemon, the ring, a peer).
	ServerUserS float64 `json:"server_user_s"`
	ServerSysS  float64 `json:"server_sys_s"`
	// OverBestPeer is this row's median time over the faster peer's (the
	// Suite.Peers rows of the same P and size): below 1, faster than the
	// best host-based library measured. 0 without peers.
	OverBestPeer float64 `json:"over_best_peer"`
	// VsRing is the ring's median time over this row's: above 1, faster
	// than the host ring baseline.
	VsRing float64 `json:"vs_ring"`
	// OfRelay is the relay's median time over this row's: the fraction of
	// the echo relay's ceiling this path reaches.
	OfRelay float64 `json:"of_relay"`
	// OfFanout is the fan-out relay's median time over this row's: the
	// fraction of the switch's own communication pattern (every block's P
	// arrivals, then one packet to all P) this path reaches, with no
	// processing unit. The fair ceiling for the switch; for switch-mc,
	// the fan-out relay that sends to a group (fanout-mc) where it ran.
	OfFanout float64 `json:"of_fanout"`
	// Bytes per call on one host's link, the mean over the ranks: up
	// (host to switch, or to its ring successor) and down. The switch row
	// reads the embedded switch's link counters (the hosts' own counters
	// with Suite.Switch); the ring row the ranks' ring counters, frame
	// headers included. LinkBytesFrom says which: switch, hosts or ring;
	// empty (and the bytes 0) for the relays, where nothing counts them.
	HostUpBytes   float64 `json:"host_link_up_bytes"`
	HostDownBytes float64 `json:"host_link_down_bytes"`
	LinkBytesFrom string  `json:"link_bytes_from"`
	// CPULineNS is how long a cache line took to move between two CPUs of
	// this machine (lineTime), the larger of its reads before and after
	// the rows of this P and size: on a VM it moves with where the vCPUs
	// sit, and the cost of every hand-off between CPUs with it. 0 where
	// the process has one CPU.
	CPULineNS float64 `json:"cpu_line_ns"`
}

// runDense measures every path at every P and size and writes the rows,
// each group's peers after it.
func (s *suiteRun) runDense(ctx context.Context, w io.Writer) error {
	var tw *tabwriter.Writer
	if !s.JSON {
		tw = newTable(w)
		layout := "in this process"
		if s.Procs != nil {
			layout = fmt.Sprintf("one process per rank with GOMAXPROCS=%s (this process, with the relays and any embedded switch: %d)",
				rankGOMAXPROCS(), runtime.GOMAXPROCS(0))
		}
		if s.BusyPoll > 0 {
			layout += fmt.Sprintf(", every socket polling %v before it sleeps", s.BusyPoll)
		}
		fmt.Fprintf(w, "Flare bench: %s %s, ranks %s; relay = UDP echo of the same datagrams, fanout = the same\n"+
			"datagrams in the switch's pattern (P arrivals, then one to all P): the ceilings\n", s.DType, s.Op, layout)
		if line := lineTime(); line > 0 {
			fmt.Fprintf(w, "A cache line moves between two CPUs in %.0f ns now (on a VM, where its vCPUs sit; --json: cpu_line_ns)\n", line)
		}
		if s.Rounds > 1 {
			fmt.Fprintf(w, "Each row: %d rounds of %d calls, the rows of a P and size measured in turn; its median is the median of its rounds'\n", s.Rounds, s.Iters)
		}
		fmt.Fprintln(w)
		fmt.Fprintln(tw, denseHeader)
	}
	s.job = 7000
	for _, p := range s.Ranks {
		for _, size := range s.Sizes {
			rows, peers, err := s.measureRows(ctx, p, size)
			if err != nil {
				return err
			}
			peers = append(s.Peers.at(p, size, s.DType.String(), s.Op.String()), peers...)
			for _, row := range groupRows(rows, peers, s.packets()) {
				if err := s.writeDense(tw, w, row); err != nil {
					return err
				}
			}
		}
	}
	if tw != nil {
		tw.Flush()
		fmt.Fprintln(w, "\nvs ring: ring time / this time (above 1 is faster). of relay, of fanout: that relay's time / this time (the\n"+
			"fraction of its ceiling; of fanout on the switch row is the switch of its own pattern's ceiling, on the switch-mc\n"+
			"row of fanout-mc's where it ran); the ring and the\n"+
			"peers are compared with the relays of the first packet size. ÷ best peer: this time / the faster peer row's time\n"+
			"(below 1 is faster than the best host-based library). server cpu: user+kernel CPU per call of the process holding\n"+
			"the row's switch or relay, with a process per rank (the embedded switch and the relays only). ranks cpu: the\n"+
			"same of the rank processes inside the calls, summed over them (with the server's, what a call costs the box).\n"+
			"host↑/↓: bytes per call on one host's link (mean over the ranks), up and down; switch: the switch's link counters\n"+
			"(join ack and leave spread over the calls), ring: the ranks' ring counters (frame headers included).")
	}
	return nil
}

// measureRows measures every leg of one P and size, in measureLegs'
// order, and then every peer command, Suite.Rounds times over, and merges
// each leg's and each peer's rounds (mergeRounds).
func (s *suiteRun) measureRows(ctx context.Context, p int, size int64) (map[leg]*Row, []Row, error) {
	rounds := map[leg][]*Row{}
	peerRounds := make([][]*Row, len(s.PeerCmds))
	line := lineTime()
	for r := range max(1, s.Rounds) {
		at := ""
		if s.Rounds > 1 {
			at = fmt.Sprintf(", round %d of %d", r+1, s.Rounds)
		}
		for _, l := range s.measureLegs() {
			c := s.config(p, size)
			c.Profile = s.profilePrefix(l, p, size, r)
			row, err := s.measurePath(ctx, l, c)
			if err != nil {
				return nil, nil, fmt.Errorf("P=%d %s %s%s: %w", p, units.FormatSize(size), l, at, err)
			}
			rounds[l] = append(rounds[l], row)
		}
		for i, pc := range s.PeerCmds {
			row, err := pc.run(ctx, s.config(p, size), p, size)
			if err != nil {
				return nil, nil, fmt.Errorf("P=%d %s%s: %w", p, units.FormatSize(size), at, err)
			}
			peerRounds[i] = append(peerRounds[i], row)
		}
	}
	rows := map[leg]*Row{}
	for l, rs := range rounds {
		rows[l] = mergeRounds(rs)
	}
	var peers []Row
	for _, rs := range peerRounds {
		peers = append(peers, *mergeRounds(rs))
	}
	line = max(line, lineTime())
	for _, r := range rows {
		r.CPULineNS = line
	}
	for i := range peers {
		peers[i].CPULineNS = line
	}
	return rows, peers, nil
}

// profilePrefix names round r's profile of leg l at P = p and size
// (Suite.Profile), "" when there is none to take: no Suite.Profile, or a
// process per rank with nothing of the row in this process (the ring, or
// the switch's rows with a --switch daemon).
func (s *suiteRun) profilePrefix(l leg, p int, size int64, r int) string {
	inHere := isRelay(l.path) || ThroughSwitch(l.path) && s.servers[l.packet].embedded != nil
	if s.Profile == "" || s.Procs != nil && !inHere {
		return ""
	}
	name := fmt.Sprintf("p%d-%s-%s", p, units.FormatSize(size), l.path)
	if l.packet > 0 {
		name += "-" + units.FormatSize(int64(l.packet))
	}
	return filepath.Join(s.Profile, fmt.Sprintf("%s-r%d", name, r+1))
}

// legConfig is c for leg l: a relay's address, unverified (its results
// are one rank's data), single-buffer, to a group for fanout-mc; the
// switch of the leg's packet size, to a group for switch-mc, and the
// switch itself where it is embedded (nil otherwise); the ring.
func (s *suiteRun) legConfig(l leg, c Config) (Config, *swtch.Switch) {
	srv := s.servers[l.packet]
	var embedded *swtch.Switch
	switch l.path {
	case PathRelay, PathFanout, PathFanoutMC:
		c.Switch, c.Verify, c.Algo, c.Multicast = srv.relays[l.path], false, "single", l.path == PathFanoutMC
	case PathSwitch, PathMulticast:
		c.Switch, embedded, c.Multicast = srv.sw, srv.embedded, l.path == PathMulticast
	case PathRing:
		c.Algo = PathRing
	}
	return c, embedded
}

// measurePath measures one leg of c, checks it ran at its packet size,
// and takes its bytes per host link.
func (s *suiteRun) measurePath(ctx context.Context, l leg, c Config) (*Row, error) {
	c, embedded := s.legConfig(l, c)
	var watch *hostLinkWatch
	if embedded != nil {
		watch = watchHostLinks(embedded, c.Ranks, c.Multicast)
	}
	res, cpu, err := s.measure(ctx, c)
	var up, down int64
	links := 0
	if watch != nil {
		up, down, links = watch.finish()
	}
	if err == nil {
		err = l.checkPacket(res, embedded != nil)
	}
	if err != nil {
		return nil, err
	}
	switch l.path {
	case PathRelay:
		res.Algo = "echo"
	case PathFanout, PathFanoutMC:
		res.Algo = "fan-out"
	}
	row := &Row{Path: l.path, Result: *res}
	hostLinkBytes(row, c, embedded != nil, up, down, links)
	s.serverCPU(row, cpu, embedded != nil, c.Iters)
	return row, nil
}

// serverCPU fills the row's server CPU from this process's over the
// measured calls (cpu, taken with a process per rank; nil otherwise)
// where this process held the row's server: a relay, or the embedded
// switch. With the ranks in this process too, their CPU is not theirs
// alone, and the row reads none.
func (s *suiteRun) serverCPU(row *Row, cpu *cpuSpan, embedded bool, iters int) {
	if !isRelay(row.Path) && !embedded {
		return
	}
	if cpu != nil {
		row.ServerUserS, row.ServerSysS = cpu.perCall(iters)
	}
	if s.Procs == nil {
		row.RanksUserS, row.RanksSysS = 0, 0 // the ranks' process held the server too
	}
}

// hostLinkBytes fills a row's bytes per call on one host's link (mean
// over the ranks), where something counts them (not the relays). The
// switch path reads the embedded switch's link counters (up, down over
// links host links, for warmup + iters calls); with Suite.Switch, the
// hosts' own. The ring path takes the ranks' ring counters.
func hostLinkBytes(row *Row, c Config, embedded bool, up, down int64, links int) {
	p := float64(row.Ranks)
	calls := float64(c.Warmup + c.Iters)
	switch {
	case ThroughSwitch(row.Path) && embedded:
		if links != row.Ranks {
			return // the watch missed a link: no number rather than a wrong one
		}
		row.HostUpBytes, row.HostDownBytes, row.LinkBytesFrom = float64(up)/p/calls, float64(down)/p/calls, "switch"
	case ThroughSwitch(row.Path):
		row.HostUpBytes, row.HostDownBytes, row.LinkBytesFrom = float64(row.TxBytes)/p, float64(row.RxBytes)/p, "hosts"
	case row.Path == PathRing:
		row.HostUpBytes, row.HostDownBytes, row.LinkBytesFrom = float64(row.TxBytes)/p, float64(row.RxBytes)/p, "ring"
	}
}

const denseHeader = "P\tsize\tpath\tpacket\talgo\tmedian\tp99\talgbw\tvs ring\tof relay\tof fanout\t÷ best peer\tserver cpu\tranks cpu\thost↑\thost↓\tretransmits\tverified\t"

// writeDense writes one row, to the table under denseHeader or as JSON.
func (s *suiteRun) writeDense(tw *tabwriter.Writer, w io.Writer, r Row) error {
	if s.JSON {
		return writeJSON(w, r)
	}
	packet := "-"
	if r.PacketBytes > 0 {
		packet = units.FormatSize(int64(r.PacketBytes))
	}
	_, err := fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%.2f ms\t%.2f ms\t%.3f GB/s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t\n",
		r.Ranks, units.FormatSize(r.Bytes), r.Path, packet, r.Algo, r.MedianS*1e3, r.P99S*1e3, r.AlgbwGBps,
		units.Ratio(r.VsRing), units.Ratio(r.OfRelay), units.Ratio(r.OfFanout), units.Ratio(r.OverBestPeer),
		cpuCell(r.ServerUserS, r.ServerSysS), cpuCell(r.RanksUserS, r.RanksSysS), linkCell(r.HostUpBytes, r.LinkBytesFrom), linkCell(r.HostDownBytes, r.LinkBytesFrom), r.Retransmits, yesNo(r.Verified, r.Path))
	return err
}

// cpuCell prints a CPU cell, user+kernel ms per call: "-" where it
// was not read.
func cpuCell(user, sys float64) string {
	if user == 0 && sys == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f+%.1f ms", user*1e3, sys*1e3)
}

// linkCell prints a bytes-per-link cell: "-" where nothing counted it.
func linkCell(n float64, from string) string {
	if from == "" {
		return "-"
	}
	return units.HumanBytes(int64(n))
}

// yesNo prints whether a row was verified: n/a for the relays, whose
// results are one rank's data, never a sum.
func yesNo(v bool, path string) string {
	switch {
	case isRelay(path):
		return "n/a"
	case v:
		return "yes"
	}
	return "no"
}
