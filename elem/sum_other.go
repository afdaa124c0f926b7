//go:build !amd64 || purego

package elem

// Without the amd64 AVX loops (sum_amd64.go) the float sums are the Go
// loop.

func sumFloat32s(d, s []float32) { sumInto(d, s) }

func sumFloat64s(d, s []float64) { sumInto(d, s) }
