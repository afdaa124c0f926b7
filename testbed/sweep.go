package testbed

import (
	"context"
	"fmt"
	"math"
)

// SweepRates is the 1-2-5 series of rates from lo to hi (both kept).
func SweepRates(lo, hi float64) ([]float64, error) {
	if !(lo >= MinRateBps && hi <= MaxRateBps && lo <= hi) {
		return nil, fmt.Errorf("testbed: sweep %s..%s: want %s <= lo <= hi <= %s", FormatRate(lo), FormatRate(hi),
			FormatRate(MinRateBps), FormatRate(MaxRateBps))
	}
	rates := []float64{lo}
	for dec := math.Pow(10, math.Floor(math.Log10(lo))); dec <= hi; dec *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if r := m * dec; r > lo*1.0001 && r < hi*0.9999 {
				rates = append(rates, r)
			}
		}
	}
	if hi > lo {
		rates = append(rates, hi)
	}
	return rates, nil
}

// SweepRow is one rate and packet size of a capacity sweep.
type SweepRow struct {
	Row
	// Held: verified and in-network time within IdealSlack of ideal.
	Held bool `json:"held"`
}

// Capacity is the sweep's answer for one packet size: the highest rate
// held with every lower rate held too (0: none), and the first rate that
// was not, with whether that run was CPU-bound.
type Capacity struct {
	PacketBytes   int     `json:"packet_bytes"`
	HeldBps       float64 `json:"held_bps"`
	FailedBps     float64 `json:"failed_bps"`
	FailedOfIdeal float64 `json:"failed_of_ideal"`
	FailedCPU     bool    `json:"failed_cpu_bound"`
}

// Sweep measures the in-network dense path of cfg at every rate for every
// packet size, a fresh cluster each, ascending; a packet size stops after
// its first rate that is not held twice running (the retry absorbs one
// noisy run on a shared box: noise only adds time). emit gets every row
// as it is measured.
func Sweep(ctx context.Context, cfg Config, rates []float64, packets []int, emit func(SweepRow)) ([]Capacity, error) {
	return sweep(ctx, cfg, rates, packets, emit, Run)
}

// sweep is Sweep with each cluster's run by run.
func sweep(ctx context.Context, cfg Config, rates []float64, packets []int, emit func(SweepRow),
	run func(context.Context, Config) ([]Row, error)) ([]Capacity, error) {
	cfg.Paths = []string{PathSwitch}
	var caps []Capacity
	for _, pb := range packets {
		c := Capacity{PacketBytes: pb}
		for _, rate := range rates {
			one := cfg
			one.PacketBytes, one.LinkBps, one.UplinkBps = pb, rate, 0
			var row SweepRow // the better of the tries
			for try := 0; try < 2; try++ {
				rows, err := run(ctx, one)
				if err != nil {
					return caps, err
				}
				r := SweepRow{Row: rows[0]}
				r.Held = r.Verified && r.OfIdeal <= IdealSlack
				emit(r)
				if try == 0 || r.OfIdeal < row.OfIdeal {
					row = r
				}
				if row.Held {
					break
				}
			}
			if !row.Held {
				c.FailedBps, c.FailedOfIdeal, c.FailedCPU = rate, row.OfIdeal, row.CPUBound
				break
			}
			c.HeldBps = rate
		}
		caps = append(caps, c)
	}
	return caps, nil
}
