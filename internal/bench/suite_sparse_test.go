package bench

import (
	"bytes"
	"strings"
	"testing"

	"github.com/flare-net/flare/wire"
)

// A density's rows: each path's bytes on the wire (tx and rx) over the
// dense row's, the bytes of its spilled pairs (index and value) over the
// bytes it received, and the host sparse baseline's time over its own.
func TestSparseCells(t *testing.T) {
	dense := &Result{TxBytes: 600, RxBytes: 400}
	rows := map[string]*Result{
		PathHash:       {TxBytes: 100, RxBytes: 200, SpilledPairs: 10, MedianS: 0.002},
		PathArray:      {TxBytes: 50, RxBytes: 150, MedianS: 0.004},
		PathHostSparse: {TxBytes: 300, RxBytes: 300, MedianS: 0.008},
	}
	got := sparseCells(dense, rows, wire.Float32)
	want := []SparseRow{
		{Path: PathHash, TrafficVsDense: 0.3, SpillShare: 10 * float64(wire.PairSize(wire.Float32)) / 200, VsHostSparse: 4},
		{Path: PathArray, TrafficVsDense: 0.2, VsHostSparse: 2},
		{Path: PathHostSparse, TrafficVsDense: 0.6, VsHostSparse: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Path != w.Path || g.TrafficVsDense != w.TrafficVsDense || g.SpillShare != w.SpillShare || g.VsHostSparse != w.VsHostSparse ||
			g.Result != *rows[w.Path] {
			t.Errorf("row %d: %s traffic %v spill %v vs host %v; want %s %v %v %v, with its result", i,
				g.Path, g.TrafficVsDense, g.SpillShare, g.VsHostSparse, w.Path, w.TrafficVsDense, w.SpillShare, w.VsHostSparse)
		}
	}
}

// Each sparse path's call: sparse at the row's density, hash or array
// storage on the switch, the ring for the host baseline.
func TestSparseConfig(t *testing.T) {
	s := &suiteRun{Suite: okSuite()}
	for path, want := range map[string]Config{
		PathHash:       {Storage: wire.StorageHash, Algo: "auto"},
		PathArray:      {Storage: wire.StorageArray, Algo: "auto"},
		PathHostSparse: {Algo: PathRing},
	} {
		c := s.sparseConfig(3, 64<<10, 0.25, path)
		if !c.Sparse || c.Density != 0.25 || c.Storage != want.Storage || c.Algo != want.Algo || c.Ranks != 3 || c.Count != 16<<10 {
			t.Errorf("%s: sparse %t density %v storage %v algo %q, %d ranks of %d elements", path, c.Sparse, c.Density, c.Storage, c.Algo, c.Ranks, c.Count)
		}
	}
}

// A sparse row in the table: its density as a percentage, its ratios in
// their columns.
func TestWriteSparse(t *testing.T) {
	s := &suiteRun{Suite: okSuite()}
	var b bytes.Buffer
	tw := newTable(&b)
	r := SparseRow{Path: PathHash, TrafficVsDense: 0.25, SpillShare: 0.5, VsHostSparse: 3}
	r.Ranks, r.Bytes, r.Density, r.MedianS, r.Verified = 4, 64<<10, 0.015, 0.002, true
	if err := s.writeSparse(&b, tw, r); err != nil {
		t.Fatal(err)
	}
	tw.Flush()
	got := strings.Fields(b.String())
	want := []string{"4", "64KiB", "1.5%", "hash", "2.00", "ms", "0", "B", "0", "B", "0.25×", "50%", "3.00×", "yes"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("row %q, want %q", got, want)
	}
}
