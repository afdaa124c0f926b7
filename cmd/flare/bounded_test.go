package main

import (
	"context"
	"testing"
)

// Bounded time through the daemon: with an injected tail (p99/p50 = 3) and
// a 3 ms deadline, calls complete with some blocks released partial, the
// complete blocks verify, and the share of contributions dropped is
// reported; the exact mode in the same run drops nothing.
func TestE2EBoundedTime(t *testing.T) {
	d := startDaemon(t)
	ctx := context.Background()
	exact, err := allreduce(ctx, t, d, 61, 4, false, "--bytes", "256KiB", "--iters", "8", "--tail-ratio", "3", "--tail-median", "10ms")
	if err != nil {
		t.Fatal(err)
	}
	bounded, err := allreduce(ctx, t, d, 62, 4, false, "--bytes", "256KiB", "--iters", "8", "--tail-ratio", "3", "--tail-median", "10ms", "--deadline", "3ms")
	if err != nil {
		t.Fatal(err)
	}
	e, b := exact[0], bounded[0]
	if !e.Verified || !b.Verified || e.DroppedFraction != 0 || e.PartialBlocks != 0 {
		t.Fatalf("exact %+v, bounded %+v", e, b)
	}
	if b.DeadlineMS != 3 || b.PartialBlocks == 0 || b.DroppedFraction <= 0 || b.DroppedFraction >= 1 {
		t.Errorf("bounded run %+v: want partial blocks and a dropped share in (0, 1)", b)
	}
	t.Logf("exact median %.1f ms p99 %.1f ms; bounded median %.1f ms p99 %.1f ms, %.1f%% of contributions dropped, %d partial blocks per call",
		e.MedianS*1e3, e.P99S*1e3, b.MedianS*1e3, b.P99S*1e3, b.DroppedFraction*100, b.PartialBlocks)
}
