package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/hostlib"
	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/models"
	"github.com/flare-net/flare/proto"
	swtch "github.com/flare-net/flare/switch"
	"github.com/flare-net/flare/wire"
)

// `flare bench --tree LEAVESxHOSTS`: the measured analogue of the paper's
// Figure 15 (§7.1). A root switch and LEAVES leaf switches run in this
// process on loopback, with LEAVES×HOSTS ranks spread over the leaves in
// contiguous blocks (as `flare allreduce --switch LEAF,LEAF,...` places
// them). For each size it measures the in-network dense allreduce through
// the tree and the host ring over the same ranks, and with --sparse, per
// density, the in-network sparse allreduce (hash and array storage)
// through the tree and the host sparse baseline (a sparse allgather around
// the ring). Every row gives the bytes per call on the tree's links next to
// what `flare model collectives` predicts for a fat tree of the same shape.
//
// Where the bytes come from: for the in-network rows, the switches' own
// per-link counters (swtch.LinkCounters) read just before the first and
// just after the last measured call: each leaf's child links are the host
// links, its parent link the leaf-root link. The host baselines do not
// cross the switches (their TCP connections run host to host on
// loopback), so their bytes are the ranks' own counters (hostlib's
// RingStats, frame headers included) placed on the same tree: a ring hop
// inside a leaf crosses two links (host up, host down), one between leaves
// four (host up, leaf up, leaf down, host down), which is how the model
// counts a fat tree's traffic.

// treeShape is LEAVES×HOSTS: leaf switches under one root, hosts per leaf.
type treeShape struct{ leaves, hosts int }

func (t treeShape) String() string { return fmt.Sprintf("%dx%d", t.leaves, t.hosts) }

// parseTreeShape reads "4x4".
func parseTreeShape(s string) (treeShape, error) {
	l, h, ok := strings.Cut(strings.ToLower(strings.TrimSpace(s)), "x")
	leaves, err1 := strconv.Atoi(strings.TrimSpace(l))
	hosts, err2 := strconv.Atoi(strings.TrimSpace(h))
	switch {
	case !ok || err1 != nil || err2 != nil:
		return treeShape{}, fmt.Errorf("--tree %q: want LEAVESxHOSTS, such as 4x4 (4 leaf switches of 4 hosts under one root)", s)
	case leaves < 2 || leaves > proto.MaxChildren:
		return treeShape{}, fmt.Errorf("--tree %q: leaves must be in 2..%d (one leaf is a single switch: use --ranks)", s, proto.MaxChildren)
	case hosts < 1 || leaves*hosts > 1024:
		return treeShape{}, fmt.Errorf("--tree %q: hosts per leaf must be at least 1, and leaves × hosts at most 1024", s)
	}
	return treeShape{leaves, hosts}, nil
}

