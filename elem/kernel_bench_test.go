package elem

import (
	"testing"

	"github.com/flare-net/flare/wire"
)

// benchSizes are the packet payload (1 KiB, the paper's packet size) and a
// block of many packets (64 KiB), which shows the loop without call overhead.
var benchSizes = []struct {
	name string
	n    int
}{
	{"1KiB", 1 << 10},
	{"64KiB", 64 << 10},
}

// BenchmarkKernel measures the sum kernel of every dtype. Compare its GB/s
// with BenchmarkCopy's from the same run: copy moves the same bytes with the
// machine's widest loads and stores, so the ratio is how close to memory
// speed the fold gets.
func BenchmarkKernel(b *testing.B) {
	for _, dt := range wire.DTypes {
		for _, sz := range benchSizes {
			b.Run(dt.String()+"/"+sz.name, func(b *testing.B) {
				k, err := KernelFor(dt, wire.OpSum)
				if err != nil {
					b.Fatal(err)
				}
				dst, src := benchVectors(dt, sz.n)
				b.SetBytes(int64(sz.n))
				b.ReportAllocs()
				for b.Loop() {
					k(dst, src)
				}
				reportGBs(b, sz.n)
			})
		}
	}
}

// BenchmarkKernelPortable measures the element-by-element path that
// big-endian machines and misaligned payloads take.
func BenchmarkKernelPortable(b *testing.B) {
	for _, dt := range []wire.DType{wire.Int32, wire.Float32} {
		b.Run(dt.String()+"/1KiB", func(b *testing.B) {
			k := lookup(dt, wire.OpSum).portable
			dst, src := benchVectors(dt, 1<<10)
			b.SetBytes(1 << 10)
			b.ReportAllocs()
			for b.Loop() {
				k(dst, src)
			}
			reportGBs(b, 1<<10)
		})
	}
}

// BenchmarkCopy is the baseline for BenchmarkKernel: copy of the same sizes.
func BenchmarkCopy(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(sz.name, func(b *testing.B) {
			dst, src := make([]byte, sz.n), make([]byte, sz.n)
			b.SetBytes(int64(sz.n))
			b.ReportAllocs()
			for b.Loop() {
				copy(dst, src)
			}
			reportGBs(b, sz.n)
		})
	}
}

// benchVectors returns n bytes each of small values of dt: no overflow to
// Inf or NaN, which would leave float timings unrepresentative.
func benchVectors(dt wire.DType, n int) (dst, src []byte) {
	dst, src = make([]byte, n), make([]byte, n)
	one, size := intBytes(dt, 1), dt.Size()
	if dt.IsFloat() {
		one = floatBytes(dt, 1)
	}
	for i := 0; i < n; i += size {
		copy(src[i:], one)
	}
	return dst, src
}

// reportGBs adds GB/s (10^9 bytes of src folded per second) to the output.
func reportGBs(b *testing.B, n int) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(n)*float64(b.N)/s/1e9, "GB/s")
	}
}
