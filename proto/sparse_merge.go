package proto

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/wire"
)

// ErrUnsorted is wrapped by MergeSparse when the switch's result pairs are
// not in strictly increasing index order, as the switch always sends them.
var ErrUnsorted = errors.New("proto: sparse result not sorted by strictly increasing index")

// MergeSparse completes a sparse allreduce block on a host: it merges the
// switch's result pairs with the pairs the switch spilled, which it did not
// aggregate, and appends the final pairs, sorted by strictly increasing
// index, to dst. Both inputs are wire pairs of dt (index little-endian,
// then the value), as the Sparse and Spill payloads carry them, with
// indices in one frame (relative to the block, or global: the output uses
// the same). result must be sorted by strictly increasing index (the
// concatenated payloads of the switch's result packets in sequence order);
// spill may be in any order (the Spill payloads in any arrival order).
//
// For each index the value is the result's (if present) folded with op,
// then the spilled values in ascending order of their bits. The order
// depends on the pairs alone, never on their arrival, so every host
// computes the same bits from the same packets. It allocates only to grow
// dst and to sort the spills.
func MergeSparse(dst []byte, dt wire.DType, op wire.Op, result, spill []byte) ([]byte, error) {
	if !elem.SparseOp(op) {
		return dst, fmt.Errorf("merge sparse: op %v: %w", op, elem.ErrUnsupported)
	}
	k, err := elem.KernelFor(dt, op)
	if err != nil {
		return dst, err
	}
	res, err := wire.PairsOf(result, dt)
	if err != nil {
		return dst, fmt.Errorf("merge sparse: result of %d bytes is not whole %s pairs: %w", len(result), dt, elem.ErrLength)
	}
	sp, err := wire.PairsOf(spill, dt)
	if err != nil {
		return dst, fmt.Errorf("merge sparse: spill of %d bytes is not whole %s pairs: %w", len(spill), dt, elem.ErrLength)
	}
	for i := 1; i < res.Len(); i++ {
		if res.Index(i) <= res.Index(i-1) {
			return dst, fmt.Errorf("merge sparse: result pair %d has index %d after %d: %w", i, res.Index(i), res.Index(i-1), ErrUnsorted)
		}
	}
	order := sortedPairs(sp)
	ps := wire.PairSize(dt)
	dst = slices.Grow(dst, (res.Len()+sp.Len())*ps)
	i, j := 0, 0
	for i < res.Len() || j < len(order) {
		var idx uint32
		switch {
		case j == len(order) || (i < res.Len() && res.Index(i) <= sp.Index(order[j])):
			idx = res.Index(i)
			dst = append(dst, res.Pair(i)...)
			i++
		default:
			idx = sp.Index(order[j])
			dst = append(dst, sp.Pair(order[j])...)
			j++
		}
		v := dst[len(dst)-dt.Size():]
		for ; j < len(order) && sp.Index(order[j]) == idx; j++ {
			k(v, sp.Value(order[j]))
		}
	}
	return dst, nil
}

// sortedPairs returns the positions of p's pairs sorted by index, then by
// the value's bits: a canonical order, the same whatever order the pairs
// arrived in.
func sortedPairs(p wire.Pairs) []int {
	order := make([]int, p.Len())
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(p.Index(a), p.Index(b)); c != 0 {
			return c
		}
		return cmp.Compare(valueBits(p.Value(a)), valueBits(p.Value(b)))
	})
	return order
}

// valueBits reads a little-endian element of 1, 2, 4 or 8 bytes as an
// unsigned integer.
func valueBits(v []byte) uint64 {
	switch len(v) {
	case 1:
		return uint64(v[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(v))
	case 4:
		return uint64(binary.LittleEndian.Uint32(v))
	}
	return binary.LittleEndian.Uint64(v)
}
