package models

import (
	"math"
	"testing"
)

// alignedPieces is how many buffers a binary tree over P leaves (P a power
// of two) holds once the leaves in got there and every possible fold is
// done: the maximal complete aligned subtrees.
func alignedPieces(P int, in map[int]bool) int {
	complete := func(a, size int) bool {
		for x := a; x < a+size; x++ {
			if !in[x] {
				return false
			}
		}
		return true
	}
	n := 0
	for size := 1; size <= P; size *= 2 {
		for a := 0; a < P; a += size {
			if complete(a, size) && (size == P || !complete(a-a%(2*size), 2*size)) {
				n++
			}
		}
	}
	return n
}

// The tree's M for staggered hosts: with the packets of a block far apart
// (δc ≫ L) a block holds the aligned pieces of the contiguous range of
// children that has arrived, averaged over the block's life and over
// which host comes first: 4.64 for P = 64, not (P−1)/log2 P = 10.5.
func TestTreeArrivalOrderM(t *testing.T) {
	const P = 64
	var sum float64
	for first := range P {
		in := map[int]bool{}
		for j := range P - 1 { // the interval after the (j+1)-th leaf
			in[(first-j+P)%P] = true
			sum += float64(alignedPieces(P, in))
		}
	}
	want := sum / (P * (P - 1))
	p, err := Preset(PresetFlare)
	if err != nil {
		t.Fatal(err)
	}
	p.Bytes, p.HostGbps, p.InterArrival = 4<<20, 1, 0 // link-bound: δc = 4096·δ ≫ L
	p.TreeArrivalOrder = true
	p = p.Resolve()
	r := Evaluate(p, Tree)
	// The folds (L each, two buffers held) and the final climb add a
	// little over the instants between arrivals.
	t.Logf("M = %.3f (aligned pieces %.3f, paper %.2f), δc = %.0f", r.M, want, (P-1)/math.Log2(P), r.DeltaC)
	if beyond(want-4.643, 0.01) || r.M < want || r.M > want*1.03 {
		t.Errorf("M = %.3f, want just above the aligned pieces' %.3f", r.M, want)
	}
	if got := r.M * (r.Bandwidth / P) * r.Latency; beyond(got-r.R, 1e-9*r.R) {
		t.Errorf("R = %v, M·(𝓑/P)·𝓛 = %v", r.R, got)
	}
	p.TreeArrivalOrder = false
	if r := Evaluate(p, Tree); r.M != (P-1)/math.Log2(P) {
		t.Errorf("paper's M = %v, want (P−1)/log2 P", r.M)
	}
}

// Two hosts, δc given: the first leaf is held from its arrival to the end
// of the second's copy in and fold (δc + D + L), the second through its
// copy in, the fold and the two copies out (D + L + 2D):
// M·𝓛 = δc + 2L + 4D buffer-cycles.
func TestTreeArrivalOrderTwoHosts(t *testing.T) {
	p, err := Preset(PresetPsPIN)
	if err != nil {
		t.Fatal(err)
	}
	p.Hosts, p.Bytes, p.InterArrival, p.SameBlockInterArrival = 2, 1024, 0, 5000
	p.TreeArrivalOrder, p.CountCopies = true, true
	p = p.Resolve()
	L, D := p.CyclesPerPacket, p.DMACycles
	want := 5000 + 2*L + 4*D
	if got := treeBufferCycles(p, staggerGroup(p), p.InterArrival); got != want {
		t.Fatalf("buffer-cycles %v, want %v", got, want)
	}
	r := Evaluate(p, Tree)
	if got := r.M * r.Latency; beyond(got-want, 1e-9*want) {
		t.Fatalf("M·𝓛 = %v, want %v", got, want)
	}
}

