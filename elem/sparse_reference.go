package elem

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/flare-net/flare/wire"
)

// SparseOp reports whether op is defined on sparse vectors: an index a host
// does not send is no operand, which is the identity of sum, min and max
// only (a product or a bitwise and would need the absent zeros).
func SparseOp(op wire.Op) bool { return op == wire.OpSum || op == wire.OpMin || op == wire.OpMax }

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
	if !dt.Valid() || !SparseOp(op) {
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
// A NaN matches only a NaN.
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
		bound := roundingBound(dt, float64(k-1), scale)
		if math.IsNaN(gf) || math.IsNaN(wf) || math.Abs(gf-wf) > bound || math.IsInf(gf, 0) != math.IsInf(wf, 0) {
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
