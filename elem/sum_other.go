//go:build !amd64 || purego

package elem

// Without the amd64 vector loops (sum_amd64.go) the sums are the Go loop.

func sumFloat32s(d, s []float32) { sumInto(d, s) }
func sumFloat64s(d, s []float64) { sumInto(d, s) }
func sumInt32s(d, s []int32)     { sumInto(d, s) }
func sumInt64s(d, s []int64)     { sumInto(d, s) }

// vectorKernels leaves the native kernels as they are: no vector loops.
func vectorKernels(*[dtypeSlots][opSlots]kernelPair) {}
