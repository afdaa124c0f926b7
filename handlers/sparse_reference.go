package handlers

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/flare-net/flare/wire"
)

// ErrUnsorted is wrapped by MergeSparse when the switch's result pairs are
// not in strictly increasing index order, as the switch always sends them.
var ErrUnsorted = errors.New("handlers: sparse result not sorted by strictly increasing index")

// sparseOp reports whether op is defined on sparse vectors: an index a host
// does not send is no operand, which is the identity of sum, min and max
// only (a product or a bitwise and would need the absent zeros).
func sparseOp(op wire.Op) bool { return op == wire.OpSum || op == wire.OpMin || op == wire.OpMax }

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
	if !sparseOp(op) {
		return dst, fmt.Errorf("merge sparse: op %v: %w", op, ErrUnsupported)
	}
	k, err := KernelFor(dt, op)
	if err != nil {
		return dst, err
	}
	res, err := wire.PairsOf(result, dt)
	if err != nil {
		return dst, fmt.Errorf("merge sparse: result of %d bytes is not whole %s pairs: %w", len(result), dt, ErrLength)
	}
	sp, err := wire.PairsOf(spill, dt)
	if err != nil {
		return dst, fmt.Errorf("merge sparse: spill of %d bytes is not whole %s pairs: %w", len(spill), dt, ErrLength)
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

// sparseGroup is one index of a sparse reduction and its operands, in rank
// order and, within a rank, in the order that rank listed them.
type sparseGroup struct {
	idx  uint32
	vals [][]byte
}

// groupSparse collects the operands of every index of inputs (pairs of dt,
// one list per rank), sorted by index.
func groupSparse(dt wire.DType, inputs [][]byte) ([]sparseGroup, error) {
	type operand struct {
		idx uint32
		val []byte
	}
	var all []operand
	for r, in := range inputs {
		p, err := wire.PairsOf(in, dt)
		if err != nil {
			return nil, fmt.Errorf("sparse input %d of %d bytes is not whole %s pairs: %w", r, len(in), dt, ErrLength)
		}
		for i := range p.Len() {
			all = append(all, operand{p.Index(i), p.Value(i)})
		}
	}
	slices.SortStableFunc(all, func(a, b operand) int { return cmp.Compare(a.idx, b.idx) })
	var groups []sparseGroup
	for _, o := range all {
		if n := len(groups); n > 0 && groups[n-1].idx == o.idx {
			groups[n-1].vals = append(groups[n-1].vals, o.val)
			continue
		}
		groups = append(groups, sparseGroup{idx: o.idx, vals: [][]byte{o.val}})
	}
	return groups, nil
}

// SparseReference reduces sparse inputs, one list of (index, value) pairs
// of dt per rank in any order, with plain scalar code that shares nothing
// with the switch or MergeSparse: the value of an index is op over the
// values present for it, folded in rank order (and list order within a
// rank); an absent index is no operand, and a value of zero is a value.
// The output is the wire pairs, sorted by strictly increasing index.
func SparseReference(dt wire.DType, op wire.Op, inputs [][]byte) ([]byte, error) {
	if !dt.Valid() || !sparseOp(op) {
		return nil, fmt.Errorf("sparse reference: %s on %s: %w", op, dt, ErrUnsupported)
	}
	groups, err := groupSparse(dt, inputs)
	if err != nil {
		return nil, err
	}
	sz := dt.Size()
	out := make([]byte, 0, len(groups)*(wire.IndexLen+sz))
	val := make([]byte, sz)
	for _, g := range groups {
		if dt.IsFloat() {
			acc := specLoadFloat(dt, g.vals[0])
			for _, v := range g.vals[1:] {
				acc = specFloat(dt, op, acc, specLoadFloat(dt, v))
			}
			specStoreFloat(dt, val, acc)
		} else {
			acc := specLoadInt(dt, g.vals[0])
			for _, v := range g.vals[1:] {
				acc = specInt(dt, op, acc, specLoadInt(dt, v))
			}
			specStoreInt(dt, val, acc)
		}
		out = wire.AppendPair(out, g.idx, val)
	}
	return out, nil
}

// CheckSparse compares got, sorted wire pairs, with the sparse reduction of
// inputs. The indices must be exactly the reference's. Integer values and
// min/max must match to the bit; a float sum of k operands may differ from
// the rank-order reference by rounding alone, |got − ref| ≤ 2(k−1)·u·Σ|xᵢ|
// plus one subnormal step per operation, the bound Check uses for dense
// sums (the switch folds in arrival order, the hosts add the spills last).
func CheckSparse(dt wire.DType, op wire.Op, inputs [][]byte, got []byte) error {
	want, err := SparseReference(dt, op, inputs)
	if err != nil {
		return err
	}
	groups, _ := groupSparse(dt, inputs) // checked by SparseReference
	g, err := wire.PairsOf(got, dt)
	if err != nil {
		return fmt.Errorf("result of %d bytes is not whole %s pairs", len(got), dt)
	}
	w, _ := wire.PairsOf(want, dt)
	for i := range min(g.Len(), w.Len()) {
		if g.Index(i) != w.Index(i) {
			return fmt.Errorf("pair %d: index %d, want %d", i, g.Index(i), w.Index(i))
		}
		gv, wv := g.Value(i), w.Value(i)
		k := len(groups[i].vals)
		if !dt.IsFloat() || op != wire.OpSum || k <= 2 {
			if string(gv) != string(wv) {
				return fmt.Errorf("index %d: got %s, want %s", g.Index(i), valueString(dt, gv), valueString(dt, wv))
			}
			continue
		}
		gf, wf := specLoadFloat(dt, gv), specLoadFloat(dt, wv)
		if gf == wf || (math.IsNaN(gf) && math.IsNaN(wf)) {
			continue
		}
		var scale float64
		for _, v := range groups[i].vals {
			scale += math.Abs(specLoadFloat(dt, v))
		}
		ops := float64(k - 1)
		bound := 2*ops*unitRoundoff(dt)*scale + ops*smallestSubnormal(dt)
		if math.Abs(gf-wf) > bound || math.IsInf(gf, 0) != math.IsInf(wf, 0) {
			return fmt.Errorf("index %d: got %g, want %g (bound %g over %d operands)", g.Index(i), gf, wf, bound, k)
		}
	}
	if g.Len() != w.Len() {
		return fmt.Errorf("%d pairs, want %d", g.Len(), w.Len())
	}
	return nil
}

// valueString formats one little-endian element of dt for an error message.
func valueString(dt wire.DType, v []byte) string {
	if dt.IsFloat() {
		return fmt.Sprintf("%g", specLoadFloat(dt, v))
	}
	return fmt.Sprintf("%d", specLoadInt(dt, v))
}
