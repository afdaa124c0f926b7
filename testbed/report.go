package testbed

import (
	"math"

	"github.com/flare-net/flare/models"
	"github.com/flare-net/flare/wire"
)

// Frame overheads on a shaped link: tbf counts whole Ethernet frames.
const (
	ethHeader    = 14
	udpIPHeaders = 8 + 20
	tcpIPHeaders = 20 + 20 + 12 // TCP with timestamps, IPv4
)

// Thresholds of the CPU-bound rule (Row.CPUBound).
const (
	// IdealSlack is how far above the link-bound ideal a run may be and
	// still count as link-bound.
	IdealSlack = 1.10
	// BusyCPU is the machine's busy share (all CPUs, every process) at
	// which the box counts as saturated during a run.
	BusyCPU = 0.90
	// BusyProcess is the CPU seconds per second one daemon or host used
	// at which it counts as saturated (a host runs one thread; a daemon's
	// reader is one).
	BusyProcess = 0.90
)

// Row is one measured path of one run: the fields of `flare bench --json`
// (path, the allreduce result, vs_ring, the host link bytes; every field
// always present) and the
// emulated links' own: their rate, the link-bound ideal, the model's
// prediction and whether the CPU rather than the links bounded the time.
type Row struct {
	Path        string  `json:"path"` // switch, ring, sparse or host-sparse
	Ranks       int     `json:"ranks"`
	Bytes       int64   `json:"bytes"`
	DType       string  `json:"dtype"`
	Op          string  `json:"op"`
	Algo        string  `json:"algo"`
	Iters       int     `json:"iters"`
	MedianS     float64 `json:"median_s"` // the slowest host's median call
	P99S        float64 `json:"p99_s"`
	AlgbwGBps   float64 `json:"algbw_GBps"`
	BusbwGBps   float64 `json:"busbw_GBps"` // AlgbwGBps × 2(P−1)/P, as nccl-tests
	Verified    bool    `json:"verified"`
	Retransmits int64   `json:"retransmits"`
	// The bounded-time and injected-tail fields of a bench row: the
	// testbed runs neither, so they are 0.
	DeadlineMS      float64 `json:"deadline_ms"`
	TailRatio       float64 `json:"tail_ratio"`
	DroppedFraction float64 `json:"dropped_fraction"`
	PartialBlocks   int64   `json:"partial_blocks"`
	TxBytes         int64   `json:"tx_bytes"` // payload bytes all hosts sent per call
	RxBytes         int64   `json:"rx_bytes"`
	Density         float64 `json:"density"`
	Storage         string  `json:"storage"`
	SpilledPairs    int64   `json:"spilled_pairs"` // per call, over the hosts (hash storage)
	Rounds          int     `json:"rounds"`        // bench's rounds in turn (--rounds): a testbed path runs once, 1
	// RanksUserS and RanksSysS are the CPU seconds per call the host
	// processes spent inside their calls, summed over the hosts (bench's
	// ranks CPU).
	RanksUserS float64 `json:"ranks_user_s"`
	RanksSysS  float64 `json:"ranks_sys_s"`
	// ServerUserS and ServerSysS are bench's server CPU per call; the
	// testbed's daemons are processes of their own (SwitchCPU), so 0.
	ServerUserS float64 `json:"server_user_s"`
	ServerSysS  float64 `json:"server_sys_s"`
	// VsRing is the ring's median over this row's (above 1: faster).
	VsRing float64 `json:"vs_ring"`
	// OfRelay and OfFanout are bench's echo-relay and fan-out-relay
	// ratios; the testbed runs no relay, so they are always 0 (bench's
	// "not measured").
	OfRelay  float64 `json:"of_relay"`
	OfFanout float64 `json:"of_fanout"`
	// OverBestPeer is bench's ratio over the --peers rows; the testbed
	// reads no peers, so it is always 0.
	OverBestPeer float64 `json:"over_best_peer"`
	// Bytes per call on one host's link, the mean over the hosts, up and
	// down: frames the link's tbf sent (Ethernet header included).
	HostUpBytes   float64 `json:"host_link_up_bytes"`
	HostDownBytes float64 `json:"host_link_down_bytes"`
	LinkBytesFrom string  `json:"link_bytes_from"` // "tc": the qdiscs' counters
	// CPULineNS is bench's cache-line time between two CPUs; the
	// testbed's rows are bounded by their shaped links, not by hand-offs
	// between CPUs, and it does not read it: always 0.
	CPULineNS float64 `json:"cpu_line_ns"`

	Topology    string  `json:"topology"` // "8" hosts on one switch, or "4x4"
	LinkBps     float64 `json:"link_bps"`
	UplinkBps   float64 `json:"uplink_bps"`
	PacketBytes int     `json:"packet_bytes"`
	Window      int     `json:"window"` // blocks in flight per host the switch granted
	Loss        float64 `json:"loss"`
	// IdealS is the link-bound ideal: the frames the busiest host link
	// must carry for this path (payload and every header) at LinkBps,
	// plus the model's latency terms.
	IdealS float64 `json:"ideal_s"`
	// OfIdeal is MedianS / IdealS.
	OfIdeal float64 `json:"of_ideal"`
	// ModelS is `flare model collectives` for the same links (payload
	// only); ModelVsRing the model's time of VsRing's baseline (the
	// ring, or host sparse for the sparse paths) over this path's.
	ModelS      float64 `json:"model_s"`
	ModelVsRing float64 `json:"model_vs_ring"`
	// CPUBusy is the machine's busy share over the path's run (all CPUs,
	// every process, ours or not); SwitchCPU the most CPU seconds per
	// second one switch daemon used.
	CPUBusy   float64 `json:"cpu_busy"`
	SwitchCPU float64 `json:"switch_cpu"`
	// SwitchThreadCPU is the same for the busiest single thread of a
	// daemon.
	SwitchThreadCPU float64 `json:"switch_thread_cpu"`
	// HostCPU is the most CPU seconds per second one host process used
	// over its life (join and leave included; hosts run GOMAXPROCS=1).
	HostCPU float64 `json:"host_cpu"`
	// CPUBound: slower than IdealSlack × IdealS while the machine was
	// saturated (CPUBusy >= BusyCPU) or a daemon, one of its threads or a
	// host was (SwitchCPU, SwitchThreadCPU or HostCPU >= BusyProcess).
	CPUBound bool       `json:"cpu_bound"`
	Links    []LinkStat `json:"links"`
}