// treeRow is one line of `flare bench --tree` (the --json contract).
type treeRow struct {
	Tree    string  `json:"tree"` // LEAVESxHOSTS
	Path    string  `json:"path"` // in-network, ring, hash, array, host-sparse
	Ranks   int     `json:"ranks"`
	Bytes   int64   `json:"bytes"` // dense vector per rank
	Density float64 `json:"density,omitempty"`
	DType   string  `json:"dtype"`
	Op      string  `json:"op"`
	Algo    string  `json:"algo"`
	Iters   int     `json:"iters"`
	MedianS float64 `json:"median_s"`
	P99S    float64 `json:"p99_s"`
	// Bytes on the tree's links per call: mean per host link and per
	// leaf-root link, each direction, and the sum over every link. The
	// in-network rows read the switches' link counters; the host rows the
	// ranks' own, placed on the tree (LinkBytesFrom says which).
	HostUpBytes   float64 `json:"host_link_up_bytes"`
	HostDownBytes float64 `json:"host_link_down_bytes"`
	LeafUpBytes   float64 `json:"leaf_link_up_bytes"`
	LeafDownBytes float64 `json:"leaf_link_down_bytes"`
	LinkBytes     float64 `json:"link_bytes"`
	LinkBytesFrom string  `json:"link_bytes_from"` // switches or hosts
	// The part of those bytes that was loss recovery (in-network rows):
	// datagrams marked FlagRetransmit, the hosts' retransmissions and every
	// answer to them (swtch.LinkTraffic.Retransmit). A leaf multicasts the
	// root's answer to a partial it sent up again to all of its hosts
	// unmarked, so host↓ holds such repeats outside HostDownRetxBytes.
	HostUpRetxBytes   float64 `json:"host_link_up_retx_bytes,omitempty"`
	HostDownRetxBytes float64 `json:"host_link_down_retx_bytes,omitempty"`
	LeafUpRetxBytes   float64 `json:"leaf_link_up_retx_bytes,omitempty"`
	LeafDownRetxBytes float64 `json:"leaf_link_down_retx_bytes,omitempty"`
	RetxLinkBytes     float64 `json:"retx_link_bytes,omitempty"`
	Retransmits       int64   `json:"retransmits"`
	SpilledPairs      int64   `json:"spilled_pairs,omitempty"` // per call, over the ranks (hash storage)
	Verified          bool    `json:"verified"`
	// The model's row for the same tree (models.Collectives, a fat tree of
	// 2×HOSTS-port switches: LEAVES leaves of HOSTS hosts).
	ModelAlgorithm string  `json:"model_algorithm"`
	ModelTimeS     float64 `json:"model_time_s"`
	ModelHostBytes float64 `json:"model_host_bytes"` // bytes each host sends
	ModelLinkBytes float64 `json:"model_link_bytes"` // bytes summed over every link crossed
	// Ratios against the host baseline of the same size (and density): the
	// ring for dense rows, host-sparse for sparse ones. Above 1, this row
	// is faster or moves fewer bytes. TrafficVsModel is the measured
	// traffic ratio over the model's (1: the model predicts the saving).
	Baseline            string  `json:"baseline"`
	TimeVsBaseline      float64 `json:"time_vs_baseline"`
	ModelTimeVsBaseline float64 `json:"model_time_vs_baseline"`
	TrafficVsBaseline   float64 `json:"traffic_vs_baseline"`
	ModelTrafficVsBase  float64 `json:"model_traffic_vs_baseline"`
	TrafficVsModel      float64 `json:"traffic_ratio_vs_model"`
}

// treeBench is a running tree of in-process switches.
type treeBench struct {
	c      *benchConfig
	shape  treeShape
	root   *swtch.Switch
	leaves []*swtch.Switch
	sw     string // the leaves' data addresses, comma-separated (arConfig.sw)
}

// treeSwitchHPU shrinks each switch's processing unit: the tree's 1+LEAVES
// switches and every rank share this machine's cores (as the tree tests'
// daemons do).
var treeSwitchHPU = hpu.Config{Clusters: 2, CoresPerCluster: 4}

