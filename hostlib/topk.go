package hostlib

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Float is the element types TopK sparsifies.
type Float interface{ ~float32 | ~float64 }

// TopK sparsifies a dense gradient by magnitude for SparseAllReduce: it
// returns the indices (increasing) and values of the k = ceil(fraction ×
// len(grad)) entries of largest absolute value (ties broken by the lower
// index, so every run picks the same ones), fraction in (0, 1].
//
// With error feedback, residual (len(grad), zero at first) carries what
// earlier calls left out: TopK selects from grad + residual and leaves in
// residual everything of grad + residual it did not select, so nothing is
// lost, only delayed. Pass nil for plain top-k. grad is not modified.
func TopK[T Float](grad []T, fraction float64, residual []T) ([]uint32, []T, error) {
	if !(fraction > 0 && fraction <= 1) {
		return nil, nil, fmt.Errorf("hostlib: top-k: fraction %v: must be in (0, 1]", fraction)
	}
	if residual != nil && len(residual) != len(grad) {
		return nil, nil, fmt.Errorf("hostlib: top-k: residual of %d elements for a gradient of %d", len(residual), len(grad))
	}
	if uint64(len(grad)) > math.MaxUint32 {
		return nil, nil, fmt.Errorf("hostlib: top-k: %d elements exceed uint32 indices", len(grad))
	}
	acc := grad
	if residual != nil {
		for i := range residual {
			residual[i] += grad[i]
		}
		acc = residual
	}
	k := min(len(acc), int(math.Ceil(fraction*float64(len(acc)))))
	order := make([]uint32, len(acc))
	for i := range order {
		order[i] = uint32(i)
	}
	mag := func(i uint32) float64 { return math.Abs(float64(acc[i])) }
	// Largest magnitude first, lower index on ties; NaN counts as largest.
	slices.SortFunc(order, func(a, b uint32) int {
		ma, mb := mag(a), mag(b)
		switch {
		case math.IsNaN(ma) != math.IsNaN(mb):
			if math.IsNaN(ma) {
				return -1
			}
			return 1
		case ma != mb:
			return cmp.Compare(mb, ma)
		}
		return cmp.Compare(a, b)
	})
	idx := order[:k:k]
	slices.Sort(idx)
	val := make([]T, k)
	for j, i := range idx {
		val[j] = acc[i]
		if residual != nil {
			residual[i] = 0
		}
	}
	return idx, val, nil
}
