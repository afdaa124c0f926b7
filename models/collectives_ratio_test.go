package models

import (
	"strings"
	"testing"
)

// The ratios set each in-network row against the host algorithm it
// replaces, per topology, and leave out a pair a topology lacks.
func TestCollectiveRatios(t *testing.T) {
	rows := []CollectiveRow{
		{Algorithm: AlgRing, Topology: TopoSingle, TimeS: 4, WireBytes: 6},
		{Algorithm: AlgInNetworkDense, Topology: TopoSingle, TimeS: 2, WireBytes: 3},
		{Algorithm: AlgHostSparse, Topology: TopoSingle, TimeS: 1, WireBytes: 1},
		{Algorithm: AlgInNetworkSparse, Topology: TopoSingle, TimeS: 0.5, WireBytes: 0.1},
		{Algorithm: AlgRing, Topology: TopoFatTree, TimeS: 9, WireBytes: 9},
		{Algorithm: AlgInNetworkDense, Topology: TopoFatTree, TimeS: 3, WireBytes: 1},
	}
	got := CollectiveRatios(rows)
	want := []CollectiveRatio{
		{TopoSingle, AlgInNetworkDense, AlgRing, 2, 2},
		{TopoSingle, AlgInNetworkSparse, AlgHostSparse, 2, 10},
		{TopoSingle, AlgInNetworkSparse, AlgInNetworkDense, 4, 30},
		{TopoFatTree, AlgInNetworkDense, AlgRing, 3, 9},
	}
	if len(got) != len(want) {
		t.Fatalf("%d ratios, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Topology != w.Topology || g.Algorithm != w.Algorithm || g.Baseline != w.Baseline ||
			beyond(g.Faster-w.Faster, 1e-9) || beyond(g.LessWire-w.LessWire, 1e-9) {
			t.Errorf("ratio %d: %+v, want %+v", i, g, w)
		}
	}
	var out strings.Builder
	if err := WriteCollectiveRatios(&out, got[:1]); err != nil {
		t.Fatal(err)
	}
	if want := "single: in-network-dense vs ring: 2.00x faster, 2.00x less traffic\n"; out.String() != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}
	// An in-network row without its baseline, of zero time or of no
	// traffic has no ratio.
	if r := CollectiveRatios(rows[1:2]); len(r) != 0 {
		t.Errorf("an in-network row without its baseline gave ratios %+v", r)
	}
	rows[1].WireBytes = 0
	if r := CollectiveRatios(rows[:2]); len(r) != 0 {
		t.Errorf("a row of no traffic gave ratios %+v", r)
	}
	rows[1].WireBytes, rows[1].TimeS = 3, 0
	if r := CollectiveRatios(rows[:2]); len(r) != 0 {
		t.Errorf("a zero-time row gave ratios %+v", r)
	}
}

// On the paper's Figure 15 setting (sparse rows included) each topology
// has all three comparisons, each set against the rows it names.
func TestCollectiveRatiosFigure15(t *testing.T) {
	c := Figure15Params()
	c.Topology = "" // both
	rows := Collectives(c)
	ratios := CollectiveRatios(rows)
	if len(ratios) != 6 {
		t.Fatalf("%d ratios, want 3 on each of 2 topologies: %+v", len(ratios), ratios)
	}
	for _, r := range ratios {
		var a, b CollectiveRow
		for _, row := range rows {
			if row.Topology == r.Topology && row.Algorithm == r.Algorithm {
				a = row
			}
			if row.Topology == r.Topology && row.Algorithm == r.Baseline {
				b = row
			}
		}
		if r.Faster != b.TimeS/a.TimeS || r.LessWire != b.WireBytes/a.WireBytes {
			t.Errorf("%+v: want %g faster, %g less traffic", r, b.TimeS/a.TimeS, b.WireBytes/a.WireBytes)
		}
	}
	if want := "64 hosts, 100MiB of float32 per host, 100 Gbit/s links, 500 ns per link, 8-port switches, density 0.002, overlap 0"; DescribeCollectives(c, "float32") != want {
		t.Errorf("description %q, want %q", DescribeCollectives(c, "float32"), want)
	}
}