// benchTree runs `flare bench --tree`.
func (c *benchConfig) benchTree(ctx context.Context, shape treeShape, sizes []int64, sparse bool, densities []float64, asJSON bool, stdout io.Writer) error {
	g, gctx := errgroup.WithContext(ctx)
	stop, cancel := context.WithCancel(gctx)
	defer func() { cancel(); _ = g.Wait() }()
	t, err := startBenchTree(gctx, stop, g, c, shape)
	if err != nil {
		return err
	}
	p := shape.leaves * shape.hosts
	var tw *tabwriter.Writer
	if !asJSON {
		fmt.Fprintf(stdout, "Flare bench --tree %s: a root and %d leaf switches, %d hosts per leaf (%d ranks), all in this process on loopback; %s %s.\n",
			shape, shape.leaves, shape.hosts, p, c.dtype, c.op)
		fmt.Fprintf(stdout, "Times on loopback through a few shared cores do not compare with the model's 100 Gbit/s links: compare the ratios\n"+
			"(in-network vs the host baseline of the same size), not the absolute times.\n"+
			"Bytes per call: host↑/↓ per host link (mean), leaf↑/↓ per leaf-root link (mean), links = summed over every link,\n"+
			"of them recovery = the datagrams marked as retransmissions (a host's, and the switches' answers to them).\n"+
			"In-network rows: the switches' link counters. Host rows (ring, host-sparse): the ranks' own counters placed on the same\n"+
			"tree (a hop between leaves crosses host↑, leaf↑, leaf↓, host↓).\n")
		for _, size := range sizes {
			fmt.Fprintf(stdout, "model, dense rows: %s\n", treeModelCommand(c, shape, size, 0))
			for _, d := range densities {
				if sparse {
					fmt.Fprintf(stdout, "model, sparse rows at %g%%: %s\n", d*100, treeModelCommand(c, shape, size, d))
				}
			}
		}
		fmt.Fprintln(stdout)
		tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "size\tdensity\tpath\talgo\tmedian\thost↑\thost↓\tleaf↑\tleaf↓\tlinks\tof them recovery\tmodel links\ttime vs base\tmodel\ttraffic vs base\tmodel\tmeasured/model\tretx\tverified\t")
	}
	emit := func(rows ...*treeRow) error {
		for _, r := range rows {
			if asJSON {
				if err := json.NewEncoder(stdout).Encode(r); err != nil {
					return err
				}
				continue
			}
			d := "-"
			if r.Density > 0 {
				d = fmt.Sprintf("%.1f%%", r.Density*100)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f ms\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t\n",
				formatSize(r.Bytes), d, r.Path, r.Algo, r.MedianS*1e3,
				humanBytes(int64(r.HostUpBytes)), humanBytes(int64(r.HostDownBytes)), humanBytes(int64(r.LeafUpBytes)), humanBytes(int64(r.LeafDownBytes)),
				humanBytes(int64(r.LinkBytes)), humanBytes(int64(r.RetxLinkBytes)), humanBytes(int64(r.ModelLinkBytes)),
				ratio(r.TimeVsBaseline), ratio(r.ModelTimeVsBaseline), ratio(r.TrafficVsBaseline), ratio(r.ModelTrafficVsBase),
				plainRatio(r.TrafficVsModel), r.Retransmits, yesNo(r.Verified, r.Path))
		}
		return nil
	}
	flush := func() {
		if tw != nil {
			tw.Flush()
			fmt.Fprintln(stdout, "\ntime vs base, traffic vs base: the host baseline's (ring; host-sparse for sparse rows) time or link bytes over this row's,\n"+
				"measured and in the model. measured/model: the measured traffic ratio over the model's.")
		}
	}
	job := uint32(9000)
	run := func(path string, size int64, density float64) (*treeRow, error) {
		job++
		rc := c.arConfig
		rc.sw, rc.ranks, rc.world, rc.rank, rc.job, rc.token = t.sw, p, p, -1, job, randomToken()
		rc.count = int(size) / c.dtype.Size()
		rc.peers = nil
		switch path {
		case "hash", "array", "host-sparse":
			rc.sparse, rc.density = true, density
			rc.storage = map[string]wire.Storage{"hash": wire.StorageHash, "array": wire.StorageArray}[path]
			if rc.algo == "tree" {
				rc.algo = "auto" // --algo tree is for the dense rows: sparse jobs use single or multi buffers
			}
		}
		var row *treeRow
		var err error
		switch path {
		case "ring", "host-sparse":
			row, err = t.hostRing(ctx, rc)
		default:
			row, err = t.inNetwork(ctx, rc)
		}
		if err != nil {
			return nil, err
		}
		row.Path = path
		return row, nil
	}
	var sparseErr error
	for _, size := range sizes {
		dense, err := run("in-network", size, 0)
		if err != nil {
			flush()
			return fmt.Errorf("--tree %s %s in-network: %w", shape, formatSize(size), err)
		}
		ring, err := run("ring", size, 0)
		if err != nil {
			flush()
			return fmt.Errorf("--tree %s %s ring: %w", shape, formatSize(size), err)
		}
		model := treeModel(c, shape, size, 0)
		setModel(dense, ring, model, models.AlgInNetworkDense, models.AlgRing)
		setModel(ring, ring, model, models.AlgRing, models.AlgRing)
		if err := emit(dense, ring); err != nil {
			return err
		}
		if !sparse {
			continue
		}
		for _, d := range densities {
			base, err := run("host-sparse", size, d)
			if err != nil {
				flush()
				return fmt.Errorf("--tree %s %s density %v host-sparse: %w", shape, formatSize(size), d, err)
			}
			model := treeModel(c, shape, size, d)
			var rows []*treeRow
			for _, storage := range []string{"hash", "array"} {
				r, err := run(storage, size, d)
				if err != nil {
					sparseErr = fmt.Errorf("--tree %s %s density %v %s (in-network sparse through the tree): %w", shape, formatSize(size), d, storage, err)
					break
				}
				rows = append(rows, r)
			}
			for _, r := range rows {
				setModel(r, base, model, models.AlgInNetworkSparse, models.AlgHostSparse)
			}
			setModel(base, base, model, models.AlgHostSparse, models.AlgHostSparse)
			if err := emit(append(rows, base)...); err != nil {
				return err
			}
			if sparseErr != nil {
				break
			}
		}
		if sparseErr != nil {
			break
		}
	}
	flush()
	if sparseErr != nil {
		if !asJSON {
			fmt.Fprintf(stdout, "\nsparse rows: pending sparse trees: %v\n", sparseErr)
		}
		return sparseErr
	}
	return nil
}

