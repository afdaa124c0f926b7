package models

import (
	"fmt"
	"io"
	"math"
	"math/bits"
	"strings"
	"text/tabwriter"
)

// Topology is the network the collectives model runs on.
type Topology string

// Topologies.
const (
	// TopoSingle: every host on one switch (two links between any pair).
	TopoSingle Topology = "single"
	// TopoFatTree: a two-level fat tree of k-port switches. Leaves have k/2
	// hosts and k/2 uplinks (full bisection); a path stays in its leaf (2
	// links) or crosses the spine (4 links).
	TopoFatTree Topology = "fattree"
)

// Collective algorithm names, as CollectiveRow.Algorithm prints them.
const (
	AlgRing            = "ring"
	AlgDirect          = "direct"
	AlgHalvingDoubling = "halving-doubling"
	AlgHierarchical    = "hierarchical"
	AlgInNetworkDense  = "in-network-dense"
	AlgHostSparse      = "host-sparse"
	AlgInNetworkSparse = "in-network-sparse"
)

// CollectiveParams describe one allreduce for the host-side model.
type CollectiveParams struct {
	Hosts      int     // P
	Bytes      int64   // Z: dense vector bytes per host
	ElemBytes  int     // element size (4 for float32)
	IndexBytes int     // sparse index size (4, as wire.IndexLen)
	Density    float64 // non-zero fraction of each host's vector for the sparse rows; 0: no sparse rows
	// Overlap is the fraction of each host's non-zero indices that every
	// host shares; the rest are independent and uniform. 0 is the worst
	// case for sparse allreduce (unions grow fastest), 1 the best.
	Overlap        float64
	LinkGbps       float64  // every link, host and switch, each direction
	LinkLatencyNs  float64  // per link a message crosses
	StepOverheadNs float64  // per message step at a host (software, NIC)
	SwitchPorts    int      // k
	SwitchGbps     float64  // aggregation throughput of one switch for in-network rows; 0: never the bottleneck
	SpillRatio     float64  // multiplies the in-network sparse result traffic (hash spill, SparseRow.TrafficRatio); 0 means 1
	Topology       Topology // TopoSingle, TopoFatTree, or "" for both
}

// CollectiveRow is the time and traffic of one allreduce algorithm.
type CollectiveRow struct {
	Algorithm string   `json:"algorithm"`
	Topology  Topology `json:"topology"`
	Sparse    bool     `json:"sparse"`
	Steps     int      `json:"steps"`      // communication steps (latency terms)
	TimeS     float64  `json:"time_s"`     // completion time
	HostBytes float64  `json:"host_bytes"` // bytes each host sends
	WireBytes float64  `json:"wire_bytes"` // bytes summed over every link crossed: the network traffic
}

// Figure15Params is the setting of the Flare paper's Figure 15 (§7.1): 64
// hosts with 100 Gbit/s NICs on a two-level fat tree of 8-port 100 Gbit/s
// switches, a 100 MiB float32 vector per host, and for the sparse rows one
// value in ~500 (the paper keeps one value per bucket of 512: ~0.2%).
// Link latency 500 ns, no software overhead, and switches that aggregate at
// line rate (the paper tuned its SST switches to the PsPIN bandwidth,
// which is higher than 8 × 100 Gbit/s).
func Figure15Params() CollectiveParams {
	return CollectiveParams{
		Hosts: 64, Bytes: 100 << 20, ElemBytes: 4, IndexBytes: 4, Density: 0.002,
		LinkGbps: 100, LinkLatencyNs: 500, SwitchPorts: 8, Topology: TopoFatTree,
	}
}

