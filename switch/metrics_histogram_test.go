package swtch

import (
	"testing"

	"github.com/flare-net/flare/hpu"
)

// The handler-time histogram counts cumulatively under each bucket's
// bound in seconds, and counts the handlers slower than the last bound
// (256 µs) in the total: a handler that stalled is the one an operator
// looks for.
func TestHandlerHistogram(t *testing.T) {
	var tot hpu.CoreStats
	tot.Hist[0], tot.Hist[3], tot.Hist[hpu.HistBuckets-1] = 2, 5, 7 // under 128 ns, under 1.024 µs, over 256 µs
	tot.BusyNs = 3_500_000
	count, sum, buckets := handlerHistogram(&tot)
	if count != 14 || sum != 0.0035 {
		t.Fatalf("count %d, sum %v s; want 14 handlers (7 of them slower than every bound), 0.0035 s", count, sum)
	}
	if len(buckets) != hpu.HistBuckets-1 {
		t.Fatalf("%d bounded buckets, want %d", len(buckets), hpu.HistBuckets-1)
	}
	for i := range hpu.HistBuckets - 1 {
		want := uint64(2)
		if i >= 3 {
			want = 7
		}
		if le := float64(hpu.HistBound(i)) / 1e9; buckets[le] != want {
			t.Errorf("bucket le=%g s: %d, want %d", le, buckets[le], want)
		}
	}
}
