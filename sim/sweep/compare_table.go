package sweep

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/flare-net/flare/internal/jsonl"
	"github.com/flare-net/flare/models"
)

// WriteComparison prints the model against the runs: as JSON lines
// (format "json"), CSV ("csv"), or a table of bandwidth, memory, τ and
// latency side by side with the relative errors, followed by the ranking
// of the designs at each size.
func WriteComparison(w io.Writer, p models.Params, rows []CompareRow, format string) error {
	switch format {
	case "json":
		return jsonl.Write(w, rows)
	case "csv":
		writeComparisonCSV(w, rows)
		return nil
	}
	fmt.Fprintf(w, "# model vs simulation: %s\n", models.Describe(p))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "design\tsize\tGbit/s model\tsim\terr\tmemory model\tsim\terr\ttau model\tsim\terr\tlatency model\tsim\terr\t")
	pct := func(e float64) string { return fmt.Sprintf("%+.1f%%", 100*e) }
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.1f\t%s\t%s\t%s\t%s\t%.0f\t%.0f\t%s\t%.0f\t%.0f\t%s\t\n",
			r.Algo, models.FormatBytes(float64(r.Bytes)), r.Model.Gbps, r.Sim.BandwidthGbps, pct(r.BandwidthErr),
			models.FormatBytes(r.Model.MemoryBytes), models.FormatBytes(r.Sim.MemoryBytes), pct(r.MemoryErr),
			r.Model.Tau, r.Sim.TauCycles, pct(r.TauErr), r.Model.Latency, r.Sim.LatencyCycles, pct(r.LatencyErr))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeRankings(w, rows)
}

// writeComparisonCSV prints the comparison as CSV.
func writeComparisonCSV(w io.Writer, rows []CompareRow) {
	fmt.Fprintln(w, "algo,bytes,hosts,model_gbps,sim_gbps,bandwidth_rel_err,model_memory_bytes,sim_memory_bytes,"+
		"memory_rel_err,model_tau_cycles,sim_tau_cycles,tau_rel_err,model_latency_cycles,sim_latency_cycles,"+
		"latency_rel_err,rank_model,rank_sim,rank_match")
	for _, r := range rows {
		fmt.Fprintf(w, "%s,%d,%d,%g,%g,%g,%g,%g,%g,%g,%g,%g,%g,%g,%g,%d,%d,%t\n", r.Algo, r.Bytes, r.Hosts,
			r.Model.Gbps, r.Sim.BandwidthGbps, r.BandwidthErr, r.Model.MemoryBytes, r.Sim.MemoryBytes, r.MemoryErr,
			r.Model.Tau, r.Sim.TauCycles, r.TauErr, r.Model.Latency, r.Sim.LatencyCycles, r.LatencyErr,
			r.RankModel, r.RankSim, r.RankMatch)
	}
}

// writeRankings prints, size by size, the designs from the highest
// bandwidth down by the model and by the simulation, and whether the two
// agree.
func writeRankings(w io.Writer, rows []CompareRow) error {
	fmt.Fprintf(w, "\n# designs by bandwidth at each size (a pair closer than %.0f%% is a tie)\n", 100*rankTol)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "size\tmodel\tsimulation\tmatch")
	for s := range bySize(rows) {
		match := "yes"
		if !s[0].RankMatch {
			match = "no"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", models.FormatBytes(float64(s[0].Bytes)),
			ranking(s, func(r CompareRow) int { return r.RankModel }), ranking(s, func(r CompareRow) int { return r.RankSim }), match)
	}
	return tw.Flush()
}
