package hpu

import "testing"

// Total sums every counter of every core; τ is cycles (and wall time) over
// every handler run, the rejected ones too; the queue's mean is over
// every arrival of every cluster.
func TestStatsTotal(t *testing.T) {
	a := CoreStats{Packets: 10, Rejected: 2, BusyNs: 1200, Cycles: 6000, LockWaitNs: 30, LockWaitCycles: 64, Contended: 2}
	b := CoreStats{Packets: 5, Rejected: 3, BusyNs: 600, Cycles: 3000, LockWaitNs: 70, LockWaitCycles: 32, Contended: 1}
	a.Hist[0], a.Hist[HistBuckets-1], b.Hist[0] = 4, 1, 2
	s := Stats{Cores: []CoreStats{a, b}, Clusters: []ClusterStats{{arrivals: 10, occupancySum: 25}, {arrivals: 30, occupancySum: 15}}}
	got := s.Total()
	want := CoreStats{Cluster: -1, Core: -1, Packets: 15, Rejected: 5, BusyNs: 1800, Cycles: 9000, LockWaitNs: 100, LockWaitCycles: 96, Contended: 3}
	want.Hist[0], want.Hist[HistBuckets-1] = 6, 1
	if got != want {
		t.Errorf("Total = %+v\nwant    %+v", got, want)
	}
	if tau := s.TauCycles(); tau != 450 {
		t.Errorf("τ = %v cycles, want 9000 / 20 = 450", tau)
	}
	if tau := s.TauNs(); tau != 90 {
		t.Errorf("τ = %v ns, want 1800 / 20 = 90", tau)
	}
	if q := s.QueueMean(); q != 1 {
		t.Errorf("queue mean %v, want 40 / 40 = 1", q)
	}
	if (Stats{}).TauCycles() != 0 || (Stats{}).TauNs() != 0 || (Stats{}).QueueMean() != 0 {
		t.Error("an idle unit's τ or queue mean is not 0")
	}
}