// Validate reports the first field out of range, naming it.
func (c CollectiveParams) Validate() error {
	bad := func(field string, v any, rng string) error {
		return fmt.Errorf("models: CollectiveParams.%s = %v: must be %s", field, v, rng)
	}
	switch {
	case c.Hosts < 2 || c.Hosts > MaxHosts:
		return bad("Hosts", c.Hosts, fmt.Sprintf("in 2..%d", MaxHosts))
	case c.Bytes < 1 || c.Bytes > MaxBytes:
		return bad("Bytes", c.Bytes, fmt.Sprintf("in 1..%d", MaxBytes))
	case c.ElemBytes != 1 && c.ElemBytes != 2 && c.ElemBytes != 4 && c.ElemBytes != 8:
		return bad("ElemBytes", c.ElemBytes, "1, 2, 4 or 8")
	case c.IndexBytes < 1 || c.IndexBytes > 8:
		return bad("IndexBytes", c.IndexBytes, "in 1..8")
	case !(c.Density >= 0 && c.Density <= 1):
		return bad("Density", c.Density, "in [0, 1] (0: no sparse rows)")
	case !(c.Overlap >= 0 && c.Overlap <= 1):
		return bad("Overlap", c.Overlap, "in [0, 1]")
	case !(c.LinkGbps > 0) || math.IsInf(c.LinkGbps, 0):
		return bad("LinkGbps", c.LinkGbps, "> 0")
	case !(c.LinkLatencyNs >= 0) || math.IsInf(c.LinkLatencyNs, 0):
		return bad("LinkLatencyNs", c.LinkLatencyNs, ">= 0")
	case !(c.StepOverheadNs >= 0) || math.IsInf(c.StepOverheadNs, 0):
		return bad("StepOverheadNs", c.StepOverheadNs, ">= 0")
	case c.SwitchPorts < 2 || c.SwitchPorts%2 != 0:
		return bad("SwitchPorts", c.SwitchPorts, "even and >= 2")
	case !(c.SwitchGbps >= 0) || math.IsInf(c.SwitchGbps, 0):
		return bad("SwitchGbps", c.SwitchGbps, ">= 0 (0: not a bottleneck)")
	case !(c.SpillRatio == 0 || c.SpillRatio >= 1) || math.IsInf(c.SpillRatio, 0):
		return bad("SpillRatio", c.SpillRatio, ">= 1 (0 means 1)")
	case c.Topology != "" && c.Topology != TopoSingle && c.Topology != TopoFatTree:
		return bad("Topology", c.Topology, `"single", "fattree" or "" (both)`)
	}
	return nil
}

// net is a topology instance: hosts placed rank by rank, g per leaf. On a
// single switch the groups of g hosts exist only for the hierarchical
// algorithm.
type net struct {
	topo   Topology
	p, g   int // hosts, hosts per leaf (and hierarchical group size)
	leaves int // groups of g hosts: leaf switches on the fat tree
	spines int
}

func newNet(t Topology, p, k int) net {
	g := min(k/2, p)
	return net{topo: t, p: p, g: g, leaves: (p + g - 1) / g, spines: k / 2}
}

// tree reports whether hosts of different leaves go through the spine.
func (n net) tree() bool { return n.topo == TopoFatTree && n.leaves > 1 }

// hops is the number of links between hosts i and j.
func (n net) hops(i, j int) int {
	switch {
	case i == j:
		return 0
	case n.topo == TopoSingle || i/n.g == j/n.g:
		return 2
	}
	return 4
}

// model holds what every algorithm needs.
type model struct {
	c     CollectiveParams
	n     net
	bw    float64 // bytes per second per link direction
	lat   float64 // seconds per link
	z     float64 // Z
	elems float64 // N = Z / ElemBytes
}

// step is one message step: m bytes per host, the slowest path h links.
func (md model) step(m float64, h int) float64 {
	return m/md.bw + float64(h)*md.lat + md.c.StepOverheadNs*1e-9
}

