package testbed

import (
	"context"
	"errors"
	"testing"
)

// A sweep is refused past the fastest rate a link may have.
func TestSweepRatesRange(t *testing.T) {
	for _, r := range [][2]float64{{1e9, 2 * MaxRateBps}, {MinRateBps / 2, 1e9}} {
		if got, err := SweepRates(r[0], r[1]); err == nil {
			t.Errorf("SweepRates(%s, %s) = %v, want it refused", FormatRate(r[0]), FormatRate(r[1]), got)
		}
	}
}

// fakeRuns answers each run with the time of ofIdeal for its rate and
// packet size, try by try (the last one repeated), and records the runs.
type fakeRuns struct {
	ofIdeal map[[2]float64][]float64
	runs    []Config
}

func (f *fakeRuns) run(_ context.Context, c Config) ([]Row, error) {
	f.runs = append(f.runs, c)
	k := [2]float64{float64(c.PacketBytes), c.LinkBps}
	tries := f.ofIdeal[k]
	if len(tries) == 0 {
		return nil, errors.New("no such run")
	}
	o := tries[0]
	if len(tries) > 1 {
		f.ofIdeal[k] = tries[1:]
	}
	return []Row{{Path: c.Paths[0], Verified: o > 0, OfIdeal: max(o, -o), PacketBytes: c.PacketBytes, LinkBps: c.LinkBps, CPUBound: o > 2}}, nil
}

// A sweep runs the in-network dense path alone, rate after rate, each on
// the host links alone (the uplinks follow them); a rate is held when its
// run is verified and within the slack of ideal, a second try of a rate
// that was not decides it, and a packet size stops at its first rate that
// is not held: its capacity is the rate before, and the failure's ratio
// is the better try's. An unverified run is not held however fast.
func TestSweepStopsAtTheFirstRateNotHeld(t *testing.T) {
	rates := []float64{1e8, 2e8, 5e8, 1e9}
	f := &fakeRuns{ofIdeal: map[[2]float64][]float64{
		{1024, 1e8}: {1.01}, {1024, 2e8}: {1.3, 1.05}, {1024, 5e8}: {1.5, 2.5}, {1024, 1e9}: {1.0},
		{8192, 1e8}: {-1.0}, // unverified
	}}
	var emitted []SweepRow
	cfg := Config{Hosts: 4, Bytes: 1 << 20, UplinkBps: 5e9, Paths: []string{PathRing, PathSparse}}
	caps, err := sweep(context.Background(), cfg, rates, []int{1024, 8192}, func(r SweepRow) { emitted = append(emitted, r) }, f.run)
	if err != nil {
		t.Fatal(err)
	}
	want := []Capacity{{PacketBytes: 1024, HeldBps: 2e8, FailedBps: 5e8, FailedOfIdeal: 1.5, FailedCPU: false},
		{PacketBytes: 8192, FailedBps: 1e8, FailedOfIdeal: 1.0}}
	if len(caps) != 2 || caps[0] != want[0] || caps[1] != want[1] {
		t.Errorf("capacities %+v, want %+v", caps, want)
	}
	// 1e8; 2e8 twice; 5e8 twice; then 8192's 1e8 twice. 1e9 never runs.
	if len(f.runs) != 7 || len(emitted) != 7 {
		t.Fatalf("%d runs, %d rows emitted, want 7", len(f.runs), len(emitted))
	}
	for i, c := range f.runs {
		if len(c.Paths) != 1 || c.Paths[0] != PathSwitch || c.UplinkBps != 0 {
			t.Errorf("run %d: paths %v, uplinks %g: want the switch's path alone, uplinks at the host links' rate", i, c.Paths, c.UplinkBps)
		}
	}
	if !emitted[0].Held || emitted[1].Held || !emitted[2].Held || emitted[5].Held {
		t.Errorf("rows %+v: held at 1.01× and 1.05× ideal, not at 1.3× nor unverified", emitted)
	}
}

// A run that fails ends the sweep with its error and the capacities so far.
func TestSweepRunError(t *testing.T) {
	f := &fakeRuns{ofIdeal: map[[2]float64][]float64{{1024, 1e8}: {1.0}}}
	caps, err := sweep(context.Background(), Config{}, []float64{1e8}, []int{1024, 8192}, func(SweepRow) {}, f.run)
	if err == nil || len(caps) != 1 || caps[0].HeldBps != 1e8 {
		t.Errorf("capacities %+v, %v: want 1024's and the error of 8192's run", caps, err)
	}
}