func plainRatio(r float64) string {
	if r == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", r)
}

// treeModelParams is the model's setting for the tree: LEAVES×HOSTS hosts
// on a two-level fat tree of 2×HOSTS-port switches, so each leaf has HOSTS
// hosts (and HOSTS uplinks to as many spines, where the emulator has one
// root: the bytes a leaf sends up are the same, spread or not), the
// paper's links otherwise.
func treeModelParams(c *benchConfig, shape treeShape, size int64, density float64) models.CollectiveParams {
	p := models.Figure15Params()
	p.Hosts, p.Bytes, p.ElemBytes, p.IndexBytes = shape.leaves*shape.hosts, size, c.dtype.Size(), wire.IndexLen
	p.Density, p.Overlap = density, c.overlap
	p.SwitchPorts, p.Topology = 2*shape.hosts, models.TopoFatTree
	return p
}

// treeModel is the model's rows for the tree, by algorithm.
func treeModel(c *benchConfig, shape treeShape, size int64, density float64) map[string]models.CollectiveRow {
	rows := map[string]models.CollectiveRow{}
	for _, r := range models.Collectives(treeModelParams(c, shape, size, density)) {
		rows[r.Algorithm] = r
	}
	return rows
}

// treeModelCommand is the `flare model collectives` command line of the
// same setting.
func treeModelCommand(c *benchConfig, shape treeShape, size int64, density float64) string {
	p := treeModelParams(c, shape, size, density)
	return fmt.Sprintf("flare model collectives --hosts %d --bytes %s --dtype %s --ports %d --topology fattree --density %g --overlap %g",
		p.Hosts, formatSize(size), c.dtype, p.SwitchPorts, density, c.overlap)
}

// setModel fills r's model columns from the model's alg row and, with a
// measured baseline row, its ratios against the baseline's (model row
// baseAlg).
func setModel(r, base *treeRow, model map[string]models.CollectiveRow, alg, baseAlg string) {
	m := model[alg]
	r.ModelAlgorithm, r.ModelTimeS, r.ModelHostBytes, r.ModelLinkBytes = alg, m.TimeS, m.HostBytes, m.WireBytes
	if base == nil {
		return
	}
	r.Baseline = base.Path
	mb := model[baseAlg]
	if r.MedianS > 0 {
		r.TimeVsBaseline = base.MedianS / r.MedianS
	}
	if r.LinkBytes > 0 {
		r.TrafficVsBaseline = base.LinkBytes / r.LinkBytes
	}
	if m.TimeS > 0 && m.WireBytes > 0 {
		r.ModelTimeVsBaseline = mb.TimeS / m.TimeS
		r.ModelTrafficVsBase = mb.WireBytes / m.WireBytes
	}
	if r.ModelTrafficVsBase > 0 {
		r.TrafficVsModel = r.TrafficVsBaseline / r.ModelTrafficVsBase
	}
}

