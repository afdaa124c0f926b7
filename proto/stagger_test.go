package proto

import "testing"

func TestStaggeredOrder(t *testing.T) {
	for _, tc := range []struct{ p, n, w int }{{1, 5, 0}, {4, 8, 0}, {4, 10, 3}, {3, 7, 7}, {64, 3, 2}} {
		seen := make([]int, tc.n)
		for rank := 0; rank < tc.p; rank++ {
			order := StaggeredOrder(nil, rank, tc.p, tc.n, tc.w)
			if len(order) != tc.n {
				t.Fatalf("%+v rank %d: %d blocks", tc, rank, len(order))
			}
			for _, b := range order {
				seen[b]++
			}
		}
		for b, k := range seen {
			if k != tc.p {
				t.Fatalf("%+v: block %d sent %d times over all ranks", tc, b, k)
			}
		}
	}
	if got := StaggeredOrder(nil, 2, 4, 8, 0); got[0] != 4 {
		t.Fatalf("rank 2 of 4 over 8 blocks starts at %d, want 4", got[0])
	}
}
