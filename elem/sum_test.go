package elem

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The float sums' vector loops (sum_amd64.s) give the Go loop's results to
// the bit, for every length around the vector widths, unaligned starts,
// and operands drawn from every class: normals, subnormals, zeros of both
// signs, infinities and NaNs with payloads (NaN + NaN keeps the first
// operand's, as the scalar instruction does).
func TestFloatSumsMatchLoop(t *testing.T) {
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
	for n := 0; n <= 200; n++ {
		for _, off := range []int{0, 1, 3} {
			d, s := make([]float32, n+off), make([]float32, n+off)
			for i := range d {
				d[i], s[i] = f32(), f32()
			}
			want := append([]float32(nil), d[off:]...)
			sumInto(want, s[off:])
			sumFloat32s(d[off:], s[off:])
			for i, w := range want {
				if math.Float32bits(d[off+i]) != math.Float32bits(w) {
					t.Fatalf("float32 n=%d off=%d [%d]: %#x, the loop gives %#x", n, off, i, math.Float32bits(d[off+i]), math.Float32bits(w))
				}
			}
			dd, ss := make([]float64, n+off), make([]float64, n+off)
			for i := range dd {
				dd[i], ss[i] = f64(), f64()
			}
			want64 := append([]float64(nil), dd[off:]...)
			sumInto(want64, ss[off:])
			sumFloat64s(dd[off:], ss[off:])
			for i, w := range want64 {
				if math.Float64bits(dd[off+i]) != math.Float64bits(w) {
					t.Fatalf("float64 n=%d off=%d [%d]: %#x, the loop gives %#x", n, off, i, math.Float64bits(dd[off+i]), math.Float64bits(w))
				}
			}
		}
	}
}
