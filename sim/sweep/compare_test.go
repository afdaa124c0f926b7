package sweep

import (
	"context"
	"math"
	"testing"

	"github.com/flare-net/flare/internal/units"
	"github.com/flare-net/flare/models"
	"github.com/flare-net/flare/sim"
)

// flareParams is the switch `flare sim --compare --preset flare` models:
// the DMA copies charged (--copies) and the tree's M from the staggered
// order (--tree-m order), with S cores per block.
func flareParams(t *testing.T, subset int) models.Params {
	t.Helper()
	p, err := models.Preset(models.PresetFlare)
	if err != nil {
		t.Fatal(err)
	}
	p.CountCopies, p.TreeArrivalOrder = true, true
	if subset > 0 {
		p.SubsetS = subset
	}
	p = p.Resolve()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return p
}

// compared runs the designs named by algos at one size on the flare
// switch and returns the comparison by design.
func compared(t *testing.T, subset int, algos string, size int64) map[string]CompareRow {
	t.Helper()
	p := flareParams(t, subset)
	ds, err := models.ParseDesigns(algos)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := Run(context.Background(), p, ds, []int64{size}, Options{Seed: 1, Arrivals: sim.ArrivalsSwitch})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := Compare(p, runs)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]CompareRow{}
	for _, r := range rows {
		out[r.Algo] = r
	}
	return out
}

const allDesigns = "single,multi2,multi4,tree"

// The model against the simulation on the flare switch (docs/MODEL.md,
// "Model vs simulation") on a reduced sweep: the contention-free regimes
// (S = 1 from 512KiB for all four designs; the single buffer from 512KiB;
// the tree at every size, 16KiB being 32 pipelined rounds) agree within
// 10% in bandwidth and memory, and the designs rank alike by bandwidth at
// 128KiB and 512KiB, where contention sets them apart.
func TestSimCompareFlare(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("64 hosts x 0.5-2MiB in virtual time: seconds, minutes under the race detector")
	}
	within := func(what string, r CompareRow, err, tol float64) {
		t.Helper()
		if !(math.Abs(err) <= tol) { // a NaN error is no agreement
			t.Errorf("%s at %s: %s off by %+.1f%%, want within %.0f%%", r.Algo, units.FormatSize(r.Bytes), what, 100*err, 100*tol)
		}
	}
	agree := func(r CompareRow) {
		t.Helper()
		within("bandwidth", r, r.BandwidthErr, 0.10)
		within("memory", r, r.MemoryErr, 0.10)
		if r.Algo == "tree" || r.Model.Contenders == 1 {
			within("tau", r, r.TauErr, 0.05)
		}
	}
	// S = 1 at 512KiB and 1MiB: τ is the model's exactly, and so is the
	// latency within 10% (no queue waits that the model leaves out).
	for _, size := range []int64{512 << 10, 1 << 20} {
		rows := compared(t, 1, allDesigns, size)
		if len(rows) != 4 {
			t.Fatalf("%d designs, want 4", len(rows))
		}
		for _, r := range rows {
			within("tau", r, r.TauErr, 1e-9)
			within("latency", r, r.LatencyErr, 0.10)
			agree(r)
			if !r.RankMatch {
				t.Errorf("S=1 at %s: the ranking differs", units.FormatSize(size))
			}
		}
	}
	// S = 8 at 128KiB and 512KiB, all four designs: the tree and (at the
	// knee, one block per core) the single buffer agree, and the ranking
	// matches where the single and multi-buffer designs contend.
	for _, size := range []int64{128 << 10, 512 << 10} {
		rows := compared(t, 0, allDesigns, size)
		agree(rows["tree"])
		if size == 512<<10 {
			agree(rows["single"])
		}
		for _, r := range rows {
			if !r.RankMatch {
				t.Errorf("S=8 at %s: the ranking differs: %s is %d in the model, %d in the simulation", units.FormatSize(size), r.Algo, r.RankModel, r.RankSim)
			}
		}
	}
	// A small message: 32 rounds of 16KiB, pipelined, keep every core busy.
	r := compared(t, 0, "tree", 16<<10)["tree"]
	if r.Sim.Rounds != 32 {
		t.Errorf("16KiB: %d rounds, want 32 (one block per core)", r.Sim.Rounds)
	}
	agree(r)
	// 2MiB: the single buffer's blocks arrive 4L apart; the tree's window
	// is what L1 holds, and the model staggers over the same group.
	for _, r := range compared(t, 0, "single,tree", 2<<20) {
		agree(r)
		if !(r.Sim.MakespanGbps > 0 && r.Sim.MakespanGbps <= r.Sim.BandwidthGbps*1.001) {
			t.Errorf("%s at %s: makespan %.1f Gbit/s against %.1f in the steady state", r.Algo, units.FormatSize(r.Bytes), r.Sim.MakespanGbps, r.Sim.BandwidthGbps)
		}
	}
}

