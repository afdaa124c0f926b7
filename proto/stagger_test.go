package proto

import "testing"

func TestStaggeredOrder(t *testing.T) {
	for _, tc := range []struct{ p, n, w int }{{1, 5, 0}, {4, 8, 0}, {4, 10, 3}, {4, 10, 4}, {3, 7, 7}, {64, 3, 2}, {8, 37, 16}} {
		seen := make([]int, tc.n)
		for rank := 0; rank < tc.p; rank++ {
			order := StaggeredOrder(nil, rank, tc.p, tc.n, tc.w)
			if len(order) != tc.n {
				t.Fatalf("%+v rank %d: %d blocks", tc, rank, len(order))
			}
			// Each rank sends every block once, a window's group at a
			// time: position i's block lies in i's group.
			w := tc.w
			if w <= 0 || w > tc.n {
				w = tc.n
			}
			mine := make([]bool, tc.n)
			for i, b := range order {
				if int(b) >= tc.n || mine[b] || int(b)/w != i/w {
					t.Fatalf("%+v rank %d: block %d at position %d of %v", tc, rank, b, i, order)
				}
				mine[b] = true
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