// startBenchTree starts the root, then the leaves under it, on loopback
// ports; they run until stop is done.
func startBenchTree(ctx, stop context.Context, g *errgroup.Group, c *benchConfig, shape treeShape) (*treeBench, error) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	t := &treeBench{c: c, shape: shape}
	start := func(cfg swtch.Config) (*swtch.Switch, error) {
		cfg.Listen, cfg.Admin, cfg.Logger, cfg.HPU = "127.0.0.1:0", "off", quiet, treeSwitchHPU
		s, err := swtch.New(cfg)
		if err != nil {
			return nil, err
		}
		g.Go(func() error { return s.Run(stop) })
		select {
		case <-s.Ready():
			return s, nil
		case <-ctx.Done():
			return nil, fmt.Errorf("starting the tree's switches: %w", context.Cause(ctx))
		}
	}
	var err error
	if t.root, err = start(swtch.Config{Children: shape.leaves}); err != nil {
		return nil, err
	}
	var addrs []string
	for i := range shape.leaves {
		leaf, err := start(swtch.Config{Parent: t.root.Addr().String(), ChildIndex: i})
		if err != nil {
			return nil, err
		}
		t.leaves = append(t.leaves, leaf)
		addrs = append(addrs, leaf.Addr().String())
	}
	t.sw = strings.Join(addrs, ",")
	return t, nil
}

// The counters are read when the tree is quiet: a host can hold a result a
// moment before the sender's counter moves, and the answer to a
// retransmission a host sent just before its call ended may still be in a
// socket or a switch's queue. settleLinks polls every linkSettle until
// nothing moved over linkQuiet polls in a row, for at most linkSettleMax,
// so that every datagram a call caused is counted in that call's window,
// however slow the machine.
const (
	linkSettle    = 2 * time.Millisecond
	linkQuiet     = 3
	linkSettleMax = 2 * time.Second
)

// settleLinks waits for the tree to be quiet (the leaves' and the root's
// link counters and the sessions' packet counts unchanged) and returns the
// leaves' counters then.
func (t *treeBench) settleLinks(counters [][]swtch.LinkCounter, sessions []*hostlib.Session) linkSnap {
	type state struct {
		leaves   linkSnap
		root     []swtch.LinkTraffic
		sessions []hostlib.Stats
	}
	read := func() state {
		st := state{leaves: snapshot(counters), root: t.root.LinkTraffic()}
		for _, s := range sessions {
			st.sessions = append(st.sessions, s.Stats())
		}
		return st
	}
	same := func(a, b state) bool {
		return maps.Equal(a.leaves, b.leaves) && slices.Equal(a.root, b.root) && slices.EqualFunc(a.sessions, b.sessions,
			func(x, y hostlib.Stats) bool {
				return x.PacketsSent == y.PacketsSent && x.PacketsReceived == y.PacketsReceived
			})
	}
	last := read()
	for quiet, deadline := 0, time.Now().Add(linkSettleMax); quiet < linkQuiet && time.Now().Before(deadline); {
		time.Sleep(linkSettle)
		cur := read()
		if same(cur, last) {
			quiet++
		} else {
			quiet = 0
		}
		last = cur
	}
	return last.leaves
}

// linkSnap is every counter of the tree's leaves at one moment.
type linkSnap map[swtch.LinkCounter]swtch.LinkTraffic

func snapshot(counters [][]swtch.LinkCounter) linkSnap {
	s := linkSnap{}
	for _, cs := range counters {
		for _, c := range cs {
			s[c] = c.Load()
		}
	}
	return s
}

// inNetwork measures rc through the tree (dense, or sparse with
// rc.sparse), its bytes from the leaves' link counters.
func (t *treeBench) inNetwork(ctx context.Context, rc arConfig) (*treeRow, error) {
	local, world := rc.localRanks()
	sessions, err := joinAll(ctx, rc, local, world)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, s := range sessions {
			s.Close()
		}
	}()
	// Every join returned: each leaf admitted the job (it acks its hosts
	// once the root acked it), so the hosts' links are counted now.
	counters := make([][]swtch.LinkCounter, len(t.leaves))
	for i, l := range t.leaves {
		counters[i] = l.LinkCounters()
	}
	row := t.newRow(rc)
	row.Algo = algoName(sessions[0].Algo(), sessions[0].Buffers())
	row.LinkBytesFrom = "switches"
	d := newTreeData(rc, world, local)
	var before linkSnap
	var retx0, spill0 uint64
	hostStats := func() (retx, spill uint64) {
		for _, s := range sessions {
			st := s.Stats()
			retx, spill = retx+st.Retransmits, spill+st.SpilledPairs
		}
		return retx, spill
	}
	call := func(ctx context.Context) error {
		g, gctx := errgroup.WithContext(ctx)
		for i, s := range sessions {
			g.Go(func() (err error) {
				if rc.sparse {
					d.results[i], err = s.SparseAllReduceBytes(gctx, d.inputs[i])
					return err
				}
				return s.AllReduceBytes(gctx, d.bufs[i])
			})
		}
		return g.Wait()
	}
	times, err := t.loop(ctx, d, func() {
		before = t.settleLinks(counters, sessions)
		retx0, spill0 = hostStats()
	}, call)
	if err != nil {
		return nil, err
	}
	after := t.settleLinks(counters, sessions)
	retx, spill := hostStats()
	row.Retransmits, row.SpilledPairs = int64(retx-retx0), int64(spill-spill0)/int64(rc.iters)
	row.summarise(times)
	if err := t.linkBytes(row, counters, before, after, float64(world), float64(rc.iters)); err != nil {
		return nil, err
	}
	return row, nil
}

