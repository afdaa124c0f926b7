package main

import (
	"context"
	"encoding/csv"
	"strings"
	"testing"

	"github.com/flare-net/flare/models"
	"github.com/flare-net/flare/sim"
	"github.com/flare-net/flare/sim/sweep"
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

// sim's own flags set the runs' options: its rows with each moved from
// its default are the library's runs with the same options, set by hand.
func TestSimFlags(t *testing.T) {
	out := runFlare(t, "sim", "--preset", "pspin", "--algos", "single,tree", "--from", "8KiB", "--to", "8KiB", "--seed", "5",
		"--rounds", "2", "--overflow", "--arrivals", "hosts", "--format", "json")
	p, err := models.Preset(models.PresetPsPIN)
	if err != nil {
		t.Fatal(err)
	}
	p.CountCopies, p.TreeArrivalOrder = true, true // sim's defaults
	ds, err := models.ParseDesigns("single,tree")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := sweep.Run(context.Background(), p, ds, []int64{8 << 10}, sweep.Options{Seed: 5, Rounds: 2, Overflow: true, Arrivals: sim.ArrivalsHosts})
	if err != nil {
		t.Fatal(err)
	}
	if want := jsonText(t, rows); out != want {
		t.Errorf("flare sim with its flags:\n%s\nwant the library's runs:\n%s", out, want)
	}
}
