package testbed

import (
	"encoding/json"
	"testing"

	"github.com/flare-net/flare/internal/bench"
)

// A host's `flare allreduce --json` row reads into hostResult as the
// bench.Result that printed it, and the testbed's row folds the hosts':
// the slowest host's times, the sums of the counts, bench's bus bandwidth.
func TestHostResultsFold(t *testing.T) {
	hosts := []bench.Result{
		{Ranks: 2, Bytes: 1 << 20, DType: "float32", Op: "sum", Algo: "single", Iters: 3, MedianS: 0.002, P99S: 0.003,
			Verified: true, Retransmits: 1, TxBytes: 100, RxBytes: 200, Density: 0.01, Storage: "hash", SpilledPairs: 5},
		{Ranks: 2, Bytes: 1 << 20, DType: "float32", Op: "sum", Algo: "single", Iters: 3, MedianS: 0.004, P99S: 0.0035,
			Verified: true, Retransmits: 2, TxBytes: 10, RxBytes: 20, Density: 0.01, Storage: "hash", SpilledPairs: 7},
	}
	results := make([]hostResult, len(hosts))
	for i, h := range hosts {
		b, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &results[i]); err != nil {
			t.Fatal(err)
		}
		if results[i].Result != h {
			t.Errorf("host %d: read %+v, printed %+v", i, results[i].Result, h)
		}
	}
	c := &cluster{cfg: Config{Hosts: 2, LinkBps: 1e9, PacketBytes: 1024}}
	r := c.row(PathSparse, 0.01, results)
	if r.MedianS != 0.004 || r.P99S != 0.0035 || r.Retransmits != 3 || r.TxBytes != 110 || r.RxBytes != 220 || r.SpilledPairs != 12 ||
		r.Ranks != 2 || r.Storage != "hash" || r.Algo != "single" {
		t.Errorf("row %+v", r)
	}
	if want := float64(1<<20) / 0.004 / 1e9; r.AlgbwGBps != want || r.BusbwGBps != bench.Busbw(want, 2) {
		t.Errorf("algbw %g busbw %g, want %g and %g", r.AlgbwGBps, r.BusbwGBps, want, bench.Busbw(want, 2))
	}
}
