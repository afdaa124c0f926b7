package bench

import (
	"github.com/flare-net/flare/internal/schematest"
	"math"
	"slices"
	"testing"
)

// Every --json row has a fixed schema: its zero value marshals every
// field, and every row carries the bus bandwidth beside the algorithm
// bandwidth.
func TestRowsHaveFixedSchema(t *testing.T) {
	for _, row := range []any{Result{}, Row{}, SparseRow{}, TreeRow{}} {
		keys := schematest.Fixed(t, row)
		for _, k := range []string{"algbw_GBps", "busbw_GBps"} {
			if !slices.Contains(keys, k) {
				t.Errorf("%T has no %s", row, k)
			}
		}
	}
}

// The bus bandwidth is nccl-tests' for an allreduce: algbw × 2(P−1)/P,
// derived with the algorithm bandwidth from the median.
func TestBusbw(t *testing.T) {
	for _, tc := range []struct {
		algbw float64
		p     int
		want  float64
	}{{10, 8, 17.5}, {10, 2, 10}, {3, 1, 0}, {3, 0, 0}, {1, 1024, 2 * 1023.0 / 1024}} {
		if got := Busbw(tc.algbw, tc.p); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Busbw(%v, %d) = %v, want %v", tc.algbw, tc.p, got, tc.want)
		}
	}
	r := Result{Ranks: 4, Bytes: 1 << 20}
	r.summarise([]float64{0.004, 0.001, 0.002})
	if r.MedianS != 0.002 || r.P99S != 0.004 || math.Abs(r.AlgbwGBps-float64(1<<20)/0.002/1e9) > 1e-12 || math.Abs(r.BusbwGBps-1.5*r.AlgbwGBps) > 1e-12 {
		t.Errorf("summarise: median %v, p99 %v, algbw %v, busbw %v; want 0.002 and the slowest of three, 0.004", r.MedianS, r.P99S, r.AlgbwGBps, r.BusbwGBps)
	}
	// p99 of 101 calls: the 100th fastest, one call slower than 99% of them
	times := make([]float64, 101)
	for i := range times {
		times[len(times)-1-i] = float64(i + 1)
	}
	r.summarise(times)
	if r.MedianS != 51 || r.P99S != 100 {
		t.Errorf("101 calls of 1..101 s: median %v, p99 %v; want 51 and 100", r.MedianS, r.P99S)
	}
}
