package models

import "math"

// Ring permutations after TopoOpt (Wang et al., NSDI'23, §4.3). A ring
// allreduce is correct over any order of its hosts ("AllReduce traffic is
// mutable"), and the regular orders are i → i+p mod n for every p coprime
// with n. TopoOpt overlaps several of them so that the union of the rings
// has a small diameter for the other (model-parallel) traffic.

// gcd is Euclid's algorithm.
func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// isPrime reports whether p is prime (trial division; p is at most n).
func isPrime(p int) bool {
	if p < 2 {
		return false
	}
	for d := 2; d*d <= p; d++ {
		if p%d == 0 {
			return false
		}
	}
	return true
}

// TotientPerms returns every p in 1..n−1 coprime with n, ascending: the
// generators of the regular ring permutations of n hosts (TopoOpt's
// Algorithm 2, after Euler's totient: for n = 12, p = 1, 5, 7, 11). With
// primesOnly it keeps only prime p, which TopoOpt does to shrink the
// search to O(n/ln n); it also keeps p = 1, the plain ring, so that every
// n ≥ 2 has at least one permutation. n < 2 gives nil.
func TotientPerms(n int, primesOnly bool) []int {
	var ps []int
	for p := 1; p < n; p++ {
		if gcd(p, n) != 1 {
			continue
		}
		if primesOnly && p != 1 && !isPrime(p) {
			continue
		}
		ps = append(ps, p)
	}
	return ps
}

// SelectPermutations picks d of TotientPerms(n, primesOnly), ascending,
// close in L1 norm to the geometric sequence 1, n^(1/d), n^(2/d), ...,
// n^((d−1)/d) (TopoOpt's Algorithm 3): each host then reaches others at
// geometrically spread distances, like Chord's fingers, which keeps the
// diameter of the union of the rings small. Targets are matched greedily
// in order to the nearest unused candidate (ties to the smaller). Since
// p and n−p generate the same ring walked backwards (the same links), a
// candidate whose mirror is already taken is skipped while others remain.
// If d is at least the number of candidates, all are returned.
func SelectPermutations(n, d int, primesOnly bool) []int {
	cands := TotientPerms(n, primesOnly)
	if d <= 0 {
		return nil
	}
	if d >= len(cands) {
		return cands
	}
	used := map[int]bool{}
	for i := range d {
		target := math.Pow(float64(n), float64(i)/float64(d))
		best := -1
		for pass := 0; pass < 2 && best < 0; pass++ {
			for _, p := range cands {
				if used[p] || (pass == 0 && used[n-p]) {
					continue
				}
				if best < 0 || math.Abs(float64(p)-target) < math.Abs(float64(best)-target) {
					best = p
				}
			}
		}
		used[best] = true
	}
	out := make([]int, 0, d)
	for _, p := range cands {
		if used[p] {
			out = append(out, p)
		}
	}
	return out
}

// RingOrder is the ring of generator p over n hosts as an order of ranks:
// order[i] = i·p mod n, so rank order[i] sends to order[i+1] = order[i]+p.
// It is a permutation when p is coprime with n, and can be passed as
// hostlib.RingConfig.Order. It returns nil otherwise.
func RingOrder(n, p int) []int {
	if n < 1 || p < 0 || gcd(p, n) != 1 {
		return nil
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i * p % n
	}
	return order
}

// PermStats is the diameter and the mean hop count between distinct hosts
// of the topology formed by the union of the rings of perms over n hosts
// (links are bidirectional: host i is linked to i ± p mod n for each p).
// The graph is circulant, so one breadth-first search from host 0 gives
// both. A disconnected union (no generator coprime with n) gives −1 and
// +Inf; n < 2 gives 0, 0.
func PermStats(n int, perms []int) (diameter int, meanHops float64) {
	if n < 2 {
		return 0, 0
	}
	dist := make([]int, n)
	for i := range dist {
		dist[i] = -1
	}
	dist[0] = 0
	queue := []int{0}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, p := range perms {
			p = ((p % n) + n) % n
			for _, v := range [2]int{(u + p) % n, (u - p + n) % n} {
				if dist[v] < 0 {
					dist[v] = dist[u] + 1
					queue = append(queue, v)
				}
			}
		}
	}
	sum := 0
	for _, d := range dist[1:] {
		if d < 0 {
			return -1, math.Inf(1)
		}
		diameter = max(diameter, d)
		sum += d
	}
	return diameter, float64(sum) / float64(n-1)
}
