package handlers

import (
	"fmt"
	"math/bits"
)

// Where a job's block records lie in its block table.

// MaxSteerRun is the longest run of consecutive blocks a switch steers to
// one reader (DenseConfig.SteerRun, SparseConfig.SteerRun).
const MaxSteerRun = 1 << 10

// maxRegionBits is log2 of the most regions a block table is cut into
// (blockLayout).
const maxRegionBits = 4

// blockLayout is where block b's record lies in a job's block table of
// one cache line a record. The switch's readers take the job's blocks in
// turn, run blocks at a time (block b goes to reader (b / run) mod
// readers, the data port group's steering), and the table is cut into
// as many regions as there are readers (a power of two, rounded up, at
// most 1<<maxRegionBits), one for each owner key (b / run) mod regions,
// each holding the records of its blocks in block order, back to back.
// Where the readers are a power of two, up to 16, every record a reader
// writes lies in its own region: two CPUs write neighbouring records
// only where two regions meet. With one reader the table is in block
// order.
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
	shift   uint8  // log2 of the run
	keyBits uint8  // log2 of the regions
	low     uint32 // the run's low bits: run - 1
	keys    uint32 // the key's bits: regions - 1
	start   [1 << maxRegionBits]uint32
}

// checkSteering names Readers or SteerRun of a handler's config when it is
// out of range (the config's rule, for DenseConfig and SparseConfig).
func checkSteering(readers, run int) error {
	switch {
	case readers < 0:
		return fmt.Errorf("readers = %d: must be >= 0", readers)
	case run < 0 || run > MaxSteerRun || run&(run-1) != 0:
		return fmt.Errorf("steer run = %d blocks: must be 0 or a power of two up to %d", run, MaxSteerRun)
	}
	return nil
}

// newBlockLayout lays out a table of n blocks for readers (0 is 1)
// that take runs of run blocks (a power of two up to MaxSteerRun; 0 is 1).
func newBlockLayout(n uint32, readers, run int) blockLayout {
	l := blockLayout{shift: uint8(bits.TrailingZeros(uint(max(run, 1)))),
		keyBits: uint8(min(bits.Len(uint(max(readers, 1)-1)), maxRegionBits))}
	r := uint32(1) << l.shift
	regions := uint32(1) << l.keyBits
	l.low, l.keys = r-1, regions-1
	period := r * regions // every key's run once
	whole, rest := n/period, n%period
	at := uint32(0)
	for k := range regions {
		l.start[k] = at
		at += whole*r + min(r, rest-min(rest, k*r)) // key k's blocks: its run in every whole period, and what the last one has of it
	}
	return l
}

// slot is block b's record, for b below the table's blocks: in the region
// of b's key, after the blocks of that key below b.
func (l *blockLayout) slot(b uint32) uint32 {
	s, kb := uint(l.shift)&31, uint(l.keyBits)&31 // below 32: the shifts need no check
	run := b >> s
	return l.start[run&l.keys] + (run>>kb<<s | b&l.low)
}