// Collectives models one allreduce with each host-based algorithm (ring,
// direct, halving-doubling, two-level hierarchical), Flare's in-network
// dense allreduce and, when c.Density > 0, SparCML-style host sparse and
// Flare's in-network sparse allreduce, on c.Topology (both when empty). It
// returns nil if c does not Validate.
//
// The model is α–β: a step that sends m bytes over a path of h links takes
// m/bandwidth + h·latency + overhead; links are full duplex and the fat
// tree has full bisection, so a host's own link is the bottleneck of every
// host-based algorithm (the RoCE study finds no congestion for collectives
// on such networks). Traffic is bytes × links crossed, summed. docs/MODEL.md
// derives each algorithm.
func Collectives(c CollectiveParams) []CollectiveRow {
	if c.Validate() != nil {
		return nil
	}
	if c.SpillRatio == 0 {
		c.SpillRatio = 1
	}
	topos := []Topology{TopoSingle, TopoFatTree}
	if c.Topology != "" {
		topos = []Topology{c.Topology}
	}
	var rows []CollectiveRow
	for _, t := range topos {
		md := model{c: c, n: newNet(t, c.Hosts, c.SwitchPorts), bw: c.LinkGbps * 1e9 / 8,
			lat: c.LinkLatencyNs * 1e-9, z: float64(c.Bytes), elems: float64(c.Bytes) / float64(c.ElemBytes)}
		rows = append(rows, md.ring(), md.direct(), md.halvingDoubling(), md.hierarchical(), md.inNetworkDense())
		if c.Density > 0 {
			rows = append(rows, md.hostSparse(), md.inNetworkSparse())
		}
	}
	return rows
}

// ring: reduce-scatter then all-gather around ranks 0..P−1, 2(P−1) steps
// of Z/P each (Patarasuk & Yuan; the RoCE study's "ring-based").
func (md model) ring() CollectiveRow {
	P := md.n.p
	m := md.z / float64(P)
	hmax, hsum := 0, 0
	for r := range P {
		h := md.n.hops(r, (r+1)%P)
		hmax, hsum = max(hmax, h), hsum+h
	}
	steps := 2 * (P - 1)
	return CollectiveRow{Algorithm: AlgRing, Topology: md.n.topo, Steps: steps,
		TimeS: float64(steps) * md.step(m, hmax), HostBytes: float64(steps) * m,
		WireBytes: float64(steps) * m * float64(hsum)}
}

// direct: each host sends its i-th of P segments to host i at once
// (reduce-scatter), then its reduced segment to everyone (all-gather): two
// steps of (P−1)·Z/P bytes per host link (the RoCE study's "direct").
func (md model) direct() CollectiveRow {
	P := md.n.p
	m := md.z / float64(P)
	hmax, hsum := 0, 0
	for i := range P {
		for j := range P {
			h := md.n.hops(i, j)
			hmax, hsum = max(hmax, h), hsum+h
		}
	}
	return CollectiveRow{Algorithm: AlgDirect, Topology: md.n.topo, Steps: 2,
		TimeS: 2 * md.step(float64(P-1)*m, hmax), HostBytes: 2 * float64(P-1) * m,
		WireBytes: 2 * m * float64(hsum)}
}

// exchange sums one step in which host i (< p2) talks to host i XOR dist.
func (md model) exchange(p2, dist int) (hmax, hsum int) {
	for i := range p2 {
		h := md.n.hops(i, i^dist)
		hmax, hsum = max(hmax, h), hsum+h
	}
	return hmax, hsum
}

// extras are the hosts beyond the largest power of two p2 ≤ P: host p2+j
// hands its vector to host j before and gets the result after (the usual
// fold for non-powers of two).
func (md model) extras(p2 int) (hmax, hsum int) {
	for j := range md.n.p - p2 {
		h := md.n.hops(p2+j, j)
		hmax, hsum = max(hmax, h), hsum+h
	}
	return hmax, hsum
}

