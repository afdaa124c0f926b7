package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/flare-net/flare/wire"
)

// sparseRow is one line of `flare bench --sparse`.
type sparseRow struct {
	Path string `json:"path"` // hash, array (sparse in-network), dense (in-network), host-sparse (ring)
	arResult
	// TrafficVsDense is this row's bytes on the wire (hosts' tx + rx) over
	// the dense in-network allreduce's for the same P and size.
	TrafficVsDense float64 `json:"traffic_vs_dense"`
	// SpillShare is the share of the bytes the hosts received that were
	// spilled pairs (hash storage).
	SpillShare float64 `json:"spill_share"`
	// VsHostSparse is the host sparse baseline's time over this row's.
	VsHostSparse float64 `json:"vs_host_sparse"`
}

// benchSparse measures, per P, size and density: sparse in-network with
// hash and array storage, the host sparse baseline (a sparse allgather
// around the ring), and once per P and size the dense in-network
// allreduce, all on the same embedded switch (or --switch).
func (c *benchConfig) benchSparse(ctx context.Context, ranks []int, sizes []int64, densities []float64, asJSON bool, stdout io.Writer) error {
	var tw *tabwriter.Writer
	if !asJSON {
		tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(stdout, "Flare bench --sparse: %s %s, overlap %.2f; bytes are the hosts' tx + rx per call\n\n", c.dtype, c.op, c.overlap)
		fmt.Fprintln(tw, "P\tsize\tdensity\tpath\tmedian\ttx\trx\tvs dense traffic\tspill share\tvs host sparse\tverified\t")
	}
	emit := func(r sparseRow, p int, size int64) error {
		if asJSON {
			return json.NewEncoder(stdout).Encode(r)
		}
		d := "-"
		if r.Density > 0 {
			d = fmt.Sprintf("%.1f%%", r.Density*100)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%.2f ms\t%s\t%s\t%s\t%.0f%%\t%s\t%s\t\n", p, formatSize(size), d, r.Path, r.MedianS*1e3,
			humanBytes(r.TxBytes), humanBytes(r.RxBytes), ratio(r.TrafficVsDense), r.SpillShare*100, ratio(r.VsHostSparse), yesNo(r.Verified, r.Path))
		return nil
	}
	job := uint32(8000)
	measure := func(p int, size int64, mod func(*benchConfig)) (*arResult, error) {
		job++
		rc := *c
		rc.arConfig.ranks, rc.world, rc.job, rc.token = p, p, job, randomToken()
		rc.count = int(size) / c.dtype.Size()
		mod(&rc)
		return c.measurePath(ctx, rc)
	}
	for _, p := range ranks {
		for _, size := range sizes {
			dense, err := measure(p, size, func(*benchConfig) {})
			if err != nil {
				return fmt.Errorf("P=%d %s dense: %w", p, formatSize(size), err)
			}
			denseBytes := float64(dense.TxBytes + dense.RxBytes)
			if err := emit(sparseRow{Path: "dense", arResult: *dense, TrafficVsDense: 1}, p, size); err != nil {
				return err
			}
			for _, d := range densities {
				rows := map[string]*arResult{}
				for _, path := range []string{"host-sparse", "hash", "array"} {
					res, err := measure(p, size, func(rc *benchConfig) {
						rc.sparse, rc.density = true, d
						switch path {
						case "host-sparse":
							rc.algo = "ring"
						case "hash":
							rc.storage = wire.StorageHash
						case "array":
							rc.storage = wire.StorageArray
						}
					})
					if err != nil {
						return fmt.Errorf("P=%d %s density %v %s: %w", p, formatSize(size), d, path, err)
					}
					rows[path] = res
				}
				for _, path := range []string{"hash", "array", "host-sparse"} {
					r := rows[path]
					row := sparseRow{Path: path, arResult: *r, TrafficVsDense: float64(r.TxBytes+r.RxBytes) / denseBytes,
						VsHostSparse: rows["host-sparse"].MedianS / r.MedianS}
					if r.RxBytes > 0 {
						row.SpillShare = float64(r.SpilledPairs) * float64(wire.PairSize(c.dtype)) / float64(r.RxBytes)
					}
					if err := emit(row, p, size); err != nil {
						return err
					}
				}
			}
		}
	}
	if tw != nil {
		tw.Flush()
		fmt.Fprintln(stdout, "\nvs dense traffic: this row's bytes / the dense in-network allreduce's. spill share: spilled pairs' bytes / bytes received.\nvs host sparse: the host sparse baseline's time / this time (above 1 is faster).")
	}
	return nil
}
