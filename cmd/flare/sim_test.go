package main

import (
	"encoding/csv"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/flare-net/flare/internal/units"
)

// sim and model sweep rows join on algo, bytes and hosts, and carry the
// fields both report.
func TestSimJoinsModel(t *testing.T) {
	args := []string{"--preset", "pspin", "--from", "4KiB", "--to", "16KiB", "--format", "json"}
	model := jsonLines(t, runFlare(t, append([]string{"model", "sweep"}, args...)...))
	sim := jsonLines(t, runFlare(t, append([]string{"sim", "--seed", "3"}, args...)...))
	if len(sim) != 3*4 || len(model) != len(sim) {
		t.Fatalf("%d sim rows, %d model rows; want 12 each", len(sim), len(model))
	}
	type key struct {
		algo         string
		bytes, hosts float64
	}
	byKey := map[key]map[string]any{}
	for _, m := range model {
		byKey[key{m["algo"].(string), m["bytes"].(float64), m["hosts"].(float64)}] = m
	}
	for i, s := range sim {
		m, ok := byKey[key{s["algo"].(string), s["bytes"].(float64), s["hosts"].(float64)}]
		if !ok {
			t.Fatalf("sim row %d (%v %v %v) has no model row", i, s["algo"], s["bytes"], s["hosts"])
		}
		if m["algo"] != model[i]["algo"] || s["bytes"] != model[i]["bytes"] {
			t.Errorf("row %d: sim %v %v, model %v %v: not in the same order", i, s["algo"], s["bytes"], model[i]["algo"], model[i]["bytes"])
		}
		for _, k := range []string{"tau_cycles", "bandwidth_gbps", "memory_bytes", "latency_cycles", "queue_occupancy"} {
			sv, ok1 := s[k].(float64)
			mv, ok2 := m[k].(float64)
			if !ok1 || !ok2 || !(sv > 0) || !(mv > 0) {
				t.Errorf("%s at %v: %s = %v (sim), %v (model)", s["algo"], s["bytes"], k, s[k], m[k])
			}
		}
	}
}

// A seed gives one result; table and csv print every run.
func TestSimFormatsAndSeed(t *testing.T) {
	args := []string{"sim", "--preset", "pspin", "--algos", "single,tree", "--from", "8KiB", "--to", "16KiB"}
	a := runFlare(t, append(args, "--format", "json", "--seed", "7")...)
	if b := runFlare(t, append(args, "--format", "json", "--seed", "7")...); a != b {
		t.Errorf("one seed, two results:\n%s\n%s", a, b)
	}
	if c := runFlare(t, append(args, "--format", "json", "--seed", "8")...); a == c {
		t.Error("two seeds, one result")
	}
	recs, err := csv.NewReader(strings.NewReader(runFlare(t, append(args, "--format", "csv")...))).ReadAll()
	if err != nil || len(recs) != 5 || recs[0][0] != "algo" || recs[0][9] != "tau_cycles" || recs[4][0] != "tree" {
		t.Errorf("csv: %v: %v", err, recs)
	}
	table := runFlare(t, args...)
	if !strings.Contains(table, "# simulated: K=32 cores") || strings.Count(table, "\n") != 6 {
		t.Errorf("table:\n%s", table)
	}
	cmp := runFlare(t, append(args, "--compare")...)
	if !strings.Contains(cmp, "Gbit/s model") || !strings.Contains(cmp, "16KiB   ") {
		t.Errorf("compare table:\n%s", cmp)
	}
}

// compared decodes `flare sim --compare --format json`.
func compared(t *testing.T, args ...string) map[string]compareRow {
	t.Helper()
	out := runFlare(t, append([]string{"sim", "--compare", "--format", "json", "--preset", "flare"}, args...)...)
	rows := map[string]compareRow{}
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var r compareRow
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		rows[r.Algo] = r
	}
	return rows
}

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
	within := func(what string, r compareRow, err, tol float64) {
		t.Helper()
		if math.Abs(err) > tol {
			t.Errorf("%s at %s: %s off by %+.1f%%, want within %.0f%%", r.Algo, units.FormatSize(r.Bytes), what, 100*err, 100*tol)
		}
	}
	agree := func(r compareRow) {
		t.Helper()
		within("bandwidth", r, r.BandwidthErr, 0.10)
		within("memory", r, r.MemoryErr, 0.10)
		if r.Algo == "tree" || r.Model.Contenders == 1 {
			within("tau", r, r.TauErr, 0.05)
		}
	}
	// S = 1 at 512KiB and 1MiB: τ is the model's exactly.
	for _, size := range []string{"512KiB", "1MiB"} {
		rows := compared(t, "--subset", "1", "--from", size, "--to", size)
		if len(rows) != 4 {
			t.Fatalf("%d designs, want 4", len(rows))
		}
		for _, r := range rows {
			within("tau", r, r.TauErr, 1e-9)
			agree(r)
			if !r.RankMatch {
				t.Errorf("S=1 at %s: the ranking differs", size)
			}
		}
	}
	// S = 8 at 128KiB and 512KiB, all four designs: the tree and (at the
	// knee, one block per core) the single buffer agree, and the ranking
	// matches where the single and multi-buffer designs contend.
	for _, size := range []string{"128KiB", "512KiB"} {
		rows := compared(t, "--from", size, "--to", size)
		agree(rows["tree"])
		if size == "512KiB" {
			agree(rows["single"])
		}
		for _, r := range rows {
			if !r.RankMatch {
				t.Errorf("S=8 at %s: the ranking differs: %s is %d in the model, %d in the simulation", size, r.Algo, r.RankModel, r.RankSim)
			}
		}
	}
	// A small message: 32 rounds of 16KiB, pipelined, keep every core busy.
	r := compared(t, "--algos", "tree", "--from", "16KiB", "--to", "16KiB")["tree"]
	if r.Sim.Rounds != 32 {
		t.Errorf("16KiB: %d rounds, want 32 (one block per core)", r.Sim.Rounds)
	}
	agree(r)
	// 2MiB: the single buffer's blocks arrive 4L apart; the tree's window
	// is what L1 holds, and the model staggers over the same group.
	for _, r := range compared(t, "--algos", "single,tree", "--from", "2MiB", "--to", "2MiB") {
		agree(r)
		if !(r.Sim.MakespanGbps > 0 && r.Sim.MakespanGbps <= r.Sim.BandwidthGbps*1.001) {
			t.Errorf("%s at %s: makespan %.1f Gbit/s against %.1f in the steady state", r.Algo, units.FormatSize(r.Bytes), r.Sim.MakespanGbps, r.Sim.BandwidthGbps)
		}
	}
}
