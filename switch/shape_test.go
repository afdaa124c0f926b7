package swtch

import (
	"testing"
)

// A sparse job's block range is what a host computes back from the block
// count, and resolving it again changes nothing: a child switch's join,
// which carries the resolved range, matches a host's that asked for the
// default.
func TestSparseBlockElemsIdempotent(t *testing.T) {
	for _, elements := range []int{1, 7, 4095, 4096, 4097, 100003, 262144, 1 << 28, min(1<<32-1, maxElements)} {
		for _, req := range []int{0, 1, 1000, 4096, 1 << 20} {
			be := sparseBlockElems(elements, req)
			blocks := (elements + be - 1) / be
			if be < 1 || blocks > 65536 || (elements+blocks-1)/blocks != be {
				t.Fatalf("elements %d, asked %d: range %d in %d blocks, which a host reads back as %d", elements, req, be, blocks, (elements+blocks-1)/blocks)
			}
			if again := sparseBlockElems(elements, be); again != be {
				t.Fatalf("elements %d, asked %d: %d, then %d when resolved again", elements, req, be, again)
			}
		}
	}
}
