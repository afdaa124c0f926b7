package elem

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/flare-net/flare/wire"
)

// TestBFloat16From pins round to nearest, ties to even, at the edges.
func TestBFloat16From(t *testing.T) {
	tests := []struct {
		name string
		in   uint32 // float32 bits
		want BFloat16
	}{
		{"one", 0x3f800000, 0x3f80},
		{"below half rounds down", 0x3f807fff, 0x3f80},
		{"tie to even stays", 0x3f808000, 0x3f80},
		{"above half rounds up", 0x3f808001, 0x3f81},
		{"tie from odd rounds up to even", 0x3f818000, 0x3f82},
		{"negative tie to even", 0xbf808000, 0xbf80},
		{"negative tie from odd", 0xbf818000, 0xbf82},
		{"carry into exponent", 0x3fffc000, 0x4000},
		{"largest finite stays", 0x7f7f0000, 0x7f7f},
		{"below overflow tie stays finite", 0x7f7f7fff, 0x7f7f},
		{"overflow tie rounds to Inf", 0x7f7f8000, 0x7f80},
		{"largest float32 rounds to Inf", 0x7f7fffff, 0x7f80},
		{"negative overflow to -Inf", 0xff7fffff, 0xff80},
		{"+Inf", 0x7f800000, 0x7f80},
		{"-Inf", 0xff800000, 0xff80},
		{"+0", 0x00000000, 0x0000},
		{"-0", 0x80000000, 0x8000},
		{"tiny subnormal to 0", 0x00000001, 0x0000},
		{"tiny negative subnormal to -0", 0x80000001, 0x8000},
		{"subnormal tie to even 0", 0x00008000, 0x0000},
		{"subnormal tie from odd", 0x00018000, 0x0002},
		{"subnormal up to smallest normal", 0x007fffff, 0x0080},
		{"quiet NaN", 0x7fc00000, 0x7fc0},
		{"negative quiet NaN", 0xffc00000, 0xffc0},
		{"signalling NaN with low payload stays NaN", 0x7f800001, 0x7fc0},
		{"NaN with high payload keeps it", 0x7f810000, 0x7fc1},
		{"NaN payload that would round up", 0x7fffffff, 0x7fff},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := BFloat16From(math.Float32frombits(tt.in)); got != tt.want {
				t.Errorf("BFloat16From(%#08x) = %#04x, want %#04x", tt.in, uint16(got), uint16(tt.want))
			}
		})
	}
}

// TestBFloat16RoundTrip converts every bfloat16 to float32 and back: exact,
// except that a signalling NaN comes back quiet.
func TestBFloat16RoundTrip(t *testing.T) {
	for u := range 1 << 16 {
		b := BFloat16(u)
		f := b.Float32()
		want := b
		if f != f {
			want |= 0x0040
		}
		if got := BFloat16From(f); got != want {
			t.Fatalf("%#04x -> %v -> %#04x, want %#04x", u, f, uint16(got), uint16(want))
		}
		if math.Float32bits(f)&0xffff != 0 || math.Float32bits(f)>>16 != uint32(u) {
			t.Fatalf("%#04x.Float32() = %#08x", u, math.Float32bits(f))
		}
	}
}

// TestBFloat16FromMatchesBig compares the rounding of random float32 values
// in the normal range with math/big's round to nearest even at 8 bits.
func TestBFloat16FromMatchesBig(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 100000 {
		// Exponents 1..253 keep the input and the result normal and finite.
		u := rng.Uint32()&0x807fffff | (1+rng.Uint32N(253))<<23
		f := math.Float32frombits(u)
		if got, want := BFloat16From(f), bigRound(new(big.Float).SetFloat64(float64(f))); got != want {
			t.Fatalf("BFloat16From(%#08x) = %#04x, want %#04x", u, uint16(got), uint16(want))
		}
	}
}

// TestBFloat16KernelsCorrectlyRounded checks the claim in bfloat16.go that
// widening to float32 and rounding back gives the correctly rounded
// bfloat16 sum and product: against math/big's exact result rounded to 8
// bits, for random operands whose results stay in the normal range.
func TestBFloat16KernelsCorrectlyRounded(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	randBF := func() BFloat16 { // exponents around 1, so sums see every alignment
		return BFloat16(rng.Uint32()&0x807f | (100+rng.Uint32N(56))<<7)
	}
	for _, op := range []wire.Op{wire.OpSum, wire.OpProd} {
		k, err := KernelFor(wire.BFloat16, op)
		if err != nil {
			t.Fatal(err)
		}
		for range 50000 {
			a, b := randBF(), randBF()
			x, y := new(big.Float).SetFloat64(float64(a.Float32())), new(big.Float).SetFloat64(float64(b.Float32()))
			exact := new(big.Float).SetPrec(1000)
			if op == wire.OpSum {
				exact.Add(x, y)
			} else {
				exact.Mul(x, y)
			}
			if exact.Sign() == 0 {
				continue // x + -x: the sign of zero is IEEE's business, tested elsewhere
			}
			d := []byte{byte(a), byte(a >> 8)}
			k(d, []byte{byte(b), byte(b >> 8)})
			got := BFloat16(d[0]) | BFloat16(d[1])<<8
			if want := bigRound(exact); got != want {
				t.Fatalf("%v(%#04x, %#04x) = %#04x, want %#04x", op, uint16(a), uint16(b), uint16(got), uint16(want))
			}
		}
	}
}

// bigRound rounds x, assumed to land in bfloat16's normal range, to 8
// significant bits, ties to even, and returns it as a bfloat16.
func bigRound(x *big.Float) BFloat16 {
	r := new(big.Float).SetMode(big.ToNearestEven).SetPrec(8).Set(x)
	f, _ := r.Float32() // exact: r has 8 significant bits
	return BFloat16(math.Float32bits(f) >> 16)
}
