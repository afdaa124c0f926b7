//go:build amd64 && !purego

package elem

import "golang.org/x/sys/cpu"

// The float sums, the switch's most common kernel, run eight float32 or
// four float64 lanes at once with AVX where the CPU has it: the same IEEE
// 754 addition per element as the Go loop, so the results are the same to
// the bit (TestFloatSumsMatchLoop), in about a quarter of the time
// (BenchmarkKernel). The tail that does not fill an iteration, and CPUs
// without AVX, take the Go loop.

// useAVX says the CPU and the OS support AVX (x/sys/cpu checks both).
var useAVX = cpu.X86.HasAVX

//go:noescape
func addFloat32sAVX(d, s []float32)

//go:noescape
func addFloat64sAVX(d, s []float64)

func sumFloat32s(d, s []float32) {
	s = s[:len(d)]
	n := 0
	if useAVX {
		if n = len(d) &^ 31; n > 0 {
			addFloat32sAVX(d[:n], s[:n])
		}
	}
	sumInto(d[n:], s[n:])
}

func sumFloat64s(d, s []float64) {
	s = s[:len(d)]
	n := 0
	if useAVX {
		if n = len(d) &^ 15; n > 0 {
			addFloat64sAVX(d[:n], s[:n])
		}
	}
	sumInto(d[n:], s[n:])
}