// halvingDoubling: Rabenseifner's reduce-scatter by recursive halving (step
// j exchanges Z/2^(j+1) with the host at distance 2^j; near partners get
// the big halves) and all-gather by recursive doubling, 2·log2 P steps.
func (md model) halvingDoubling() CollectiveRow {
	P := md.n.p
	p2 := 1 << (bits.Len(uint(P)) - 1)
	row := CollectiveRow{Algorithm: AlgHalvingDoubling, Topology: md.n.topo}
	for dist, m := 1, md.z/2; dist < p2; dist, m = dist*2, m/2 {
		hmax, hsum := md.exchange(p2, dist)
		row.Steps += 2
		row.TimeS += 2 * md.step(m, hmax)
		row.HostBytes += 2 * m
		row.WireBytes += 2 * m * float64(hsum)
	}
	if p2 < P {
		hmax, hsum := md.extras(p2)
		row.Steps += 2
		row.TimeS += 2 * md.step(md.z, hmax)
		row.WireBytes += 2 * md.z * float64(hsum)
	}
	return row
}

// hierarchical: the two-level algorithm of the RoCE study (§II): a ring
// reduce-scatter inside each group of g = k/2 hosts (a leaf), a ring
// reduce-scatter of the 1/g shard across the groups, then the two
// all-gathers in reverse order. It sends as much per host as the ring but
// crosses the spine with 1/g of it, in 2(g−1) + 2(l−1) steps.
func (md model) hierarchical() CollectiveRow {
	g, l := md.n.g, md.n.leaves
	hin, hx := 2, 2
	if md.n.tree() {
		hx = 4
	}
	if g == 1 {
		hin = 0
	}
	mIn := md.z / float64(g)
	mX := md.z / float64(g*l)
	P := float64(md.n.p)
	return CollectiveRow{Algorithm: AlgHierarchical, Topology: md.n.topo, Steps: 2*(g-1) + 2*(l-1),
		TimeS:     2*float64(g-1)*md.step(mIn, hin) + 2*float64(l-1)*md.step(mX, hx),
		HostBytes: 2*float64(g-1)*mIn + 2*float64(l-1)*mX,
		WireBytes: P * (2*float64(g-1)*mIn*float64(hin) + 2*float64(l-1)*mX*float64(hx))}
}

// switchTime is how long the busiest switch takes to aggregate: a leaf
// folds its g hosts' streams, the spines share the leaves' aggregates
// (blocks are rooted round-robin over the k/2 spines).
func (md model) switchTime(perHost, perLeaf float64) float64 {
	if md.c.SwitchGbps == 0 {
		return 0
	}
	sw := md.c.SwitchGbps * 1e9 / 8
	if !md.n.tree() {
		return float64(md.n.p) * perHost / sw
	}
	return math.Max(float64(md.n.g)*perHost/sw, float64(md.n.leaves)*perLeaf/float64(md.n.spines)/sw)
}

// inNetworkDense: Flare's allreduce (§4): every host streams Z up once and
// gets the result back once, pipelined block by block, so the time is one
// Z over the host link (or the switch's aggregation, if slower) plus one
// round trip. On the fat tree each leaf aggregates its hosts and sends one
// stream to the spines, which aggregate the leaves and multicast back.
func (md model) inNetworkDense() CollectiveRow {
	P := float64(md.n.p)
	rtt, wire := 2, 2*P*md.z
	if md.n.tree() {
		rtt, wire = 4, 2*md.z*(P+float64(md.n.leaves))
	}
	t := math.Max(md.z/md.bw, md.switchTime(md.z, md.z)) + float64(rtt)*md.lat + md.c.StepOverheadNs*1e-9
	return CollectiveRow{Algorithm: AlgInNetworkDense, Topology: md.n.topo, Steps: 1, TimeS: t,
		HostBytes: md.z, WireBytes: wire}
}