// LinkStat is one link's traffic per call over a path's run.
type LinkStat struct {
	Link      string  `json:"link"`     // h3, leaf1-root
	UpBytes   float64 `json:"up_bytes"` // host (leaf) to switch (root), frames per call
	DownBytes float64 `json:"down_bytes"`
	// Up/DownUtil is bytes per call over what the link carries in the
	// path's median call time.
	UpUtil   float64 `json:"up_util"`
	DownUtil float64 `json:"down_util"`
	Drops    int64   `json:"drops"` // frames the link's queues dropped during the path's run
	// Lost is the packets the loss rules (Config.Loss) dropped on the
	// link, both directions, during the path's timed calls.
	Lost int64 `json:"lost"`
}

// modelParams is `flare model collectives` for the cluster: its hosts,
// its vector, the host link rate (the model has one rate for every link)
// on one switch or a two-level fat tree whose leaves have PerLeaf hosts.
func (c *Config) modelParams(density float64) models.CollectiveParams {
	p := models.Figure15Params()
	p.Hosts, p.Bytes, p.ElemBytes, p.IndexBytes = c.World(), c.Bytes, c.DType.Size(), wire.IndexLen
	p.Density, p.Overlap, p.LinkGbps = density, c.Overlap, c.LinkBps/1e9
	p.Topology, p.SwitchPorts = models.TopoSingle, 2*c.World()
	if c.Tree() {
		p.Topology, p.SwitchPorts = models.TopoFatTree, 2*c.PerLeaf
	}
	return p
}

// modelRows are the model's rows for the cluster, by algorithm.
func (c *Config) modelRows(density float64) map[string]models.CollectiveRow {
	rows := map[string]models.CollectiveRow{}
	for _, r := range models.Collectives(c.modelParams(density)) {
		rows[r.Algorithm] = r
	}
	return rows
}

// modelAlgo is the model's algorithm for a path.
func modelAlgo(path string) string {
	switch path {
	case PathRing:
		return models.AlgRing
	case PathSparse:
		return models.AlgInNetworkSparse
	case PathHostSparse:
		return models.AlgHostSparse
	}
	return models.AlgInNetworkDense
}

// framing is how many bytes of frames a host link carries for payload
// bytes on a path: a Flare datagram per packet (Flare, UDP, IPv4 and
// Ethernet headers) or a TCP segment per MSS (the ring).
func (c *Config) framing(path string, payload float64) float64 {
	if path == PathRing || path == PathHostSparse {
		mss := float64(c.MTU - tcpIPHeaders)
		return payload + math.Ceil(payload/mss)*(tcpIPHeaders+ethHeader)
	}
	per := float64(c.PacketBytes)
	return payload + math.Ceil(payload/per)*(wire.HeaderLen+udpIPHeaders+ethHeader)
}

// ideal fills the row's model and ideal columns: the model's time, and
// that time with the frame headers the host link must also carry (the
// model counts payload only).
func (c *Config) ideal(r *Row, model map[string]models.CollectiveRow) {
	m, ok := model[modelAlgo(r.Path)]
	if !ok {
		return
	}
	r.ModelS = m.TimeS
	base := models.AlgRing // the baseline vs_ring divides by: the ring, or for sparse paths host sparse
	if r.Path == PathSparse || r.Path == PathHostSparse {
		base = models.AlgHostSparse
	}
	if b, ok := model[base]; ok && m.TimeS > 0 {
		r.ModelVsRing = b.TimeS / m.TimeS
	}
	bw := c.LinkBps / 8
	r.IdealS = m.TimeS + (c.framing(r.Path, m.HostBytes)-m.HostBytes)/bw
	if r.Path == PathSparse {
		// The host link's busier direction is the union coming down; the
		// model's HostBytes is the uplink's. Count the frames of both
		// the same way: the headers scale with the packets.
		down := m.TimeS * bw
		r.IdealS = m.TimeS + (c.framing(r.Path, down)-down)/bw
	}
	if r.IdealS > 0 {
		r.OfIdeal = r.MedianS / r.IdealS
	}
}

// cpuBound applies the rule of Row.CPUBound.
func (r *Row) cpuBound() bool {
	return r.OfIdeal > IdealSlack && (r.CPUBusy >= BusyCPU || r.SwitchCPU >= BusyProcess ||
		r.SwitchThreadCPU >= BusyProcess || r.HostCPU >= BusyProcess)
}
