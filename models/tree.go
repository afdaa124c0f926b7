package models

import (
	"cmp"
	"container/heap"
	"math/bits"
	"slices"
)

// treeBufferCycles is the tree's working memory per block, in buffer-cycles
// (Σ over the buffers a block allocates of the cycles each is held), for
// the order and the spacing in which staggered hosts deliver a block's
// packets and the cores that serve them (Params.TreeArrivalOrder,
// docs/MODEL.md).
//
// The paper's M = (P−1)/log P (§6) counts P−1 aggregations spread over
// log P levels and says nothing of the order the leaves arrive in. That
// order is fixed by staggered sending (§5): host i starts at block i·G/P of
// its group of G blocks, so it reaches block b at its k_i-th send,
// k_i = (b − i·G/P) mod G, and the hosts send in turn, one packet each
// every P·δe cycles: host i's packet of block b arrives at (k_i·P + i)·δe.
// The leaves of a block thus arrive as a contiguous range of children
// growing downwards (i, i−1, …, 0, P−1, …), δc = G·δe apart, and a binary
// tree over children holds at any time only the aligned pieces of the
// range that has arrived, not the (P−1)/log P of leaves in random order.
//
// The replay runs the tree handler (handlers.Dense, Figure 9) for those
// arrivals on the cores the scheduler gives them: the blocks are spread
// over the K/S core subsets as the scheduler spreads them (block b on
// subset b mod K/S), and a subset's S cores serve its blocks' packets in
// the order they arrive: a handler starts when its packet has arrived and
// one of those cores is free (§4: "the packet waits in the input buffers
// memory until a core becomes available"). It allocates its leaf buffer
// then and copies the packet in (D cycles); then, level by level, if the
// sibling subtree's partial is stored it folds it (L cycles, both buffers
// held) and frees one, else it stores its partial and ends; the handler
// that folds the root copies the result out (2·D: to the host and to the
// retransmission store) and frees it. Handlers on different cores run
// concurrently; no buffer is shared, so none waits for a lock. Copies cost
// 0 unless CountCopies. With δc fixed (SameBlockInterArrival) the packets
// come δe = δc/G apart.
//
// The model describes a switch that keeps receiving such allreduces, so
// the replay continues the stream with further rounds of G blocks, each
// staggered alike and numbered on, until every subset serves a few blocks
// (treeSubsetBlocks), and it averages over the blocks of the sampled
// subsets (treeSampleBlocks) but those of the first and the last round,
// which have no neighbours on their cores before or after them. A
// subset's blocks are G/(K/S) per round or fewer: with S = 1 and G ≥ K the
// blocks of one core wait for each other, with S = 8 and small G a block's
// own P packets wait for the subset's 8 cores.
func treeBufferCycles(p Params, g, deltaE float64) float64 {
	G := max(1, int(g))
	if p.SameBlockInterArrival > 0 {
		deltaE = p.SameBlockInterArrival / float64(G) // δc = G·δe
	}
	r := &treeReplay{P: p.Hosts, S: p.SubsetS, L: p.CyclesPerPacket, D: copyCycles(p), G: G, deltaE: deltaE}
	r.pow2, r.hasLeaves = heapTree(r.P)
	subsets := max(1, p.Cores()/r.S)
	// The switch keeps receiving such allreduces (rounds of G blocks, each
	// staggered alike, numbered on): replay enough rounds that every subset
	// serves a few blocks, and count the blocks of all but the first and
	// the last round, which have no neighbours before or after them.
	r.rounds = 1
	if G < treeSubsetBlocks*subsets {
		r.rounds = (treeSubsetBlocks*subsets+G-1)/G + 2
	}
	nblk := r.rounds * G
	m := (nblk + subsets - 1) / subsets
	subsets = min(subsets, nblk)
	nc := min(subsets, max(1, treeSampleBlocks/m))
	var total float64
	var blocks int
	for j := range nc {
		r.arrivals((2*j+1)*subsets/(2*nc), subsets, nblk)
		r.serve()
		for b, ok := range r.counted {
			if ok {
				total += r.perBlock[b]
				blocks++
			}
		}
	}
	return total / float64(max(1, blocks))
}

// treeReplay is treeBufferCycles's replay of one core subset at a time,
// with its scratch space reused from subset to subset.
type treeReplay struct {
	P, S, G, rounds int
	L, D, deltaE    float64
	pow2            int
	hasLeaves       func(n int) bool

	arr      []treeArrival // the subset's packets, by arrival
	nb       int           // the subset's blocks
	counted  []bool        // block → counted (not of the first or last round)
	perBlock []float64     // block → buffer-cycles
	stored   []float64     // block × heap node → when its stored partial was allocated, or −1
	q        treeSteps
	node     []int     // handler → the heap node it is at
	alloc    []float64 // handler → when its buffer was allocated
}

// treeArrival is one packet of a replayed block.
type treeArrival struct {
	t     float64
	block int // index among the subset's blocks
	host  int
}