// union is the expected number of distinct non-zero indices over m hosts:
// the shared ones plus the union of m independent uniform sets.
func (md model) union(m int) float64 {
	nnz := md.c.Density * md.elems
	common := md.c.Overlap * nnz
	rest := nnz - common
	free := md.elems - common
	if free <= 0 {
		return common
	}
	q := rest / free
	return common + free*(1-math.Pow(1-q, float64(m)))
}

func (md model) pairBytes() float64 { return float64(md.c.IndexBytes + md.c.ElemBytes) }

// hostSparse: SparCML's recursive-doubling sparse allreduce (SSAR): at step
// j every host exchanges the (index, value) pairs it has accumulated from
// 2^j hosts with the host at distance 2^j, log2 P steps; a set larger than
// the dense vector is sent dense, as SparCML switches representation.
func (md model) hostSparse() CollectiveRow {
	P := md.n.p
	p2 := 1 << (bits.Len(uint(P)) - 1)
	row := CollectiveRow{Algorithm: AlgHostSparse, Topology: md.n.topo, Sparse: true}
	size := func(m int) float64 { return math.Min(md.union(m)*md.pairBytes(), md.z) }
	add := func(m float64, hmax, hsum int) {
		row.Steps++
		row.TimeS += md.step(m, hmax)
		row.WireBytes += m * float64(hsum)
	}
	xmax, xsum := md.extras(p2)
	if p2 < P {
		add(size(1), xmax, xsum) // the extras hand over their pairs
	}
	for dist := 1; dist < p2; dist *= 2 {
		hmax, hsum := md.exchange(p2, dist)
		add(size(dist), hmax, hsum)
		row.HostBytes += size(dist)
	}
	if p2 < P {
		add(size(P), xmax, xsum) // and get the result back
	}
	return row
}

// inNetworkSparse: Flare's sparse allreduce (§7): hosts send their pairs
// once; leaves aggregate their g hosts, the spines the leaves, and the
// union comes back to every host (times the spill ratio for hash storage).
// A host's downlink carries the union, its uplink its own pairs.
func (md model) inNetworkSparse() CollectiveRow {
	P := float64(md.n.p)
	pb := md.pairBytes()
	up := md.union(1) * pb
	down := md.union(md.n.p) * pb * md.c.SpillRatio
	rtt, wire := 2, P*up+P*down
	leafUp := up
	if md.n.tree() {
		L := float64(md.n.leaves)
		leafUp = md.union(md.n.g) * pb
		rtt, wire = 4, P*up+L*leafUp+L*down+P*down
	}
	t := math.Max(math.Max(up, down)/md.bw, md.switchTime(up, leafUp)) + float64(rtt)*md.lat + md.c.StepOverheadNs*1e-9
	return CollectiveRow{Algorithm: AlgInNetworkSparse, Topology: md.n.topo, Sparse: true, Steps: 1, TimeS: t,
		HostBytes: up, WireBytes: wire}
}

// WriteCollectiveTable writes collective rows as an aligned text table,
// with each row's time and traffic relative to the ring on the same
// topology.
func WriteCollectiveTable(w io.Writer, rows []CollectiveRow) error {
	ring := map[Topology]CollectiveRow{}
	for _, r := range rows {
		if r.Algorithm == AlgRing {
			ring[r.Topology] = r
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join([]string{"topology", "algorithm", "steps", "time", "sent/host", "traffic",
		"ring/time", "ring/traffic"}, "\t")+"\t")
	for _, r := range rows {
		rt, rw := "-", "-"
		if base, ok := ring[r.Topology]; ok && r.TimeS > 0 && r.WireBytes > 0 {
			rt = fmt.Sprintf("%.2fx", base.TimeS/r.TimeS)
			rw = fmt.Sprintf("%.2fx", base.WireBytes/r.WireBytes)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.3f ms\t%s\t%s\t%s\t%s\t\n", r.Topology, r.Algorithm, r.Steps,
			r.TimeS*1e3, FormatBytes(r.HostBytes), FormatBytes(r.WireBytes), rt, rw)
	}
	return tw.Flush()
}
