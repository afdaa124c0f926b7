package bench

import "slices"

// mergeRounds makes one row of a leg's rounds (Suite.Rounds), each
// measured in turn with the group's other legs. The row's median is the
// median of the rounds' medians (the upper one of an even count, as
// Result.summarise takes), its p99 the largest of their p99s, and its
// ratios (groupRows) therefore compare legs over the same spells of the
// machine. Iters and retransmits add up, the server's CPU per call is
// over every round's calls; the per-call byte counts, the
// same in every round, are the first round's; a row is verified when
// every round was.
func mergeRounds(rs []*Row) *Row {
	row := *rs[0]
	row.Rounds = len(rs)
	if len(rs) == 1 {
		return &row
	}
	medians := make([]float64, len(rs))
	var user, sys, ranksUser, ranksSys float64 // the server's and the ranks' CPU over every round's calls
	for i, r := range rs {
		medians[i] = r.MedianS
		n := float64(r.Iters)
		user, sys = user+r.ServerUserS*n, sys+r.ServerSysS*n
		ranksUser, ranksSys = ranksUser+r.RanksUserS*n, ranksSys+r.RanksSysS*n
		if i > 0 {
			row.P99S = max(row.P99S, r.P99S)
			row.Iters += r.Iters
			row.Retransmits += r.Retransmits
			row.Verified = row.Verified && r.Verified
		}
	}
	slices.Sort(medians)
	row.MedianS = medians[len(medians)/2]
	row.ServerUserS, row.ServerSysS = user/float64(row.Iters), sys/float64(row.Iters)
	row.RanksUserS, row.RanksSysS = ranksUser/float64(row.Iters), ranksSys/float64(row.Iters)
	row.setBandwidth()
	return &row
}
