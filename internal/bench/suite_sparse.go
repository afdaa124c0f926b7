package bench

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/flare-net/flare/internal/units"
	"github.com/flare-net/flare/wire"
)

// SparseRow is one line of `flare bench --sparse`.
type SparseRow struct {
	Path string `json:"path"` // hash, array (sparse in-network), dense (in-network), host-sparse (ring)
	Result
	// TrafficVsDense is this row's bytes on the wire (hosts' tx + rx) over
	// the dense in-network allreduce's for the same P and size.
	TrafficVsDense float64 `json:"traffic_vs_dense"`
	// SpillShare is the share of the bytes the hosts received that were
	// spilled pairs (hash storage).
	SpillShare float64 `json:"spill_share"`
	// VsHostSparse is the host sparse baseline's time over this row's (0
	// on the dense row).
	VsHostSparse float64 `json:"vs_host_sparse"`
}

// The paths of the sparse comparison.
const (
	PathDense      = "dense"       // dense in-network
	PathHash       = "hash"        // sparse in-network, hash storage
	PathArray      = "array"       // sparse in-network, array storage
	PathHostSparse = "host-sparse" // the host sparse baseline: a sparse allgather around the ring
)

// runSparse measures, per P, size and density: sparse in-network with
// hash and array storage, the host sparse baseline, and once per P and
// size the dense in-network allreduce, all on the same switch.
func (s *suiteRun) runSparse(ctx context.Context, w io.Writer) error {
	var tw *tabwriter.Writer
	if !s.JSON {
		tw = newTable(w)
		fmt.Fprintf(w, "Flare bench --sparse: %s %s, overlap %.2f; bytes are the hosts' tx + rx per call\n\n", s.DType, s.Op, s.Overlap)
		fmt.Fprintln(tw, "P\tsize\tdensity\tpath\tmedian\ttx\trx\tvs dense traffic\tspill share\tvs host sparse\tverified\t")
	}
	s.job = 8000
	emit := func(r SparseRow) error { return s.writeSparse(w, tw, r) }
	for _, p := range s.Ranks {
		for _, size := range s.Sizes {
			if err := s.sparseRows(ctx, p, size, emit); err != nil {
				return err
			}
		}
	}
	if tw != nil {
		tw.Flush()
		fmt.Fprintln(w, "\nvs dense traffic: this row's bytes / the dense in-network allreduce's. spill share: spilled pairs' bytes / bytes received.\nvs host sparse: the host sparse baseline's time / this time (above 1 is faster).")
	}
	return nil
}

// sparseRows measures one P and size and emits its rows as they come:
// the dense row, then per density hash, array and host-sparse.
func (s *suiteRun) sparseRows(ctx context.Context, p int, size int64, emit func(SparseRow) error) error {
	dense, _, err := s.measure(ctx, s.config(p, size))
	if err != nil {
		return fmt.Errorf("P=%d %s dense: %w", p, units.FormatSize(size), err)
	}
	if err := emit(SparseRow{Path: PathDense, Result: *dense, TrafficVsDense: 1}); err != nil {
		return err
	}
	for _, d := range s.Densities {
		rows := map[string]*Result{}
		for _, path := range []string{PathHostSparse, PathHash, PathArray} {
			res, _, err := s.measure(ctx, s.sparseConfig(p, size, d, path))
			if err != nil {
				return fmt.Errorf("P=%d %s density %v %s: %w", p, units.FormatSize(size), d, path, err)
			}
			rows[path] = res
		}
		for _, row := range sparseCells(dense, rows, s.DType) {
			if err := emit(row); err != nil {
				return err
			}
		}
	}
	return nil
}

// sparseCells is one density's rows, measured on each sparse path, in
// the table's order (hash, array, host-sparse), with their bytes over the
// dense row's, the share of spilled pairs in what they received and the
// host sparse baseline's time over theirs.
func sparseCells(dense *Result, rows map[string]*Result, dt wire.DType) []SparseRow {
	denseBytes := float64(dense.TxBytes + dense.RxBytes)
	var out []SparseRow
	for _, path := range []string{PathHash, PathArray, PathHostSparse} {
		r := rows[path]
		row := SparseRow{Path: path, Result: *r, TrafficVsDense: float64(r.TxBytes+r.RxBytes) / denseBytes,
			VsHostSparse: rows[PathHostSparse].MedianS / r.MedianS}
		if r.RxBytes > 0 {
			row.SpillShare = float64(r.SpilledPairs) * float64(wire.PairSize(dt)) / float64(r.RxBytes)
		}
		out = append(out, row)
	}
	return out
}

// sparseConfig is the Config of one sparse path at density d.
func (s *suiteRun) sparseConfig(p int, size int64, d float64, path string) Config {
	c := s.config(p, size)
	c.Sparse, c.Density = true, d
	switch path {
	case PathHostSparse:
		c.Algo = PathRing
	case PathHash:
		c.Storage = wire.StorageHash
	case PathArray:
		c.Storage = wire.StorageArray
	}
	return c
}

// writeSparse writes one row, to the table or as JSON.
func (s *suiteRun) writeSparse(w io.Writer, tw *tabwriter.Writer, r SparseRow) error {
	if s.JSON {
		return writeJSON(w, r)
	}
	d := "-"
	if r.Density > 0 {
		d = fmt.Sprintf("%.1f%%", r.Density*100)
	}
	_, err := fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%.2f ms\t%s\t%s\t%s\t%.0f%%\t%s\t%s\t\n", r.Ranks, units.FormatSize(r.Bytes), d, r.Path, r.MedianS*1e3,
		units.HumanBytes(r.TxBytes), units.HumanBytes(r.RxBytes), units.Ratio(r.TrafficVsDense), r.SpillShare*100, units.Ratio(r.VsHostSparse), yesNo(r.Verified, r.Path))
	return err
}
