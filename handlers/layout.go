package handlers

import "math/bits"

// Where a job's block records lie in its block table.

// MaxSteerRun is the longest run of consecutive blocks a switch steers to
// one reader (DenseConfig.SteerRun, SparseConfig.SteerRun).
const MaxSteerRun = 1 << 10

// blockRegionBits is log2 of a block table's regions (blockLayout).
const blockRegionBits = 4

// blockRegions is how many regions a block table is cut into: one for
// each owner key, (b / run) mod blockRegions (blockLayout).
const blockRegions = 1 << blockRegionBits

// blockLayout is where block b's record lies in a job's block table of
// one cache line a record. The table is cut into blockRegions regions,
// one for each owner key (b / run) mod blockRegions, each holding the
// records of its blocks in block order, back to back. A switch's readers
// take blocks by (b / SteerRun) mod readers (its data port group) and its
// clusters by b mod clusters, so with run = SteerRun, and readers and
// clusters that divide blockRegions (run 1 for clusters), every record a
// reader (or a cluster) writes lies in its own regions: two CPUs write
// neighbouring records only at a region's two ends, not all over the
// table.
//
// Neighbouring records of two readers cost a reader's CPU a trip for its
// own line now and then: a CPU's prefetchers fetch the lines next to the
// ones it uses, a line's 128-byte pair and beyond, taking them from the
// CPU that writes them. With the records in line pairs of one reader
// each (the layout before this one), the block lock's compare-and-swap
// took four times the samples a packet with one switch's two readers as
// with two switches of one reader each, and as many once each reader's
// records lay together (BenchmarkGenPath readers-2 and twins,
// docs/PERFORMANCE.md).
//
// A region starts where the one before it ends; the table has exactly
// one record a block.
type blockLayout struct {
	shift uint8                // log2 of the run
	start [blockRegions]uint32 // region k's first record
}

// newBlockLayout lays out a table of n blocks for owners that take runs
// of run blocks (a power of two, at most MaxSteerRun; 0 is 1).
func newBlockLayout(n uint32, run int) blockLayout {
	l := blockLayout{shift: uint8(bits.TrailingZeros(uint(max(run, 1))))}
	r := uint32(1) << l.shift
	period := r * blockRegions // every key's run once
	whole, rest := n/period, n%period
	at := uint32(0)
	for k := range uint32(blockRegions) {
		l.start[k] = at
		at += whole*r + min(r, rest-min(rest, k*r)) // key k's blocks: its run in every whole period, and what the last one has of it
	}
	return l
}

// slot is block b's record, for b below the table's blocks: in the region
// of b's key, after the blocks of that key below b.
func (l *blockLayout) slot(b uint32) uint32 {
	key := b >> l.shift & (blockRegions - 1)
	rank := b>>(l.shift+blockRegionBits)<<l.shift | b&(1<<l.shift-1)
	return l.start[key] + rank
}
