package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/flare-net/flare/models"
	"github.com/flare-net/flare/sim"
)

// compareRow is one design at one size: the analytic model next to the
// simulated run, joined on algo, bytes and hosts.
type compareRow struct {
	Algo         string     `json:"algo"`
	Bytes        int64      `json:"bytes"`
	Hosts        int        `json:"hosts"`
	Model        models.Row `json:"model"`
	Sim          sim.Result `json:"sim"`
	BandwidthErr float64    `json:"bandwidth_rel_err"` // (sim − model) / model
	MemoryErr    float64    `json:"memory_rel_err"`
	TauErr       float64    `json:"tau_rel_err"`
	LatencyErr   float64    `json:"latency_rel_err"`
	RankModel    int        `json:"rank_model"` // 1: the highest bandwidth at this size
	RankSim      int        `json:"rank_sim"`
	RankMatch    bool       `json:"rank_match"` // the size's ranking agrees (rankingsAgree)
}

// rankTol is how far apart two bandwidths must be to count as ordered:
// closer ones are a tie, which any order matches. Where designs come that
// close (large sizes) the simulated bandwidth moves by less than 0.3% from
// one seed to another.
const rankTol = 0.02

// compareRows evaluates the model for each simulated run. The model sees
// the run's stagger group (the simulator shrinks its window when a window
// of blocks does not fit L1), so both stagger over the same blocks.
func compareRows(p models.Params, runs []sim.Result) []compareRow {
	rows := make([]compareRow, len(runs))
	for i, r := range runs {
		q := p
		q.Bytes = int64(r.Bytes)
		q.Window = 0
		if r.StaggerBlocks < r.Blocks {
			q.Window = r.StaggerBlocks
		}
		d, err := models.ParseDesign(r.Algo)
		if err != nil {
			panic(err) // the simulator names designs as the model parses them
		}
		m := models.Evaluate(q, d)
		rows[i] = compareRow{
			Algo: r.Algo, Bytes: q.Bytes, Hosts: r.Hosts, Model: m, Sim: r,
			BandwidthErr: relErr(r.BandwidthGbps, m.Gbps), MemoryErr: relErr(r.MemoryBytes, m.MemoryBytes),
			TauErr: relErr(r.TauCycles, m.Tau), LatencyErr: relErr(r.LatencyCycles, m.Latency),
		}
	}
	for lo := 0; lo < len(rows); {
		hi := lo
		for hi < len(rows) && rows[hi].Bytes == rows[lo].Bytes {
			hi++
		}
		rankSize(rows[lo:hi])
		lo = hi
	}
	return rows
}

func relErr(got, want float64) float64 {
	if want == 0 {
		return math.Inf(1)
	}
	return (got - want) / want
}

// rankSize ranks the designs of one size by model and by simulated
// bandwidth and records whether the two rankings agree.
func rankSize(rows []compareRow) {
	model := func(r compareRow) float64 { return r.Model.Gbps }
	sim := func(r compareRow) float64 { return r.Sim.BandwidthGbps }
	rm, rs := ranks(rows, model), ranks(rows, sim)
	match := rankingsAgree(rows, model, sim)
	for i := range rows {
		rows[i].RankModel, rows[i].RankSim, rows[i].RankMatch = rm[i], rs[i], match
	}
}

// ranks numbers rows by decreasing bandwidth, 1 first.
func ranks(rows []compareRow, bw func(compareRow) float64) []int {
	idx := make([]int, len(rows))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return -cmpFloat(bw(rows[a]), bw(rows[b])) })
	out := make([]int, len(rows))
	for r, i := range idx {
		out[i] = r + 1
	}
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// rankingsAgree reports whether no pair of designs is ordered one way by
// the model and the other by the simulation, each by more than rankTol.
func rankingsAgree(rows []compareRow, model, sim func(compareRow) float64) bool {
	apart := func(a, b float64) int {
		switch {
		case a > b*(1+rankTol):
			return 1
		case b > a*(1+rankTol):
			return -1
		}
		return 0
	}
	for i := range rows {
		for j := i + 1; j < len(rows); j++ {
			if apart(model(rows[i]), model(rows[j]))*apart(sim(rows[i]), sim(rows[j])) < 0 {
				return false
			}
		}
	}
	return true
}

// ranking prints one size's designs from the highest bandwidth down.
func ranking(rows []compareRow, rank func(compareRow) int) string {
	names := make([]string, len(rows))
	for _, r := range rows {
		names[rank(r)-1] = r.Algo
	}
	return strings.Join(names, " > ")
}

// writeComparison prints the model against the runs: as JSON lines, CSV,
// or a table of bandwidth, memory, τ and latency side by side with the
// relative errors, followed by the ranking of the designs at each size.
func writeComparison(w io.Writer, p models.Params, rows []compareRow, format string) error {
	switch format {
	case "json":
		return writeJSONLines(w, rows)
	case "csv":
		fmt.Fprintln(w, "algo,bytes,hosts,model_gbps,sim_gbps,bandwidth_rel_err,model_memory_bytes,sim_memory_bytes,"+
			"memory_rel_err,model_tau_cycles,sim_tau_cycles,tau_rel_err,model_latency_cycles,sim_latency_cycles,"+
			"latency_rel_err,rank_model,rank_sim,rank_match")
		for _, r := range rows {
			fmt.Fprintf(w, "%s,%d,%d,%g,%g,%g,%g,%g,%g,%g,%g,%g,%g,%g,%g,%d,%d,%t\n", r.Algo, r.Bytes, r.Hosts,
				r.Model.Gbps, r.Sim.BandwidthGbps, r.BandwidthErr, r.Model.MemoryBytes, r.Sim.MemoryBytes, r.MemoryErr,
				r.Model.Tau, r.Sim.TauCycles, r.TauErr, r.Model.Latency, r.Sim.LatencyCycles, r.LatencyErr,
				r.RankModel, r.RankSim, r.RankMatch)
		}
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
	fmt.Fprintf(w, "\n# designs by bandwidth at each size (a pair closer than %.0f%% is a tie)\n", 100*rankTol)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "size\tmodel\tsimulation\tmatch")
	for lo := 0; lo < len(rows); {
		hi := lo
		for hi < len(rows) && rows[hi].Bytes == rows[lo].Bytes {
			hi++
		}
		s := rows[lo:hi]
		match := "yes"
		if !s[0].RankMatch {
			match = "no"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", models.FormatBytes(float64(s[0].Bytes)),
			ranking(s, func(r compareRow) int { return r.RankModel }), ranking(s, func(r compareRow) int { return r.RankSim }), match)
		lo = hi
	}
	return tw.Flush()
}