// With S = 1 a block's handlers run one after another on its core. Two
// hosts, the packets at once (δ = 0): the first leaf is copied in (D) and
// stored, the second starts when it ends, is copied in and folds (L) and
// copies out (2D). The first buffer is held D + D + L, the second
// D + L + 2D: 2L + 5D, where with S = C the two start together on two
// cores and count 2L + 4D.
func TestTreeServedOneCore(t *testing.T) {
	p, err := Preset(PresetPsPIN)
	if err != nil {
		t.Fatal(err)
	}
	p.Hosts, p.Bytes, p.InterArrival, p.HostGbps = 2, 1024, 0, 0
	p.TreeArrivalOrder, p.CountCopies = true, true
	p = p.Resolve()
	L, D := p.CyclesPerPacket, p.DMACycles
	if got, want := treeBufferCycles(p, 1, 0), 2*L+4*D; got != want {
		t.Errorf("S = C: buffer-cycles %v, want %v", got, want)
	}
	p.SubsetS = 1
	if got, want := treeBufferCycles(p, 1, 0), 2*L+5*D; got != want {
		t.Errorf("S = 1: buffer-cycles %v, want %v", got, want)
	}
}

// The flare switch with S = 1 at 1 MiB: the hosts outrun the switch, so
// a core works back to back through its two blocks' packets. Leaves that
// wait behind a climb hold no buffer, so a block holds fewer buffer-cycles
// than when every handler starts at its arrival; the model stays between
// the aligned pieces of the arrival order and the paper's M.
func TestTreeServedFlare(t *testing.T) {
	p, err := Preset(PresetFlare)
	if err != nil {
		t.Fatal(err)
	}
	p.TreeArrivalOrder, p.CountCopies = true, true
	at := Evaluate(p, Tree)
	p.SubsetS = 1
	served := Evaluate(p, Tree)
	if served.Tau != at.Tau || served.Bandwidth != at.Bandwidth {
		t.Errorf("S = 1 changed τ or 𝓑: %v %v, want %v %v", served.Tau, served.Bandwidth, at.Tau, at.Bandwidth)
	}
	if !(served.R < at.R && served.R > 0.85*at.R) {
		t.Errorf("S = 1: 𝓡 = %.0f buffers, want a little below S = 8's %.0f", served.R, at.R)
	}
	t.Logf("1MiB: R = %.0f (S = 1), %.0f (S = 8) buffers", served.R, at.R)
}

// treeParams is the PsPIN preset with P hosts on clusters × C cores, S a
// subset, L = 1024 and copies free.
func treeParams(t *testing.T, P, clusters, C, S int) Params {
	t.Helper()
	p := mustPreset(t, PresetPsPIN)
	p.Hosts, p.Clusters, p.CoresPerCluster, p.SubsetS = P, clusters, C, S
	p.CyclesPerPacket, p.DMACycles, p.CountCopies = 1024, 64, false
	return p
}

// Three hosts, one block, δe apart: the tree over children has a fourth
// leaf that never comes. Host 0's leaf is held until host 1's folds it
// (δe + L); host 1's until host 2's climbs past the empty leaf and folds
// it (δe + L); host 2's through that fold to the root (L): 2δe + 3L, no
// copies counted.
func TestTreeUnevenHosts(t *testing.T) {
	p := treeParams(t, 3, 1, 4, 4)
	const de = 3000
	if got, want := treeBufferCycles(p, 1, de), 2*de+3*p.CyclesPerPacket; got != want {
		t.Errorf("P = 3: buffer-cycles %v, want 2δe + 3L = %v", got, want)
	}
}

// One core, two hosts, a block a round, packets δe = 100 apart (L = 1024):
// the hosts outrun the core. In the first round host 1's leaf starts δe
// after host 0's (δe + 2L buffer-cycles); from the second on both wait and
// start together behind the round before (2L). The replay averages the
// switch's steady state: the rounds between the first and the last.
func TestTreeSteadyRounds(t *testing.T) {
	p := treeParams(t, 2, 1, 1, 1)
	if got, want := treeBufferCycles(p, 1, 100), 2*p.CyclesPerPacket; got != want {
		t.Errorf("buffer-cycles %v, want the steady rounds' 2L = %v", got, want)
	}
}

// With δc given (SameBlockInterArrival) the hosts' packets come δc/G
// apart: the replay is the one at δe = δc/G.
func TestTreeSameBlockInterArrival(t *testing.T) {
	p := treeParams(t, 4, 2, 2, 1)
	const G, dc = 4, 2000
	want := treeBufferCycles(p, G, dc/G)
	p.SameBlockInterArrival = dc
	if got := treeBufferCycles(p, G, 1); got != want {
		t.Errorf("δc = %d, G = %d: buffer-cycles %v, want %v as at δe = δc/G", dc, G, got, want)
	}
}
