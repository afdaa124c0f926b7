package main

import (
	"slices"
	"testing"

	"github.com/flare-net/flare/internal/bench"
	"github.com/flare-net/flare/internal/schematest"
	"github.com/flare-net/flare/testbed"
)

// A testbed row carries every field a `flare bench --json` row always has
// (so one reader takes both), and link_bps, ideal_s and cpu_bound.
func TestTestbedRowHasBenchFields(t *testing.T) {
	bench := schematest.Fixed(t, bench.Row{})
	row := schematest.Fixed(t, testbed.Row{})
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
