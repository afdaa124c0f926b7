package handlers

import "testing"

// The counters' line names each counter by its own value, and a Count
// sums what every stack added.
func TestBlockStatsString(t *testing.T) {
	var s SparseStats
	s.Packets.Add(0, 10)
	s.Packets.Add(poolShards-1, 2)
	s.Completed.Add(3, 3)
	s.Duplicate.Store(4)
	s.Stale.Store(5)
	s.Invalid.Store(6)
	s.NoBuffer.Store(7)
	s.BadIndex.Store(8)
	s.Spilled.Store(9)
	if got, want := s.String(), "packets=12 completed=3 dup=4 stale=5 invalid=6 nobuf=7 badindex=8 spilled=9"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
