package hpu

import (
	"slices"
	"testing"
)

// occ is an occupancy set by hand: each cluster's requests and room, each
// core's work, and the clusters whose first enter finds them full though
// room is freed by the next (a core finished meanwhile, as in the
// real-time unit).
type occ struct {
	requests []int64
	room     []bool
	load     [][]int64
	freed    map[int]bool
}

func (o *occ) enter(ci int) bool {
	if o.freed[ci] {
		delete(o.freed, ci)
		o.room[ci] = true
		return false
	}
	if !o.room[ci] {
		return false
	}
	o.requests[ci]++
	return true
}
func (o *occ) held(ci int) int64    { return o.requests[ci] }
func (o *occ) work(ci, j int) int64 { return o.load[ci][j] }

// A block's subset: S consecutive cores from (block / clusters) × S, so a
// cluster's successive blocks take successive subsets, wrapping.
func TestPlacementSubsets(t *testing.T) {
	pl := newPlacement(Config{Clusters: 2, CoresPerCluster: 4, SubsetS: 2})
	var bases []int
	for b := range uint32(10) {
		bases = append(bases, pl.subsetBase(b))
	}
	if want := []int{0, 0, 2, 2, 0, 0, 2, 2, 0, 0}; !slices.Equal(bases, want) {
		t.Errorf("subset bases %v, want %v", bases, want)
	}
	pl3 := newPlacement(Config{Clusters: 1, CoresPerCluster: 4, SubsetS: 3})
	var in []int
	for j := range 4 {
		if pl3.inSubset(1, j) { // base 3: cores 3, 0, 1
			in = append(in, j)
		}
	}
	if !slices.Equal(in, []int{0, 1, 3}) {
		t.Errorf("block 1's subset of 3 from core 3: %v, want [0 1 3]", in)
	}
}

// Within the subset: the first idle core in the subset's order, or else
// the one with the least work, the first of equals.
func TestPlacementCore(t *testing.T) {
	pl := newPlacement(Config{Clusters: 1, CoresPerCluster: 4, SubsetS: 3})
	for _, tc := range []struct {
		work     []int64
		block    uint32
		want     int
		wantIdle bool
	}{
		{[]int64{0, 0, 0, 0}, 0, 0, true},
		{[]int64{5, 0, 0, 0}, 0, 1, true},
		{[]int64{5, 3, 3, 0}, 0, 1, false}, // core 3 is outside the subset
		{[]int64{2, 2, 2, 0}, 0, 0, false},
		{[]int64{4, 9, 1, 2}, 1, 3, false}, // block 1's subset is cores 3, 0, 1
	} {
		if j, idle := pl.core(0, tc.block, &occ{load: [][]int64{tc.work}}); j != tc.want || idle != tc.wantIdle {
			t.Errorf("work %v, block %d: core %d (idle %v), want %d (idle %v)", tc.work, tc.block, j, idle, tc.want, tc.wantIdle)
		}
	}
}

// Overflow goes to the least-loaded cluster, never home: when home is the
// least loaded, even if a core has freed room there since, the request
// is not an overflow, and the caller waits for home.
func TestPlacementOverflowNeverHome(t *testing.T) {
	pl := newPlacement(Config{Clusters: 3, CoresPerCluster: 2, SubsetS: 2, Overflow: true})
	o := &occ{requests: []int64{5, 1, 2}, room: []bool{false, true, true}, freed: map[int]bool{1: true}}
	if ci, over, ok := pl.cluster(1, o); ok {
		t.Errorf("home 1 full, then the least loaded with room: placed in %d (overflow %v); want no placement", ci, over)
	}
	o = &occ{requests: []int64{5, 4, 2}, room: []bool{false, false, true}}
	if ci, over, ok := pl.cluster(1, o); !ok || !over || ci != 2 {
		t.Errorf("home 1 full: cluster %d, overflow %v, ok %v; want 2, true, true", ci, over, ok)
	}
}
