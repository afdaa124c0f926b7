package elem

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/flare-net/flare/wire"
)

// The sums' kernels, with their vector loops (sum_amd64.s), give the Go
// loop's results to the bit, for every length around the vector widths
// and unaligned starts: integers wrapping, and floats drawn from every
// class (normals, subnormals, zeros of both signs, infinities, NaNs with
// payloads: NaN + NaN keeps the first operand's, as the scalar
// instruction does).
func TestSumsMatchLoop(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 14))
	f32 := func() float32 {
		switch r.IntN(8) {
		case 0:
			return math.Float32frombits(0x7fc00000 | r.Uint32()&0x803fffff) // a quiet NaN with a payload
		case 1:
			return math.Float32frombits(r.Uint32() & 0x807fffff) // subnormal or zero
		case 2:
			return float32(math.Inf(1 - 2*r.IntN(2)))
		default:
			return math.Float32frombits(r.Uint32())
		}
	}
	f64 := func() float64 {
		switch r.IntN(8) {
		case 0:
			return math.Float64frombits(0x7ff8000000000000 | r.Uint64()&0x8007ffffffffffff)
		case 1:
			return math.Float64frombits(r.Uint64() & 0x800fffffffffffff)
		case 2:
			return math.Inf(1 - 2*r.IntN(2))
		default:
			return math.Float64frombits(r.Uint64())
		}
	}
	checkSum(t, wire.Float32, f32, func(v float32) uint64 { return uint64(math.Float32bits(v)) })
	checkSum(t, wire.Float64, f64, math.Float64bits)
	checkSum(t, wire.Int32, func() int32 { return int32(r.Uint32()) }, func(v int32) uint64 { return uint64(uint32(v)) })
	checkSum(t, wire.Int64, func() int64 { return int64(r.Uint64()) }, func(v int64) uint64 { return uint64(v) })
}

// checkSum compares the sum kernel of dt (elements T) with sumInto on
// vectors of draw's values.
func checkSum[T number](t *testing.T, dt wire.DType, draw func() T, bits func(T) uint64) {
	t.Helper()
	k, err := KernelFor(dt, wire.OpSum)
	if err != nil {
		t.Fatal(err)
	}
	name := dt.String()
	sum := func(d, s []T) { k(reinterpret[byte](d), reinterpret[byte](s)) }
	for n := 0; n <= 200; n++ {
		for _, off := range []int{0, 1, 3} {
			d, s := make([]T, n+off), make([]T, n+off)
			for i := range d {
				d[i], s[i] = draw(), draw()
			}
			want := append([]T(nil), d[off:]...)
			sumInto(want, s[off:])
			sum(d[off:], s[off:])
			for i, w := range want {
				if bits(d[off+i]) != bits(w) {
					t.Fatalf("%s n=%d off=%d [%d]: %#x, the loop gives %#x", name, n, off, i, bits(d[off+i]), bits(w))
				}
			}
		}
	}
}
