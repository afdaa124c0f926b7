package sweep

import (
	"fmt"
	"iter"
	"math"

	"github.com/flare-net/flare/models"
	"github.com/flare-net/flare/sim"
)

// CompareRow is one design at one size: the analytic model next to the
// simulated run, joined on algo, bytes and hosts.
type CompareRow struct {
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

// Compare evaluates the model for each simulated run, runs given size by
// size as Run returns them. The model sees the run's stagger group (the
// simulator shrinks its window when a window of blocks does not fit L1),
// so both stagger over the same blocks.
func Compare(p models.Params, runs []sim.Result) ([]CompareRow, error) {
	rows := make([]CompareRow, len(runs))
	for i, r := range runs {
		q := p
		q.Bytes = int64(r.Bytes)
		q.Window = 0
		if r.StaggerBlocks < r.Blocks {
			q.Window = r.StaggerBlocks
		}
		d, err := models.ParseDesign(r.Algo)
		if err != nil {
			return nil, fmt.Errorf("sweep: run %d: %w", i, err)
		}
		m := models.Evaluate(q, d)
		rows[i] = CompareRow{
			Algo: r.Algo, Bytes: q.Bytes, Hosts: r.Hosts, Model: m, Sim: r,
			BandwidthErr: relErr(r.BandwidthGbps, m.Gbps), MemoryErr: relErr(r.MemoryBytes, m.MemoryBytes),
			TauErr: relErr(r.TauCycles, m.Tau), LatencyErr: relErr(r.LatencyCycles, m.Latency),
		}
	}
	for s := range bySize(rows) {
		rankSize(s)
	}
	return rows, nil
}

func relErr(got, want float64) float64 {
	if want == 0 {
		return math.Inf(1)
	}
	return (got - want) / want
}

// bySize yields the runs of rows of one size each, in order.
func bySize(rows []CompareRow) iter.Seq[[]CompareRow] {
	return func(yield func([]CompareRow) bool) {
		for lo := 0; lo < len(rows); {
			hi := lo
			for hi < len(rows) && rows[hi].Bytes == rows[lo].Bytes {
				hi++
			}
			if !yield(rows[lo:hi]) {
				return
			}
			lo = hi
		}
	}
}
