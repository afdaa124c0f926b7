//go:build amd64 && !purego

package elem

import (
	"golang.org/x/sys/cpu"

	"github.com/flare-net/flare/wire"
)

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

// The vector loops run over bytes: d[i] += s[i] for the elements of the
// whole 128-byte iterations of d (the rest they leave), with len(s) >=
// len(d).
//
//go:noescape
func addFloat32sAVX(d, s []byte)

//go:noescape
func addFloat64sAVX(d, s []byte)

//go:noescape
func addInt32sAVX2(d, s []byte)

//go:noescape
func addInt64sAVX2(d, s []byte)

// vectorKernels gives the four sums, where the CPU has their vector loops,
// native kernels that call the loop on the payload's bytes themselves. The
// kernel built from the typed loop (nativeKernel) reached the loop through
// two more calls of func values, a generic view of the bytes as elements
// and the loop's own: a third of a 1 KiB float32 sum's time
// (BenchmarkKernel, docs/PERFORMANCE.md). That kernel still takes a tail
// shorter than an iteration, which a packet's payload rarely has, with
// the Go loop.
func vectorKernels(t *[dtypeSlots][opSlots]kernelPair) {
	set := func(dt wire.DType, on bool, k Kernel) {
		if on {
			vectorTails[dt] = t[dt][wire.OpSum].native
			t[dt][wire.OpSum].native = k
		}
	}
	set(wire.Float32, useAVX, sumFloat32Bytes)
	set(wire.Float64, useAVX, sumFloat64Bytes)
	set(wire.Int32, useAVX2, sumInt32Bytes)
	set(wire.Int64, useAVX2, sumInt64Bytes)
}

// vectorTails are the kernels the vector sums' own replaced, which take
// their tails.
var vectorTails [dtypeSlots]Kernel

// The vector sums' kernels: the loop over the whole iterations, a
// direct call from each (a helper taking the loop as a func value called
// it through its ABI wrapper, and does not inline); vectorParts the rest.
// The loop's moves are unaligned, so any payload may take it.

func sumFloat32Bytes(dst, src []byte) { addFloat32sAVX(vectorParts(dst, src, 4, wire.Float32)) }
func sumFloat64Bytes(dst, src []byte) { addFloat64sAVX(vectorParts(dst, src, 8, wire.Float64)) }
func sumInt32Bytes(dst, src []byte)   { addInt32sAVX2(vectorParts(dst, src, 4, wire.Int32)) }
func sumInt64Bytes(dst, src []byte)   { addInt64sAVX2(vectorParts(dst, src, 8, wire.Int64)) }

// vectorParts checks a vector sum's lengths (of size-byte elements), runs
// dt's tail kernel over what follows the whole iterations, and returns
// dst and src for the loop, which does those: each element is summed on
// its own, so the order does not matter.
func vectorParts(dst, src []byte, size int, dt wire.DType) ([]byte, []byte) {
	checkLengths(dst, src, size)
	if n := len(dst) &^ 127; n < len(dst) {
		vectorTails[dt](dst[n:], src[n:])
	}
	return dst, src
}
