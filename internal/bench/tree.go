package bench

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/internal/inproc"
	"github.com/flare-net/flare/internal/units"
	"github.com/flare-net/flare/models"
	"github.com/flare-net/flare/proto"
	swtch "github.com/flare-net/flare/switch"
	"github.com/flare-net/flare/wire"
)

// `flare bench --tree LEAVESxHOSTS`: the measured analogue of the paper's
// Figure 15 (§7.1). A root switch and LEAVES leaf switches run in this
// process on loopback, with LEAVES×HOSTS ranks spread over the leaves in
// contiguous blocks (as Config.Switch places them). For each size it
// measures the in-network dense allreduce through the tree and the host
// ring over the same ranks, and with Sparse, per density, the in-network
// sparse allreduce (hash and array storage) through the tree and the host
// sparse baseline (a sparse allgather around the ring). Every row gives
// the bytes per call on the tree's links next to what `flare model
// collectives` predicts for a fat tree of the same shape.
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

// TreeShape is LEAVES×HOSTS: leaf switches under one root, hosts per leaf.
type TreeShape struct{ Leaves, Hosts int }

func (t TreeShape) String() string { return fmt.Sprintf("%dx%d", t.Leaves, t.Hosts) }

// Validate names a shape out of range: 2..proto.MaxChildren leaves (one
// leaf is a single switch), at least one host each, MaxRanks in all.
func (t TreeShape) Validate() error {
	switch {
	case t.Leaves < 2 || t.Leaves > proto.MaxChildren:
		return fmt.Errorf("TreeShape.Leaves = %d: must be in 2..%d (one leaf is a single switch)", t.Leaves, proto.MaxChildren)
	case t.Hosts < 1 || t.Leaves*t.Hosts > MaxRanks:
		return fmt.Errorf("TreeShape.Hosts = %d: must be at least 1, and leaves × hosts at most %d", t.Hosts, MaxRanks)
	}
	return nil
}