// arrivals lists, in arrival order, the packets of the blocks of subset c
// (every subsets-th of nblk blocks), staggered as hosts send them.
func (r *treeReplay) arrivals(c, subsets, nblk int) {
	r.arr, r.counted, r.nb = r.arr[:0], r.counted[:0], 0
	for b := c; b < nblk; b += subsets {
		rd, jb := b/r.G, b%r.G
		for i := range r.P {
			k := rd*r.G + ((jb-i*r.G/r.P)%r.G+r.G)%r.G
			t := float64(k*r.P+i) * r.deltaE
			r.arr = append(r.arr, treeArrival{t: t, block: r.nb, host: i})
		}
		r.counted = append(r.counted, r.rounds == 1 || (rd > 0 && rd < r.rounds-1))
		r.nb++
	}
	slices.SortStableFunc(r.arr, func(x, y treeArrival) int { return cmp.Compare(x.t, y.t) })
}

// serve runs the subset's S cores over its arrivals, filling perBlock.
func (r *treeReplay) serve() {
	n, nb, pow2 := len(r.arr), r.nb, r.pow2
	r.stored = slices.Grow(r.stored[:0], nb*2*pow2)[:nb*2*pow2]
	for i := range r.stored {
		r.stored[i] = -1
	}
	q := &r.q
	q.t = slices.Grow(q.t[:0], n)[:n]
	q.idx = q.idx[:0]
	r.node = slices.Grow(r.node[:0], n)[:n]
	r.alloc = slices.Grow(r.alloc[:0], n)[:n]
	r.perBlock = slices.Grow(r.perBlock[:0], nb)[:nb]
	clear(r.perBlock)
	free := r.S
	var waiting []int
	start := func(h int, t float64) {
		free--
		r.alloc[h], r.node[h], q.t[h] = t, pow2+r.arr[h].host, t+r.D
		heap.Push(q, h)
	}
	end := func(t float64) {
		free++
		if len(waiting) > 0 {
			h := waiting[0]
			waiting = waiting[1:]
			start(h, t)
		}
	}
	for next := 0; next < n || q.Len() > 0; {
		if next < n && (q.Len() == 0 || r.arr[next].t <= q.t[q.idx[0]]) {
			if free > 0 {
				start(next, r.arr[next].t)
			} else {
				waiting = append(waiting, next)
			}
			next++
			continue
		}
		h := q.idx[0]
		if t := q.t[h]; r.step(h, t) {
			heap.Pop(q)
			end(t)
			continue
		}
		heap.Fix(q, 0)
	}
}

// step advances handler h, due at t, by one level of its block's tree. It
// reports whether the handler ended (its core is free); otherwise its node
// and its next step's cycle have moved on.
func (r *treeReplay) step(h int, t float64) (ended bool) {
	b := r.arr[h].block
	st := r.stored[b*2*r.pow2 : (b+1)*2*r.pow2]
	nd := r.node[h]
	switch {
	case nd == 0: // the result is out: the core is free
		return true
	case nd == 1: // the root: copy the result out and free it
		r.perBlock[b] += t + 2*r.D - r.alloc[h]
		r.q.t[h] += 2 * r.D
	case !r.hasLeaves(nd ^ 1):
	case st[nd^1] >= 0: // fold the sibling's partial, free one
		r.perBlock[b] += t + r.L - st[nd^1]
		st[nd^1] = -1
		r.q.t[h] += r.L
	default: // store the partial and end
		st[nd] = r.alloc[h]
		return true
	}
	r.node[h] = nd >> 1
	return false
}

// treeSubsetBlocks is how many blocks each core subset serves, at least,
// in treeBufferCycles's replay of a switch that keeps receiving
// allreduces.
const treeSubsetBlocks = 4

// treeSampleBlocks bounds the blocks treeBufferCycles replays (P at most
// 256 replayed blocks of P handlers each keeps one evaluation within
// milliseconds).
const treeSampleBlocks = 256

// treeSteps orders the tree handlers of one block by the cycle of their
// next step (then by arrival, to keep ties deterministic).
type treeSteps struct {
	t   []float64
	idx []int
}

func (q *treeSteps) Len() int { return len(q.idx) }
func (q *treeSteps) Less(a, b int) bool {
	ia, ib := q.idx[a], q.idx[b]
	return q.t[ia] < q.t[ib] || (q.t[ia] == q.t[ib] && ia < ib)
}
func (q *treeSteps) Swap(a, b int) { q.idx[a], q.idx[b] = q.idx[b], q.idx[a] }
func (q *treeSteps) Push(x any)    { q.idx = append(q.idx, x.(int)) }
func (q *treeSteps) Pop() any {
	n := len(q.idx) - 1
	x := q.idx[n]
	q.idx = q.idx[:n]
	return x
}

// copyCycles is a DMA copy of one packet, or 0 where the model takes
// copies as free (CountCopies off).
func copyCycles(p Params) float64 {
	if p.CountCopies {
		return p.DMACycles
	}
	return 0
}

// heapTree is the fixed binary tree over P children that the tree handler
// folds along (handlers.Dense): child c is heap node pow2+c, and
// hasLeaves(n) reports whether the subtree under node n holds a child.
func heapTree(P int) (pow2 int, hasLeaves func(n int) bool) {
	pow2 = 1 << bits.Len(uint(P-1)) // 1 for one child
	return pow2, func(n int) bool {
		shift := bits.Len(uint(pow2)) - bits.Len(uint(n))
		return (n<<shift)-pow2 < P
	}
}
