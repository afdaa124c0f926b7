//go:build amd64 && !purego

package elem

import "golang.org/x/sys/cpu"

// The float32, float64, int32 and int64 sums, the switch's most common
// kernels, run 4–8 lanes at once with AVX (floats) and AVX2 (integers)
// where the CPU has them: the same operation per element as the Go loop
// (one IEEE 754 addition; a wrapping integer addition), so the results
// are the same to the bit (TestSumsMatchLoop), in a quarter of the time
// or less (BenchmarkKernel). The tail that does not fill an iteration,
// and CPUs without them, take the Go loop.

// x/sys/cpu checks that both the CPU and the OS support them.
var (
	useAVX  = cpu.X86.HasAVX
	useAVX2 = cpu.X86.HasAVX2
)

//go:noescape
func addFloat32sAVX(d, s []float32)

//go:noescape
func addFloat64sAVX(d, s []float64)

//go:noescape
func addInt32sAVX2(d, s []int32)

//go:noescape
func addInt64sAVX2(d, s []int64)

// vectorSum runs the vector loop vec, when on, over the largest prefix of
// d that is a multiple of lanes elements (a power of two), and the Go loop
// over the rest.
func vectorSum[T number](d, s []T, on bool, lanes int, vec func(d, s []T)) {
	s = s[:len(d)]
	n := 0
	if on {
		if n = len(d) &^ (lanes - 1); n > 0 {
			vec(d[:n], s[:n])
		}
	}
	sumInto(d[n:], s[n:])
}

func sumFloat32s(d, s []float32) { vectorSum(d, s, useAVX, 32, addFloat32sAVX) }
func sumFloat64s(d, s []float64) { vectorSum(d, s, useAVX, 16, addFloat64sAVX) }
func sumInt32s(d, s []int32)     { vectorSum(d, s, useAVX2, 32, addInt32sAVX2) }
func sumInt64s(d, s []int64)     { vectorSum(d, s, useAVX2, 16, addInt64sAVX2) }
