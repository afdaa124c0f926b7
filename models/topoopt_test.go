package models

import (
	"math"
	"slices"
	"testing"
)

func TestTotientPerms(t *testing.T) {
	for _, tc := range []struct {
		n      int
		primes bool
		want   []int
	}{
		{12, false, []int{1, 5, 7, 11}}, // TopoOpt's example
		{12, true, []int{1, 5, 7, 11}},
		{16, true, []int{1, 3, 5, 7, 11, 13}},
		{16, false, []int{1, 3, 5, 7, 9, 11, 13, 15}},
		{30, false, []int{1, 7, 11, 13, 17, 19, 23, 29}},
		{2, true, []int{1}},
		{1, false, nil},
	} {
		if got := TotientPerms(tc.n, tc.primes); !slices.Equal(got, tc.want) {
			t.Errorf("TotientPerms(%d, %v) = %v, want %v", tc.n, tc.primes, got, tc.want)
		}
	}
	// φ(n) generators.
	for n := 2; n < 200; n++ {
		phi := 0
		for k := 1; k <= n; k++ {
			if gcd(k, n) == 1 {
				phi++
			}
		}
		if len(TotientPerms(n, false)) != phi {
			t.Fatalf("n = %d: %d generators, φ = %d", n, len(TotientPerms(n, false)), phi)
		}
	}
}

func TestSelectPermutations(t *testing.T) {
	// 16 hosts, degree 4: targets 1, 2, 4, 8 → 1, 3, 5, 7.
	if got := SelectPermutations(16, 4, true); !slices.Equal(got, []int{1, 3, 5, 7}) {
		t.Errorf("SelectPermutations(16, 4) = %v", got)
	}
	if got := SelectPermutations(12, 10, false); !slices.Equal(got, []int{1, 5, 7, 11}) {
		t.Errorf("more degree than generators: %v", got)
	}
	if got := SelectPermutations(12, 0, false); got != nil {
		t.Errorf("degree 0: %v", got)
	}
	// 9 hosts, degree 2: target 3 is as near 2 as 4; the smaller wins.
	if got := SelectPermutations(9, 2, false); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("SelectPermutations(9, 2) = %v, want [1 2]", got)
	}
	// 11 hosts, degree 5: targets 1, 1.6, 2.6, 4.2, 6.8 take 1, 2, 3, 4;
	// 7 is nearest the last but is 4's mirror (the same links), so 6.
	if got := SelectPermutations(11, 5, false); !slices.Equal(got, []int{1, 2, 3, 4, 6}) {
		t.Errorf("SelectPermutations(11, 5) = %v, want [1 2 3 4 6]", got)
	}
	for _, n := range []int{16, 64, 128, 101} {
		for d := 1; d <= 8; d++ {
			got := SelectPermutations(n, d, true)
			if len(got) != min(d, len(TotientPerms(n, true))) || !slices.IsSorted(got) {
				t.Fatalf("n=%d d=%d: %v", n, d, got)
			}
			for _, p := range got {
				if gcd(p, n) != 1 {
					t.Fatalf("n=%d d=%d: %d not coprime", n, d, p)
				}
				if p != n-p && slices.Contains(got, n-p) && d < len(TotientPerms(n, true))/2 {
					t.Errorf("n=%d d=%d: %v holds both %d and its mirror", n, d, got, p)
				}
			}
		}
	}
	// The geometric spread beats the first d generators on diameter.
	n, d := 128, 4
	geo, _ := PermStats(n, SelectPermutations(n, d, true))
	first, _ := PermStats(n, TotientPerms(n, true)[:d])
	if geo >= first {
		t.Errorf("n=%d d=%d: geometric diameter %d, first-%d diameter %d", n, d, geo, d, first)
	}
}

func TestRingOrder(t *testing.T) {
	if got := RingOrder(8, 3); !slices.Equal(got, []int{0, 3, 6, 1, 4, 7, 2, 5}) {
		t.Errorf("RingOrder(8, 3) = %v", got)
	}
	if RingOrder(8, 2) != nil || RingOrder(0, 1) != nil {
		t.Error("RingOrder accepted a generator not coprime with n")
	}
	for _, n := range []int{2, 12, 64, 97} {
		for _, p := range TotientPerms(n, false) {
			o := RingOrder(n, p)
			s := slices.Clone(o)
			slices.Sort(s)
			for i := range s {
				if s[i] != i {
					t.Fatalf("RingOrder(%d, %d) is not a permutation: %v", n, p, o)
				}
			}
			for i := range o {
				if (o[(i+1)%n]-o[i]+n)%n != p {
					t.Fatalf("RingOrder(%d, %d): step %d → %d is not +%d", n, p, o[i], o[(i+1)%n], p)
				}
			}
		}
	}
}

func TestPermStats(t *testing.T) {
	// A plain ring of 8: distances 1,1,2,2,3,3,4 → diameter 4, mean 16/7.
	d, m := PermStats(8, []int{1})
	if d != 4 || beyond(m-16.0/7, 1e-12) {
		t.Errorf("ring of 8: %d, %g; want 4, 16/7", d, m)
	}
	// p and n−p are the same links, and so is −p.
	if d2, m2 := PermStats(8, []int{-1}); d2 != d || m2 != m {
		t.Errorf("generator −1: %d, %g; want the ring's %d, %g", d2, m2, d, m)
	}
	if d2, m2 := PermStats(8, []int{1, 7}); d2 != d || m2 != m {
		t.Errorf("adding the mirror changed the topology: %d, %g", d2, m2)
	}
	// Every chord of a complete circulant: diameter 1.
	if d, m := PermStats(5, []int{1, 2}); d != 1 || m != 1 {
		t.Errorf("K5: %d, %g", d, m)
	}
	if d, m := PermStats(8, []int{2}); d != -1 || !math.IsInf(m, 1) {
		t.Errorf("disconnected: %d, %g", d, m)
	}
	if d, m := PermStats(1, nil); d != 0 || m != 0 {
		t.Errorf("one host: %d, %g", d, m)
	}
	// More rings, smaller diameter.
	prev := math.MaxInt
	for deg := 1; deg <= 6; deg++ {
		d, _ := PermStats(64, SelectPermutations(64, deg, true))
		if d > prev {
			t.Errorf("degree %d: diameter %d grew from %d", deg, d, prev)
		}
		prev = d
	}
}
