package handlers

import "sync"

// poolShards is how many stacks a workPool keeps. A record taken on
// cluster c comes from stack c mod poolShards and goes back to it, so
// that a job's records stay with the clusters that use them: a switch
// with several readers steers each block to one reader and its home
// cluster is block mod clusters, so each reader's CPU keeps reusing records
// whose cache lines it already holds, instead of taking the one another
// CPU freed last and missing on its bitmap (docs/PERFORMANCE.md).
const poolShards = 8

// workPool is a handler's fixed set of block states: stacks under a lock
// each, a state taken when a block opens and put back when it closes, so
// that no packet allocates. Its size bounds the blocks open at once. A
// stack that is empty takes from the others, so a take fails only when
// every stack was found empty.
//
// The stacks are an allocation of their own (reserve), 1024 bytes, which
// the Go allocator places on a 1024-byte boundary: each stack is exactly
// one line pair (linePair). Held inside the handler's struct, as they
// were, they began wherever the fields before them ended, and each
// stack's lock shared a line with its neighbour's, which the other reader
// takes: with the two vCPUs on separate dies, every block's take and put
// waited for that line to come across; a line each, they still came
// across with their pair (docs/PERFORMANCE.md).
type workPool[T any] struct {
	shards *[poolShards]poolShard[T]
}

// poolShard is one stack, on a line pair of its own.
type poolShard[T any] struct {
	mu   sync.Mutex
	free []*T
	_    [linePair - 32]byte // the lock and the slice take 32
}

// reserve makes the stacks and gives every one room for n states, so that
// put never grows one: a pool of n states holds at most n in any stack.
func (p *workPool[T]) reserve(n int) {
	p.shards = new([poolShards]poolShard[T])
	for i := range p.shards {
		p.shards[i].free = make([]*T, 0, n)
	}
}

// firstShard is the stack state i of n starts in: the states in order, in
// runs of n/poolShards a stack. The states of a run lie side by side in
// memory (one allocation for Dense's, allocated in turn for Sparse's), so
// the states a reader's clusters use first do not share cache lines with
// another reader's, as every other one did when they were dealt out in
// turn.
func firstShard(i, n int) uint8 { return uint8(i * poolShards / n) }

// shardOf is the stack of cluster c: where the states it takes go back.
func shardOf(c int) uint8 { return uint8(c % poolShards) }

// take pops a state from stack shard or, when it is empty, another's. It
// returns nil when every stack is empty.
func (p *workPool[T]) take(shard uint8) *T {
	for i := range poolShards {
		s := &p.shards[(int(shard)+i)%poolShards]
		s.mu.Lock()
		if n := len(s.free); n > 0 {
			w := s.free[n-1]
			s.free = s.free[:n-1]
			s.mu.Unlock()
			return w
		}
		s.mu.Unlock()
	}
	return nil
}

// put returns a state to stack shard.
func (p *workPool[T]) put(w *T, shard uint8) {
	s := &p.shards[shard]
	s.mu.Lock()
	s.free = append(s.free, w)
	s.mu.Unlock()
}

// len is how many states are in the pool now.
func (p *workPool[T]) len() int {
	n := 0
	for i := range p.shards {
		s := &p.shards[i]
		s.mu.Lock()
		n += len(s.free)
		s.mu.Unlock()
	}
	return n
}