// linkBytes fills the row's bytes per call from the leaves' counters
// before and after the measured calls: each direction of the host and
// leaf links, all of it and its loss recovery.
func (t *treeBench) linkBytes(row *treeRow, counters [][]swtch.LinkCounter, before, after linkSnap, world, iters float64) error {
	var all, rec [4]float64 // host up, host down, leaf up, leaf down
	for i, cs := range counters {
		hosts := 0
		for _, c := range cs {
			a, b := after[c], before[c]
			rx, tx := float64(a.RxBytes-b.RxBytes), float64(a.TxBytes-b.TxBytes)
			rrx, rtx := float64(a.Retransmit.RxBytes-b.Retransmit.RxBytes), float64(a.Retransmit.TxBytes-b.Retransmit.TxBytes)
			switch {
			case c.Role() == "parent":
				all[2], all[3], rec[2], rec[3] = all[2]+tx, all[3]+rx, rec[2]+rtx, rec[3]+rrx
			case rx > 0: // a host of this job (a link left over from an earlier job carries nothing)
				all[0], all[1], rec[0], rec[1] = all[0]+rx, all[1]+tx, rec[0]+rrx, rec[1]+rtx
				hosts++
			}
		}
		if hosts != t.shape.hosts {
			return fmt.Errorf("leaf %d counted traffic on %d host links, want %d", i, hosts, t.shape.hosts)
		}
	}
	p, l := world*iters, float64(len(t.leaves))*iters
	row.HostUpBytes, row.HostDownBytes, row.LeafUpBytes, row.LeafDownBytes = all[0]/p, all[1]/p, all[2]/l, all[3]/l
	row.HostUpRetxBytes, row.HostDownRetxBytes, row.LeafUpRetxBytes, row.LeafDownRetxBytes = rec[0]/p, rec[1]/p, rec[2]/l, rec[3]/l
	row.LinkBytes = (all[0] + all[1] + all[2] + all[3]) / iters
	row.RetxLinkBytes = (rec[0] + rec[1] + rec[2] + rec[3]) / iters
	return nil
}

// hostRing measures the host baseline over the same ranks: the ring
// allreduce (dense) or the sparse allgather around the ring (rc.sparse),
// one ring built once and used for every call, its bytes from the ranks'
// counters placed on the tree.
func (t *treeBench) hostRing(ctx context.Context, rc arConfig) (*treeRow, error) {
	local, world := rc.localRanks()
	rings, err := hostlib.NewLocalRings(ctx, world, nil)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, r := range rings {
			r.Close()
		}
	}()
	row := t.newRow(rc)
	row.Algo, row.LinkBytesFrom = "ring", "hosts"
	d := newTreeData(rc, world, local)
	stats := func() []hostlib.RingStats {
		s := make([]hostlib.RingStats, len(rings))
		for i, r := range rings {
			s[i] = r.Stats()
		}
		return s
	}
	var before []hostlib.RingStats
	call := func(ctx context.Context) error {
		g, gctx := errgroup.WithContext(ctx)
		for i, r := range rings {
			g.Go(func() (err error) {
				if rc.sparse {
					d.results[i], err = r.SparseAllReduce(gctx, d.inputs[i], rc.dtype, rc.op)
					return err
				}
				return r.AllReduce(gctx, d.bufs[i], rc.dtype, rc.op)
			})
		}
		return g.Wait()
	}
	times, err := t.loop(ctx, d, func() { before = stats() }, call)
	if err != nil {
		return nil, err
	}
	after := stats()
	row.summarise(times)
	iters := float64(rc.iters)
	sent := make([]float64, world)
	var hostUp, hostDown, cross float64
	for r := range world {
		sent[r] = float64(after[r].BytesSent-before[r].BytesSent) / iters
		hostUp += sent[r]
		hostDown += float64(after[r].BytesReceived-before[r].BytesReceived) / iters
	}
	// Rank r sends only to rank r+1: a hop between leaves also crosses
	// the sender's leaf uplink and the receiver's leaf downlink.
	for r := range world {
		next := (r + 1) % world
		if t.leafOf(rc, r, world) != t.leafOf(rc, next, world) {
			cross += sent[r]
		}
	}
	p, l := float64(world), float64(len(t.leaves))
	row.HostUpBytes, row.HostDownBytes = hostUp/p, hostDown/p
	row.LeafUpBytes, row.LeafDownBytes = cross/l, cross/l
	row.LinkBytes = hostUp + hostDown + 2*cross
	return row, nil
}

