package main

import (
	"context"
	"fmt"
	"io"

	"github.com/flare-net/flare/internal/jsonl"
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
		return jsonl.Write(stdout, rows)
	}
	fmt.Fprintf(stdout, "# %s\n", models.DescribeCollectives(c, dt.String()))
	if err := models.WriteCollectiveTable(stdout, rows); err != nil {
		return err
	}
	return models.WriteCollectiveRatios(stdout, models.CollectiveRatios(rows))
}