// TreeRow is one line of `flare bench --tree`.
type TreeRow struct {
	Tree      string  `json:"tree"` // LEAVESxHOSTS
	Path      string  `json:"path"` // in-network, ring, hash, array, host-sparse
	Ranks     int     `json:"ranks"`
	Bytes     int64   `json:"bytes"` // dense vector per rank
	Density   float64 `json:"density"`
	DType     string  `json:"dtype"`
	Op        string  `json:"op"`
	Algo      string  `json:"algo"`
	Iters     int     `json:"iters"`
	MedianS   float64 `json:"median_s"`
	P99S      float64 `json:"p99_s"`
	AlgbwGBps float64 `json:"algbw_GBps"` // as Result's
	BusbwGBps float64 `json:"busbw_GBps"`
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
	HostUpRetxBytes   float64 `json:"host_link_up_retx_bytes"`
	HostDownRetxBytes float64 `json:"host_link_down_retx_bytes"`
	LeafUpRetxBytes   float64 `json:"leaf_link_up_retx_bytes"`
	LeafDownRetxBytes float64 `json:"leaf_link_down_retx_bytes"`
	RetxLinkBytes     float64 `json:"retx_link_bytes"`
	Retransmits       int64   `json:"retransmits"`   // over the measured calls
	SpilledPairs      int64   `json:"spilled_pairs"` // per call, over the ranks (hash storage)
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

// The paths of the tree bench beside the sparse ones (PathHash,
// PathArray, PathHostSparse).
const (
	PathInNetwork = "in-network" // dense through the tree
)

// treeSwitchHPU shrinks each switch's processing unit: the tree's 1+LEAVES
// switches and every rank share this machine's cores (as the tree tests'
// daemons do).
var treeSwitchHPU = hpu.Config{Clusters: 2, CoresPerCluster: 4}

// treeRun is a running tree of in-process switches and the suite that
// measures through it.
type treeRun struct {
	s    Suite
	tree *inproc.Tree
	job  uint32
}

// runTree runs the tree bench and writes its rows.
func (s Suite) runTree(ctx context.Context, w io.Writer) error {
	g := inproc.New(ctx)
	defer g.Close()
	tree, err := g.Tree(s.Tree.Leaves, swtch.Config{HPU: treeSwitchHPU, SharedCPUs: true}) // the hosts run in this process
	if err != nil {
		return fmt.Errorf("starting the tree's switches: %w", err)
	}
	t := &treeRun{s: s, tree: tree, job: 9000}
	var tw *tabwriter.Writer
	if !s.JSON {
		tw = t.writeHeader(w)
	}
	emit := func(rows ...*TreeRow) error {
		for _, r := range rows {
			if err := t.write(w, tw, r); err != nil {
				return err
			}
		}
		return nil
	}
	err = t.measureSizes(ctx, emit)
	if tw != nil {
		tw.Flush()
		fmt.Fprintln(w, "\ntime vs base, traffic vs base: the host baseline's (ring; host-sparse for sparse rows) time or link bytes over this row's,\n"+
			"measured and in the model. measured/model: the measured traffic ratio over the model's.")
		if _, pending := err.(pendingSparse); pending {
			fmt.Fprintf(w, "\nsparse rows: pending sparse trees: %v\n", err)
		}
	}
	return err
}

// pendingSparse is a failed sparse row through the tree, after which the
// bench stops: the rows before it were written.
type pendingSparse struct{ error }

func (e pendingSparse) Unwrap() error { return e.error }

// measureSizes measures every size: in-network dense and the ring, and
// with Sparse per density hash, array and host-sparse, each group with
// its model columns, emitted as it is measured.
func (t *treeRun) measureSizes(ctx context.Context, emit func(...*TreeRow) error) error {
	s := t.s
	for _, size := range s.Sizes {
		dense, err := t.row(ctx, PathInNetwork, size, 0)
		if err != nil {
			return fmt.Errorf("tree %s %s in-network: %w", s.Tree, units.FormatSize(size), err)
		}
		ring, err := t.row(ctx, PathRing, size, 0)
		if err != nil {
			return fmt.Errorf("tree %s %s ring: %w", s.Tree, units.FormatSize(size), err)
		}
		model := t.model(size, 0)
		setModel(dense, ring, model, models.AlgInNetworkDense, models.AlgRing)
		setModel(ring, ring, model, models.AlgRing, models.AlgRing)
		if err := emit(dense, ring); err != nil {
			return err
		}
		if !s.Sparse {
			continue
		}
		for _, d := range s.Densities {
			if err := t.sparseRows(ctx, size, d, emit); err != nil {
				return err
			}
		}
	}
	return nil
}

// sparseRows measures one size and density: the host baseline, then the
// in-network storages, emitted with the baseline even when a storage
// failed (a pendingSparse error then).
func (t *treeRun) sparseRows(ctx context.Context, size int64, d float64, emit func(...*TreeRow) error) error {
	s := t.s
	base, err := t.row(ctx, PathHostSparse, size, d)
	if err != nil {
		return fmt.Errorf("tree %s %s density %v host-sparse: %w", s.Tree, units.FormatSize(size), d, err)
	}
	model := t.model(size, d)
	var rows []*TreeRow
	var sparseErr error
	for _, storage := range []string{PathHash, PathArray} {
		r, err := t.row(ctx, storage, size, d)
		if err != nil {
			sparseErr = pendingSparse{fmt.Errorf("tree %s %s density %v %s (in-network sparse through the tree): %w", s.Tree, units.FormatSize(size), d, storage, err)}
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
	return sparseErr
}

// config is the Config of one path of the tree's rows: every rank in this
// process, spread over the leaves.
func (t *treeRun) config(path string, size int64, density float64) Config {
	s := t.s
	t.job++
	c := Config{Switch: t.tree.Addrs(), Job: t.job, Token: newToken(), Ranks: s.Tree.Leaves * s.Tree.Hosts,
		Count: int(size) / s.DType.Size(), DType: s.DType, Op: s.Op, Algo: s.Algo, Iters: s.Iters, Warmup: s.Warmup,
		Verify: s.Verify, Timeout: s.Timeout, Overlap: s.Overlap}
	switch path {
	case PathHash, PathArray, PathHostSparse:
		c.Sparse, c.Density = true, density
		c.Storage = map[string]wire.Storage{PathHash: wire.StorageHash, PathArray: wire.StorageArray}[path]
		if c.Algo == "tree" {
			c.Algo = "auto" // Suite.Algo tree is for the dense rows: sparse jobs use single or multi buffers
		}
	}
	if path == PathRing || path == PathHostSparse {
		c.Algo = PathRing
	}
	return c
}

// row measures one path of the tree.
func (t *treeRun) row(ctx context.Context, path string, size int64, density float64) (*TreeRow, error) {
	c := t.config(path, size, density)
	var row *TreeRow
	var err error
	if c.Algo == PathRing {
		row, err = t.hostRing(ctx, c)
	} else {
		row, err = t.inNetwork(ctx, c)
	}
	if err != nil {
		return nil, err
	}
	row.Path = path
	return row, nil
}

// newRow is a row of the measured calls of m.
func (t *treeRun) newRow(m *measurement) *TreeRow {
	c, res := m.c, m.result()
	return &TreeRow{Tree: t.s.Tree.String(), Ranks: res.Ranks, Bytes: res.Bytes, Density: c.Density,
		DType: res.DType, Op: res.Op, Algo: res.Algo, Iters: res.Iters, MedianS: res.MedianS, P99S: res.P99S,
		AlgbwGBps: res.AlgbwGBps, BusbwGBps: res.BusbwGBps, Verified: res.Verified}
}
