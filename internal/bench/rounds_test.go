package bench

import (
	"math"
	"testing"
)

// A leg's rounds merge into one row: the median of the rounds' medians
// (the upper of an even count), the largest p99, the calls and
// retransmits of all of them, the server's and the ranks' CPU per call
// over all their calls, verified only if every round was; one round is the row as
// measured.
func TestMergeRounds(t *testing.T) {
	round := func(median, p99 float64, retx int64, verified bool) *Row {
		r := &Row{Path: PathSwitch, Result: Result{Ranks: 8, Bytes: 1 << 20, Iters: 5, MedianS: median, P99S: p99,
			Retransmits: retx, Verified: verified, TxBytes: 1 << 20, RanksUserS: median * 3, RanksSysS: median},
			ServerUserS: median / 2, ServerSysS: median / 4}
		r.setBandwidth()
		return r
	}
	one := mergeRounds([]*Row{round(0.030, 0.040, 7, true)})
	if one.MedianS != 0.030 || one.P99S != 0.040 || one.Iters != 5 || one.Rounds != 1 || one.Retransmits != 7 {
		t.Errorf("one round: %+v, want it as measured with rounds 1", one)
	}
	for _, tc := range []struct {
		rounds       []*Row
		median, p99  float64
		retx         int64
		verified     bool
		iters, count int
	}{
		{[]*Row{round(0.030, 0.050, 1, true), round(0.020, 0.025, 2, true), round(0.045, 0.046, 3, true)}, 0.030, 0.050, 6, true, 15, 3},
		{[]*Row{round(0.030, 0.031, 0, true), round(0.020, 0.060, 0, false)}, 0.030, 0.060, 0, false, 10, 2},
		{[]*Row{round(0.030, 0.031, 0, false), round(0.020, 0.060, 0, true)}, 0.030, 0.060, 0, false, 10, 2}, // the unverified round first
	} {
		got := mergeRounds(tc.rounds)
		if got.MedianS != tc.median || got.P99S != tc.p99 || got.Retransmits != tc.retx || got.Verified != tc.verified ||
			got.Iters != tc.iters || got.Rounds != tc.count || got.TxBytes != 1<<20 {
			t.Errorf("merged %+v, want median %v, p99 %v, %d retransmits, verified %v, %d iters in %d rounds, 1 MiB sent per call",
				got, tc.median, tc.p99, tc.retx, tc.verified, tc.iters, tc.count)
		}
		var user float64
		for _, r := range tc.rounds {
			user += r.ServerUserS / float64(len(tc.rounds)) // every round has 5 calls
		}
		if math.Abs(got.ServerUserS-user) > 1e-12 || math.Abs(got.ServerSysS-user/2) > 1e-12 {
			t.Errorf("server CPU %v+%v s a call, want %v+%v (over every round's calls)", got.ServerUserS, got.ServerSysS, user, user/2)
		}
		if math.Abs(got.RanksUserS-6*user) > 1e-12 || math.Abs(got.RanksSysS-2*user) > 1e-12 {
			t.Errorf("ranks' CPU %v+%v s a call, want %v+%v (over every round's calls)", got.RanksUserS, got.RanksSysS, 6*user, 2*user)
		}
		if want := float64(1<<20) / tc.median / 1e9; math.Abs(got.AlgbwGBps-want) > 1e-12 {
			t.Errorf("algbw %v, want %v (of the merged median)", got.AlgbwGBps, want)
		}
	}
}
