package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/flare-net/flare/models"
	"github.com/flare-net/flare/wire"
)

// collectiveFlag names the flag that sets a models.CollectiveParams field.
var collectiveFlag = map[string]string{
	"ElemBytes": "--dtype", "IndexBytes": "--index-bytes", "Density": "--density", "Overlap": "--overlap",
	"LinkGbps": "--link-gbps", "LinkLatencyNs": "--latency-ns", "StepOverheadNs": "--overhead-ns",
	"SwitchPorts": "--ports", "SwitchGbps": "--switch-gbps", "SpillRatio": "--spill", "Topology": "--topology",
}

func runModelCollectives(_ context.Context, args []string, stdout, _ io.Writer) error {
	def := models.Figure15Params()
	fs := newFlags("model collectives", "Time and network traffic of one allreduce with the host-based algorithms (ring, direct,\n"+
		"halving-doubling, two-level hierarchical) against Flare's in-network dense allreduce and, with\n"+
		"--density > 0, SparCML-style host sparse against in-network sparse: an alpha-beta model on one\n"+
		"switch or a two-level fat tree of --ports-port switches. The defaults are the paper's Figure 15\n"+
		"setting: 64 hosts, 100MiB of float32 each, 100 Gbit/s links, 8-port switches, 0.2% density.",
		"  flare model collectives                                   # Figure 15 analogue\n"+
			"  flare model collectives --topology both --overlap 0.5\n"+
			"  flare model collectives --hosts 16 --bytes 1GiB --density 0 --format json\n", stdout)
	hosts := fs.Int("hosts", def.Hosts, "hosts P")
	size := fs.String("bytes", models.FormatBytes(float64(def.Bytes)), "dense vector per host")
	dtype := fs.String("dtype", "float32", "element type (its size is the element size)")
	fs.IntVar(&def.IndexBytes, "index-bytes", def.IndexBytes, "bytes of a sparse index")
	fs.Float64Var(&def.Density, "density", def.Density, "non-zero fraction of each host's vector for the sparse rows (0: no sparse rows)")
	fs.Float64Var(&def.Overlap, "overlap", def.Overlap, "fraction of each host's indices that every host shares (0: independent)")
	fs.Float64Var(&def.LinkGbps, "link-gbps", def.LinkGbps, "every link's rate in Gbit/s, each direction")
	fs.Float64Var(&def.LinkLatencyNs, "latency-ns", def.LinkLatencyNs, "latency per link crossed")
	fs.Float64Var(&def.StepOverheadNs, "overhead-ns", def.StepOverheadNs, "software overhead per message step at a host")
	fs.IntVar(&def.SwitchPorts, "ports", def.SwitchPorts, "ports k of each switch")
	fs.Float64Var(&def.SwitchGbps, "switch-gbps", def.SwitchGbps, "aggregation throughput of one switch (0: never the bottleneck)")
	fs.Float64Var(&def.SpillRatio, "spill", def.SpillRatio, "multiplies the in-network sparse result traffic (hash spill; 0 means 1)")
	topo := fs.String("topology", string(def.Topology), "single, fattree or both")
	format := fs.String("format", "table", "table or json")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkFormat(*format, "table", "json"); err != nil {
		return err
	}
	c := def
	c.Hosts = *hosts
	var err error
	if c.Bytes, err = sizeFlag("bytes", *size); err != nil {
		return err
	}
	dt, err := wire.ParseDType(*dtype)
	if err != nil {
		return flagError("--dtype", err)
	}
	c.ElemBytes = dt.Size()
	switch *topo {
	case "both":
		c.Topology = ""
	default:
		c.Topology = models.Topology(*topo)
	}
	if err := c.Validate(); err != nil {
		return paramError(err)
	}
	rows := models.Collectives(c)
	if *format == "json" {
		return writeJSONLines(stdout, rows)
	}
	fmt.Fprintf(stdout, "# %d hosts, %s of %s per host, %g Gbit/s links, %g ns per link, %d-port switches, density %g, overlap %g\n",
		c.Hosts, models.FormatBytes(float64(c.Bytes)), dt, c.LinkGbps, c.LinkLatencyNs, c.SwitchPorts, c.Density, c.Overlap)
	if err := models.WriteCollectiveTable(stdout, rows); err != nil {
		return err
	}
	return writeCollectiveRatios(stdout, rows)
}