// leafOf is the leaf global rank r joins in the tree (arConfig.place).
func (t *treeBench) leafOf(rc arConfig, r, world int) string {
	sw, _, _ := rc.place(r, world)
	return sw
}

func (t *treeBench) newRow(rc arConfig) *treeRow {
	return &treeRow{Tree: t.shape.String(), Ranks: rc.world, Bytes: int64(rc.count * rc.dtype.Size()), Density: rc.density,
		DType: rc.dtype.String(), Op: rc.op.String(), Iters: rc.iters, Verified: rc.verify}
}

func (r *treeRow) summarise(times []float64) {
	var a arResult
	a.Bytes = r.Bytes
	a.summarise(times)
	r.MedianS, r.P99S = a.MedianS, a.P99S
}

// treeData is what the local ranks of one row allreduce: dense buffers
// filled and reduced in place, or sparse inputs and the results, with
// each call's patterns and their check against the reference.
type treeData struct {
	rc                    arConfig
	world                 int
	local                 []int
	bufs, inputs, results [][]byte
}

func newTreeData(rc arConfig, world int, local []int) *treeData {
	d := &treeData{rc: rc, world: world, local: local,
		bufs: make([][]byte, len(local)), inputs: make([][]byte, len(local)), results: make([][]byte, len(local))}
	if !rc.sparse {
		for i := range d.bufs {
			d.bufs[i] = make([]byte, rc.count*rc.dtype.Size())
		}
	}
	return d
}

// fill writes call it's vectors (sparse inputs always, dense buffers when
// the results are verified).
func (d *treeData) fill(it int) {
	rc := d.rc
	for i, r := range d.local {
		if rc.sparse {
			d.inputs[i] = sparsePattern(rc.dtype, r, it, rc.count, rc.density, rc.overlap)
		} else if rc.verify {
			fillPattern(rc.dtype, rc.op, r, it, d.bufs[i])
		}
	}
}

// verify checks call it's results, when asked to.
func (d *treeData) verify(it int) error {
	switch {
	case !d.rc.verify:
		return nil
	case d.rc.sparse:
		return verifySparseAll(d.rc, d.world, it, d.local, d.results)
	}
	return verifyDenseAll(d.rc, d.world, it, d.bufs)
}

// loop runs the warmup and measured calls of one row: each fills d, runs
// call under the timeout and verifies d; measuring runs once before the
// first measured call (counters' baselines). It returns the measured
// calls' times in seconds.
func (t *treeBench) loop(ctx context.Context, d *treeData, measuring func(), call func(context.Context) error) ([]float64, error) {
	rc := d.rc
	var times []float64
	for it := range rc.warmup + rc.iters {
		if it == rc.warmup {
			measuring()
		}
		d.fill(it)
		cctx, cancel := context.WithTimeout(ctx, rc.timeout)
		start := time.Now()
		err := call(cctx)
		el := time.Since(start)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("call %d: %w", it, err)
		}
		if it >= rc.warmup {
			times = append(times, el.Seconds())
		}
		if err := d.verify(it); err != nil {
			return nil, fmt.Errorf("verify: call %d: %w", it, err)
		}
	}
	return times, nil
}

