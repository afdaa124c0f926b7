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
// packets (Params.TreeArrivalOrder, docs/MODEL.md).
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
// treeBufferCycles replays the tree handler (handlers.Dense, Figure 9) for
// those arrivals, with no contention (no buffer is shared): a handler
// allocates its leaf buffer on arrival and copies the packet in (D
// cycles); then, level by level, if the sibling subtree's partial is
// stored it folds it (L cycles, both buffers held) and frees one, else it
// stores its partial and ends; the handler that folds the root copies the
// result out (2·D: to the host and to the retransmission store) and frees
// it. Copies cost 0 unless CountCopies. With δc fixed
// (SameBlockInterArrival) the j-th arrival is at j·δc. It averages over up
// to treeSampleBlocks blocks spread evenly over the stagger group.
func treeBufferCycles(p Params, g, deltaE float64) float64 {
	if min(p.SubsetS, p.Hosts) == 1 && p.Hosts > 1 {
		return treeBufferCyclesServed(p, g)
	}
	P := p.Hosts
	L, D := p.CyclesPerPacket, copyCycles(p)
	G := max(1, int(g))
	pow2, hasLeaves := heapTree(P)
	type arrival struct {
		host int
		k    int
	}
	arr := make([]arrival, P)
	stored := make([]float64, 2*pow2) // cycle a node's partial was stored, or -1
	node := make([]int, P)            // heap node each handler is at
	alloc := make([]float64, P)       // cycle its buffer was allocated
	q := &treeSteps{t: make([]float64, P), idx: make([]int, 0, P)}
	// Blocks of one group differ in which host comes first and in the
	// phase of the sends: sample nb of them spread evenly, which for
	// G ≥ P gives every host the lead once when nb = P.
	nb := min(G, P, treeSampleBlocks)
	total := 0.0
	for j := range nb {
		b := (2*j + 1) * G / (2 * nb)
		for i := range P {
			off := i * G / P
			arr[i] = arrival{host: i, k: ((b-off)%G + G) % G}
		}
		slices.SortFunc(arr, func(x, y arrival) int {
			if c := cmp.Compare(x.k, y.k); c != 0 {
				return c
			}
			return cmp.Compare(x.host, y.host)
		})
		q.idx = q.idx[:0]
		for pos, a := range arr {
			t := float64(a.k*P+a.host) * deltaE
			if p.SameBlockInterArrival > 0 {
				t = float64(pos) * p.SameBlockInterArrival
			}
			q.t[pos], node[pos], alloc[pos] = t+D, pow2+a.host, t
			q.idx = append(q.idx, pos)
		}
		heap.Init(q)
		for i := range stored {
			stored[i] = -1
		}
		var cycles float64
		// Each step is one level of the tree, taken at its cycle.
		for q.Len() > 0 {
			h := q.idx[0]
			n := node[h]
			switch {
			case n == 1: // the root: copy the result out and free it
				cycles += q.t[h] + 2*D - alloc[h]
				heap.Pop(q)
				continue
			case !hasLeaves(n ^ 1):
			case stored[n^1] >= 0: // fold the sibling's partial, free one
				cycles += q.t[h] + L - stored[n^1]
				stored[n^1] = -1
				q.t[h] += L
			default: // store the partial and end
				stored[n] = alloc[h]
				heap.Pop(q)
				continue
			}
			node[h] = n >> 1
			heap.Fix(q, 0)
		}
		// A stored partial is held from its allocation until the fold that
		// consumes it ends; both are counted above (the folding handler's
		// own buffer stays allocated, so its lifetime continues upward).
		total += cycles
	}
	return total / float64(nb)
}

// treeBufferCyclesServed is treeBufferCycles with S = 1: every packet of a
// block runs on the block's one core, so its handlers run one after
// another, not each at its arrival. The blocks of the stagger group are
// spread over the K cores as the scheduler spreads them (block b on core
// b mod K, home cluster b mod clusters), so a core serves the
// m = ⌈G/K⌉ blocks b, b+K, b+2K, … of the group, one packet at a time in
// the order they arrive: host i's packet of block b at (k_i·P + i)·δ (the
// staggered order above, at the hosts' own δ, not δe). A handler starts when
// its packet has arrived and the core has finished the one before:
// start = max(arrival, the previous end). When the hosts outrun the switch
// (δ < τ/K) the core thus works back to back through a backlog; when the
// links bind it mostly starts packets at arrival. A handler's steps are
// the ones the model charges: D to copy the leaf in, L per fold (both
// buffers held), 2·D to copy the root out. A handler never waits for
// another handler of its block, which runs on the same core, so it runs
// to its end at once; the cycles it takes push back every packet behind
// it. Partials wait in their buffers while the core serves the other
// blocks' packets, and a leaf that waits behind a long climb holds no
// buffer until it starts.
func treeBufferCyclesServed(p Params, g float64) float64 {
	P, K := p.Hosts, p.Cores()
	L, D := p.CyclesPerPacket, copyCycles(p)
	G := max(1, int(g))
	pow2, hasLeaves := heapTree(P)
	type arrival struct {
		t     float64
		block int // index among the core's blocks
		host  int
	}
	cores := min(K, G)           // cores that serve blocks of the group
	m := (G + cores - 1) / cores // blocks per core, at most
	nc := min(cores, max(1, treeSampleBlocks/m))
	arr := make([]arrival, 0, m*P)
	stored := make([]float64, m*2*pow2) // per block and heap node: cycle its partial was allocated, or -1
	var total float64
	var blocks int
	for j := range nc {
		c := (2*j + 1) * cores / (2 * nc)
		arr = arr[:0]
		nb := 0
		for b := c; b < G; b += cores {
			for i := range P {
				k := ((b-i*G/P)%G + G) % G
				t := float64(k*P+i) * p.InterArrival
				if p.SameBlockInterArrival > 0 {
					t = float64(k) * p.SameBlockInterArrival
				}
				arr = append(arr, arrival{t: t, block: nb, host: i})
			}
			nb++
		}
		slices.SortStableFunc(arr, func(x, y arrival) int { return cmp.Compare(x.t, y.t) })
		for i := range stored[:nb*2*pow2] {
			stored[i] = -1
		}
		free := 0.0 // cycle the core finishes the handler before
		for _, a := range arr {
			st := stored[a.block*2*pow2 : (a.block+1)*2*pow2]
			start := max(a.t, free)
			t := start + D
			n := pow2 + a.host
			for {
				if n == 1 { // the root: copy the result out and free it
					t += 2 * D
					total += t - start
					break
				}
				if sib := n ^ 1; hasLeaves(sib) {
					if st[sib] < 0 { // store the partial and end
						st[n] = start
						break
					}
					// Fold the sibling's partial, both held, and free it.
					total += t + L - st[sib]
					st[sib] = -1
					t += L
				}
				n >>= 1
			}
			free = t
		}
		blocks += nb
	}
	return total / float64(blocks)
}

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
