package main

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/flare-net/flare/internal/bench"
	"github.com/flare-net/flare/testbed"
)

// jsonKeys is the set of keys v marshals to (empty fields included).
func jsonKeys(t *testing.T, v any) []string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// A testbed row carries every field a `flare bench --json` row always has
// (so one reader takes both), and link_bps, ideal_s and cpu_bound.
func TestTestbedRowHasBenchFields(t *testing.T) {
	bench := jsonKeys(t, bench.Row{})
	row := jsonKeys(t, testbed.Row{})
	for _, k := range append(bench, "link_bps", "ideal_s", "cpu_bound") {
		if !slices.Contains(row, k) {
			t.Errorf("testbed.Row has no JSON field %q (bench rows have %v)", k, bench)
		}
	}
}

func TestParseFraction(t *testing.T) {
	for in, want := range map[string]float64{"0": 0, "0.01": 0.01, "1%": 0.01, " 0.5% ": 0.005} {
		if got, err := parseFraction(in); err != nil || got != want {
			t.Errorf("parseFraction(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x", "1%%"} {
		if _, err := parseFraction(in); err == nil {
			t.Errorf("parseFraction(%q): no error", in)
		}
	}
}
