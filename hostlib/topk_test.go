package hostlib

import (
	"math"
	"slices"
	"testing"
)

func TestTopK(t *testing.T) {
	g := []float32{0.1, -5, 3, 0, 3, -0.2, 7, 1}
	idx, val, err := TopK(g, 0.5, nil)
	if err != nil {
		t.Fatal(err)
	}
	// |7| at 6, |-5| at 1, then the tie |3| at 2 and 4: the lower index wins.
	if !slices.Equal(idx, []uint32{1, 2, 4, 6}) || !slices.Equal(val, []float32{-5, 3, 3, 7}) {
		t.Errorf("TopK = %v %v", idx, val)
	}
	if _, _, err := TopK(g, 0, nil); err == nil {
		t.Error("fraction 0 accepted")
	}
	if _, _, err := TopK(g, 0.5, make([]float32, 3)); err == nil {
		t.Error("a residual of the wrong length accepted")
	}
}

// Error feedback loses nothing: over many calls, what was sent plus what
// is left in the residual is exactly the sum of the gradients.
func TestTopKErrorFeedback(t *testing.T) {
	const n, calls = 1000, 20
	residual := make([]float64, n)
	sent := make([]float64, n)
	total := make([]float64, n)
	for c := range calls {
		g := make([]float64, n)
		for i := range g {
			g[i] = math.Sin(float64(i*7+c*13)) * float64(1+i%5)
			total[i] += g[i]
		}
		idx, val, err := TopK(g, 0.01, residual)
		if err != nil {
			t.Fatal(err)
		}
		if len(idx) != 10 {
			t.Fatalf("call %d: %d entries, want 10", c, len(idx))
		}
		for j, i := range idx {
			sent[i] += val[j]
			if residual[i] != 0 {
				t.Fatalf("call %d: residual of a sent entry %d is %v", c, i, residual[i])
			}
		}
	}
	for i := range total {
		if d := math.Abs(sent[i] + residual[i] - total[i]); d > 1e-9 {
			t.Fatalf("element %d: sent %v + residual %v != total %v", i, sent[i], residual[i], total[i])
		}
	}
}

// The edges of a selection: k rounds up, a whole gradient at fraction 1,
// the lower index at a tie across the cut, a NaN before any number (so a
// diverged gradient is sent, not hidden), and a residual of another
// length either way refused.
func TestTopKEdges(t *testing.T) {
	nan := float32(math.NaN())
	for _, tc := range []struct {
		grad     []float32
		fraction float64
		want     []uint32
	}{
		{[]float32{1, 2, 3, 4, 5, 6, 7}, 0.5, []uint32{3, 4, 5, 6}}, // ⌈3.5⌉ = 4
		{[]float32{1, -2, 0, 4}, 1, []uint32{0, 1, 2, 3}},
		{[]float32{3, -3, 1, 3}, 0.5, []uint32{0, 1}},
		{[]float32{1, nan, 5, 2}, 0.25, []uint32{1}},
		{[]float32{9, 1, nan, 5}, 0.5, []uint32{0, 2}},
	} {
		idx, _, err := TopK(tc.grad, tc.fraction, nil)
		if err != nil || !slices.Equal(idx, tc.want) {
			t.Errorf("TopK(%v, %v) = %v, %v; want %v", tc.grad, tc.fraction, idx, err, tc.want)
		}
	}
	for _, n := range []int{3, 5} {
		if _, _, err := TopK(make([]float32, 4), 0.5, make([]float32, n)); err == nil {
			t.Errorf("a residual of %d elements for a gradient of 4 accepted", n)
		}
	}
	if _, _, err := TopK(make([]float32, 4), 1.01, nil); err == nil {
		t.Error("fraction 1.01 accepted")
	}
}