// Rankings: a pair ordered one way by the model and the other by the
// simulation, each by more than rankTol, breaks the match; a pair closer
// than rankTol on either side is a tie that any order matches.
func TestRankings(t *testing.T) {
	row := func(algo string, model, sim float64) CompareRow {
		r := CompareRow{Algo: algo, Bytes: 4096}
		r.Model.Gbps, r.Sim.BandwidthGbps = model, sim
		return r
	}
	for _, c := range []struct {
		name  string
		rows  []CompareRow
		match bool
		model string
	}{
		{"same order", []CompareRow{row("single", 100, 90), row("tree", 50, 40)}, true, "single > tree"},
		{"swapped", []CompareRow{row("single", 100, 40), row("tree", 50, 90)}, false, "single > tree"},
		{"model tie", []CompareRow{row("single", 100, 40), row("tree", 101, 90)}, true, "tree > single"},
		{"sim tie", []CompareRow{row("single", 100, 90), row("tree", 50, 91)}, true, "single > tree"},
		{"model tie, the first ahead", []CompareRow{row("single", 101, 40), row("tree", 100, 90)}, true, "single > tree"},
		{"sim tie, the first ahead", []CompareRow{row("single", 50, 91), row("tree", 100, 90)}, true, "tree > single"},
	} {
		rankSize(c.rows)
		if got := c.rows[0].RankMatch; got != c.match {
			t.Errorf("%s: match %t, want %t", c.name, got, c.match)
		}
		if got := ranking(c.rows, func(r CompareRow) int { return r.RankModel }); got != c.model {
			t.Errorf("%s: model ranking %q, want %q", c.name, got, c.model)
		}
	}
}

// Compare groups runs by size: each size is ranked on its own.
func TestCompareRanksEachSize(t *testing.T) {
	p := flareParams(t, 0)
	runs := []sim.Result{{Algo: "single", Bytes: 4096, Blocks: 4, StaggerBlocks: 4, BandwidthGbps: 1},
		{Algo: "tree", Bytes: 4096, Blocks: 4, StaggerBlocks: 4, BandwidthGbps: 2},
		{Algo: "single", Bytes: 8192, Blocks: 8, StaggerBlocks: 8, BandwidthGbps: 3}}
	rows, err := Compare(p, runs)
	if err != nil {
		t.Fatal(err)
	}
	if rows[0].RankSim != 2 || rows[1].RankSim != 1 || rows[2].RankSim != 1 {
		t.Errorf("simulated ranks %d %d %d, want 2 1 1", rows[0].RankSim, rows[1].RankSim, rows[2].RankSim)
	}
	if _, err := Compare(p, []sim.Result{{Algo: "nosuch", Bytes: 4096}}); err == nil {
		t.Error("a run of an unknown design compared without an error")
	}
}

// A relative error is the simulation's distance from the model, over the
// model; a model of 0 is no agreement.
func TestRelErr(t *testing.T) {
	for _, c := range []struct{ got, want, err float64 }{
		{110, 100, 0.10}, {90, 100, -0.10}, {100, 100, 0}, {200, 100, 1}, {1, 0, math.Inf(1)},
	} {
		if e := relErr(c.got, c.want); math.Abs(e-c.err) > 1e-12 && !(math.IsInf(e, 1) && math.IsInf(c.err, 1)) {
			t.Errorf("relErr(%v, %v) = %v, want %v", c.got, c.want, e, c.err)
		}
	}
}