// writeCollectiveRatios prints, per topology, how in-network aggregation
// compares with the host algorithm it replaces: the claims of the paper's
// §7.1 (dense: > 2x faster, 2x less traffic; sparse: up to 20x less).
func writeCollectiveRatios(w io.Writer, rows []models.CollectiveRow) error {
	get := func(t models.Topology, alg string) (models.CollectiveRow, bool) {
		for _, r := range rows {
			if r.Topology == t && r.Algorithm == alg {
				return r, true
			}
		}
		return models.CollectiveRow{}, false
	}
	var seen []models.Topology
	for _, r := range rows {
		if len(seen) == 0 || seen[len(seen)-1] != r.Topology {
			seen = append(seen, r.Topology)
		}
	}
	for _, t := range seen {
		for _, cmp := range [][2]string{{models.AlgInNetworkDense, models.AlgRing},
			{models.AlgInNetworkSparse, models.AlgHostSparse}, {models.AlgInNetworkSparse, models.AlgInNetworkDense}} {
			a, ok1 := get(t, cmp[0])
			o, ok2 := get(t, cmp[1])
			if !ok1 || !ok2 || a.TimeS <= 0 || a.WireBytes <= 0 {
				continue
			}
			if _, err := fmt.Fprintf(w, "%s: %s vs %s: %.2fx faster, %.2fx less traffic\n", t, cmp[0], cmp[1],
				o.TimeS/a.TimeS, o.WireBytes/a.WireBytes); err != nil {
				return err
			}
		}
	}
	return nil
}

func runModelSparse(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlags("model sparse", "The sparse model (the paper's section 7) for hash and array storage against density: cycles\n"+
		"per pair and per packet, flush cost, tau and bandwidth, memory per block and for one block per\n"+
		"core, whether that fits the switch's L1, and the hash table's spill traffic.",
		"  flare model sparse\n"+
			"  flare model sparse --storage array --density 0.01,0.05 --hosts 8 --preset pspin\n", stdout)
	pf := addParamFlags(fs, false)
	storages := fs.StringSlice("storage", []string{models.StorageHash, models.StorageArray}, "hash, array, or both")
	densities := fs.String("density", "", "densities, comma-separated, in (0, 1] (default: 0.1% to 20%)")
	format := fs.String("format", "table", "table or json")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkFormat(*format, "table", "json"); err != nil {
		return err
	}
	for _, s := range *storages {
		if s != models.StorageHash && s != models.StorageArray {
			return flagError("--storage", fmt.Errorf("%q: want hash or array", s))
		}
	}
	ds := models.SparseDensities()
	if *densities != "" {
		ds = nil
		for f := range strings.SplitSeq(*densities, ",") {
			d, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil || !(d > 0 && d <= 1) {
				return flagError("--density", fmt.Errorf("%q: want a fraction in (0, 1], such as 0.01", f))
			}
			ds = append(ds, d)
		}
	}
	p, err := pf.params()
	if err != nil {
		return err
	}
	rows := models.SparseSweep(p, *storages, ds)
	for _, r := range rows {
		if r.Err != "" {
			return fmt.Errorf("model sparse: %s", r.Err)
		}
	}
	if *format == "json" {
		return writeJSONLines(stdout, rows)
	}
	fmt.Fprintf(stdout, "# %s; %d pairs per host per block\n", models.Describe(p), p.SparsePairsPerBlock)
	return models.WriteSparseTable(stdout, rows)
}
