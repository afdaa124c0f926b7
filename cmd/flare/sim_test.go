package main

import (
	"encoding/csv"
	"encoding/json"
	"math"
	"strings"
	"testing"
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
	if err != nil || len(recs) != 5 || recs[0][0] != "algo" || recs[0][7] != "tau_cycles" || recs[4][0] != "tree" {
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
// "Model vs simulation"), where the model's assumptions hold and where
// they do not, as the section explains.
func TestSimCompareFlare(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("64 hosts x 2MiB in virtual time: seconds, minutes under the race detector")
	}
	within := func(what string, r compareRow, err, tol float64) {
		t.Helper()
		if math.Abs(err) > tol {
			t.Errorf("%s at %s: %s off by %+.1f%%, want within %.0f%%", r.Algo, formatSize(r.Bytes), what, 100*err, 100*tol)
		}
	}
	// S = 8 at 2MiB: no buffer is shared by the tree, and the single
	// buffer's blocks arrive 4L apart: both are (nearly) contention-free.
	rows := compared(t, "--algos", "single,tree", "--from", "2MiB", "--to", "2MiB")
	tree, single := rows["tree"], rows["single"]
	within("bandwidth", tree, tree.BandwidthErr, 0.10)
	within("tau", tree, tree.TauErr, 1e-9)
	within("bandwidth", single, single.BandwidthErr, 0.10)
	within("memory", single, single.MemoryErr, 0.10)
	within("tau", single, single.TauErr, 0.10)
	if !tree.RankMatch {
		t.Errorf("2MiB: model ranks single %d, tree %d; the simulation %d, %d", single.RankModel, tree.RankModel, single.RankSim, tree.RankSim)
	}
	// The tree's working memory is half the paper's M = (P−1)/log2 P: with
	// staggered sending a block's packets arrive in rotated child order
	// and the tree holds few partial sums at once.
	if r := tree.Sim.MemoryBytes / tree.Model.MemoryBytes; r < 0.4 || r > 0.6 {
		t.Errorf("tree at 2MiB: simulated memory %.2f of the model's, want about half", r)
	}

	// S = 1: a block's packets run on one core, one after the other: τ is
	// the model's exactly and so is the memory, but a full cluster queue
	// blocks the ingress for every cluster behind it, so the simulated
	// bandwidth is below K/τ.
	rows = compared(t, "--subset", "1", "--algos", "single,multi2,multi4", "--from", "512KiB", "--to", "512KiB")
	for _, r := range rows {
		within("tau", r, r.TauErr, 1e-9)
		within("memory", r, r.MemoryErr, 0.10)
		if r.BandwidthErr > 0 || r.BandwidthErr < -0.20 {
			t.Errorf("%s S=1 at 512KiB: bandwidth %+.1f%% of the model's, want 0 to -20%% (head-of-line blocking)", r.Algo, 100*r.BandwidthErr)
		}
		if !r.RankMatch {
			t.Errorf("%s S=1 at 512KiB: the ranking differs", r.Algo)
		}
	}
}
