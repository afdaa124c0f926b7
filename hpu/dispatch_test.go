package hpu

import "testing"

// With the runtime's procs all taken by awake cores, dispatch queues a
// packet on the awake core of its block's subset with the least work (the
// first of equals in the subset's order), and never on a parked core or
// one outside the subset. The cluster has 130 cores, so the subset (63,
// 64, 65) spans two words of the awake set, and a core that parks leaves
// its neighbours' bits alone.
func TestDispatchAwakeCore(t *testing.T) {
	const block = 21 // its subset's base: 21 × 3 = 63
	for _, tc := range []struct {
		name  string
		awake []int // the cores awake; the others are parked
		load  map[int]int64
		procs int32
		want  int
	}{
		{"least work, first of equals", []int{63, 64, 65}, map[int]int64{63: 5, 64: 2, 65: 2}, 3, 64},
		{"a parked neighbour", []int{63, 65}, map[int]int64{63: 5, 65: 2}, 2, 65},
		{"parked idle cores passed over", []int{65, 66, 62}, map[int]int64{65: 4, 66: 0, 62: 0}, 3, 65},
		{"no awake core in the subset: the policy's idle one", []int{62, 66}, map[int]int64{63: 1, 65: 1}, 2, 64},
		{"procs to spare: the policy's idle one", []int{63, 65}, map[int]int64{63: 3, 65: 2}, 3, 64},
	} {
		u, err := New(Config{Clusters: 1, CoresPerCluster: 130, SubsetS: 3}, &nopEgress{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		u.procs = tc.procs
		cl := u.clusters[0]
		awake := map[int]bool{}
		for _, c := range tc.awake {
			awake[c] = true
		}
		for _, co := range cl.cores {
			if !awake[co.id] {
				co.setAwake(false) // New counts every core awake
			}
			co.load.Store(tc.load[co.id])
		}
		if got := u.awake.Load(); got != int32(len(tc.awake)) {
			t.Fatalf("%s: %d cores counted awake, want %d", tc.name, got, len(tc.awake))
		}
		co := u.dispatch(cl, pkt(nil, block), &arrivals{}, nil)
		if co.id != tc.want {
			t.Errorf("%s: block %d went to core %d, want %d", tc.name, block, co.id, tc.want)
		}
		if got := co.load.Load(); got != tc.load[co.id]+1 {
			t.Errorf("%s: core %d's work %d after the dispatch, want %d", tc.name, co.id, got, tc.load[co.id]+1)
		}
	}
}