// verifyDenseAll checks rank 0's result element by element against the
// reference, and every other rank's for the same bits as rank 0's (a
// multicast result, or the ring's all-gather, gives every rank the same
// vector) or, failing that, against the reference too.
func verifyDenseAll(rc arConfig, world, it int, bufs [][]byte) error {
	for i := range bufs {
		if i > 0 && bytes.Equal(bufs[i], bufs[0]) {
			continue
		}
		if err := verifyPattern(rc.dtype, rc.op, world, it, bufs[i]); err != nil {
			return fmt.Errorf("rank %d: %w", i, err)
		}
	}
	return nil
}

// verifySparseAll checks rank 0's sparse result against the reference of
// every rank's pattern, and every other rank's for the same bits as rank
// 0's or, failing that, against the reference too (the patterns' small
// integers make every order of the sums exact).
func verifySparseAll(rc arConfig, world, it int, local []int, results [][]byte) error {
	all := make([][]byte, world)
	for r := range all {
		all[r] = sparsePattern(rc.dtype, r, it, rc.count, rc.density, rc.overlap)
	}
	for i, r := range local {
		if i > 0 && bytes.Equal(results[i], results[0]) {
			continue
		}
		if err := elem.CheckSparse(rc.dtype, rc.op, all, results[i]); err != nil {
			return fmt.Errorf("rank %d: %w", r, err)
		}
	}
	return nil
}

// hostLinkWatch finds the host links of one job on an in-process switch
// while a path runs (the switch forgets a host's link when its job ends,
// which happens inside a rank process): it polls the switch's link
// counters and keeps every child link that appears after it started.
type hostLinkWatch struct {
	sw   *swtch.Switch
	old  map[swtch.LinkCounter]bool
	mu   sync.Mutex
	seen map[swtch.LinkCounter]bool
	stop chan struct{}
	done chan struct{}
}

// watchHostLinks starts watching sw.
func watchHostLinks(sw *swtch.Switch) *hostLinkWatch {
	w := &hostLinkWatch{sw: sw, old: map[swtch.LinkCounter]bool{}, seen: map[swtch.LinkCounter]bool{},
		stop: make(chan struct{}), done: make(chan struct{})}
	for _, c := range sw.LinkCounters() {
		w.old[c] = true
	}
	go func() {
		defer close(w.done)
		t := time.NewTicker(500 * time.Microsecond)
		defer t.Stop()
		for {
			w.poll()
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
		}
	}()
	return w
}

func (w *hostLinkWatch) poll() {
	cs := w.sw.LinkCounters()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range cs {
		if c.Role() == "child" && !w.old[c] {
			w.seen[c] = true
		}
	}
}

// finish stops the watch and sums the bytes the switch received from
// (up) and sent to (down) the links it found, and how many there were.
func (w *hostLinkWatch) finish() (up, down int64, links int) {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	for c := range w.seen {
		t := c.Load()
		up += t.RxBytes
		down += t.TxBytes
	}
	return up, down, len(w.seen)
}

// ringCallTraffic runs one ring allreduce of count elements among p ranks
// in this process and returns the mean bytes a rank sent and received
// (hostlib's RingStats, frame headers included): the ring path's traffic
// per call, which depends on P and the size alone, for the rows whose
// rank processes do not report it.
func ringCallTraffic(ctx context.Context, p, count int, dt wire.DType, op wire.Op) (sent, received float64, err error) {
	if p < 2 {
		return 0, 0, nil
	}
	rings, err := hostlib.NewLocalRings(ctx, p, nil)
	if err != nil {
		return 0, 0, err
	}
	defer func() {
		for _, r := range rings {
			r.Close()
		}
	}()
	g, gctx := errgroup.WithContext(ctx)
	for _, r := range rings {
		g.Go(func() error { return r.AllReduce(gctx, make([]byte, count*dt.Size()), dt, op) })
	}
	if err := g.Wait(); err != nil {
		return 0, 0, err
	}
	for _, r := range rings {
		st := r.Stats()
		sent += float64(st.BytesSent)
		received += float64(st.BytesReceived)
	}
	return sent / float64(p), received / float64(p), nil
}
