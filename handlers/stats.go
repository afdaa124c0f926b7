package handlers

import (
	"fmt"
	"sync/atomic"
)

// BlockStats are the counters every design keeps of its blocks, their
// generations and their results: the part of DenseStats and SparseStats
// that means the same for both. Atomics, and Counts for those every block
// or packet adds to: the daemon turns them into metrics at scrape time.
type BlockStats struct {
	Packets   Count        // packets admitted and aggregated (a dense packet is one child's contribution)
	Completed Count        // blocks completed and emitted
	Duplicate atomic.Int64 // packets already admitted, or of a block already emitted
	Stale     atomic.Int64 // packets of an older generation
	Invalid   atomic.Int64 // packets that do not fit the job, or (sparse) contradict the child's stream
	NoBuffer  atomic.Int64 // packets dropped because the quota could not hold their block
	Abandoned atomic.Int64 // unfinished blocks dropped when a newer generation started
	Resent    atomic.Int64 // stored results sent again to a child that retransmitted
	ResentUp  atomic.Int64 // non-root: stored partials sent up again for a child's retransmission
	Down      atomic.Int64 // non-root: the parent's results passed down to the children
	// LatencyNs sums, over completed blocks, the time from the handler of a
	// block's first packet to the one that completed it (Task.Started: ns
	// in real time, cycles in virtual time): the time a block holds its
	// buffers, Little's law's W.
	LatencyNs Count
}

// String gives the counters that explain a stuck or refused block, on one
// line ("packets=12 completed=3 dup=0 ..."), for error messages.
func (s *BlockStats) String() string {
	return fmt.Sprintf("packets=%d completed=%d dup=%d stale=%d invalid=%d nobuf=%d",
		s.Packets.Load(), s.Completed.Load(), s.Duplicate.Load(), s.Stale.Load(), s.Invalid.Load(), s.NoBuffer.Load())
}

// String gives BlockStats' line with the sparse counters after it.
func (s *SparseStats) String() string {
	return fmt.Sprintf("%s badindex=%d spilled=%d", s.BlockStats.String(), s.BadIndex.Load(), s.Spilled.Load())
}

// Count is a counter the cores add to a packet or a block at a time, from
// several CPUs at once: one count per workPool stack, each on a line pair
// of its own (linePair), summed when read. A block's packets and its
// completion add to its record's stack, so the readers of a group, whose
// blocks' records keep to stacks of their own, each write their own line
// instead of one that every CPU writes.
type Count struct {
	shards [poolShards]struct {
		n atomic.Int64
		_ [linePair - 8]byte
	}
}

// Add adds n to stack shard's count.
func (c *Count) Add(shard uint8, n int64) { c.shards[shard%poolShards].n.Add(n) }

// Load is the count.
func (c *Count) Load() int64 {
	n := int64(0)
	for i := range c.shards {
		n += c.shards[i].n.Load()
	}
	return n
}
