package sweep

import (
	"slices"
	"strings"
)

// rankTol is how far apart two bandwidths must be to count as ordered:
// closer ones are a tie, which any order matches. Where designs come that
// close (large sizes) the simulated bandwidth moves by less than 0.3% from
// one seed to another.
const rankTol = 0.02

// rankSize ranks the designs of one size by model and by simulated
// bandwidth and records whether the two rankings agree.
func rankSize(rows []CompareRow) {
	model := func(r CompareRow) float64 { return r.Model.Gbps }
	sim := func(r CompareRow) float64 { return r.Sim.BandwidthGbps }
	rm, rs := ranks(rows, model), ranks(rows, sim)
	match := rankingsAgree(rows, model, sim)
	for i := range rows {
		rows[i].RankModel, rows[i].RankSim, rows[i].RankMatch = rm[i], rs[i], match
	}
}

// ranks numbers rows by decreasing bandwidth, 1 first.
func ranks(rows []CompareRow, bw func(CompareRow) float64) []int {
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
func rankingsAgree(rows []CompareRow, model, sim func(CompareRow) float64) bool {
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
func ranking(rows []CompareRow, rank func(CompareRow) int) string {
	names := make([]string, len(rows))
	for _, r := range rows {
		names[rank(r)-1] = r.Algo
	}
	return strings.Join(names, " > ")
}
