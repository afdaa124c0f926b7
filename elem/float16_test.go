package elem

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/flare-net/flare/wire"
)

// TestFloat16From pins the conversion at its edges: round to nearest, ties
// to even, overflow, the subnormal grid, zeros and NaNs.
func TestFloat16From(t *testing.T) {
	tests := []struct {
		name string
		in   uint32 // float32 bits
		want Float16
	}{
		{"one", 0x3f800000, 0x3c00},
		{"below half rounds down", 0x3f800fff, 0x3c00},
		{"tie to even stays", 0x3f801000, 0x3c00},
		{"above half rounds up", 0x3f801001, 0x3c01},
		{"tie from odd rounds up to even", 0x3f803000, 0x3c02},
		{"negative tie to even", 0xbf801000, 0xbc00},
		{"negative tie from odd", 0xbf803000, 0xbc02},
		{"carry into exponent", 0x3ffff000, 0x4000},
		{"largest finite 65504", 0x477fe000, 0x7bff},
		{"below the overflow tie stays finite", 0x477fefff, 0x7bff},
		{"overflow tie 65520 rounds to Inf", 0x477ff000, 0x7c00},
		{"2^16 is Inf", 0x47800000, 0x7c00},
		{"largest float32 rounds to Inf", 0x7f7fffff, 0x7c00},
		{"negative overflow to -Inf", 0xc77ff000, 0xfc00},
		{"+Inf", 0x7f800000, 0x7c00},
		{"-Inf", 0xff800000, 0xfc00},
		{"+0", 0x00000000, 0x0000},
		{"-0", 0x80000000, 0x8000},
		{"smallest normal 2^-14", 0x38800000, 0x0400},
		{"largest subnormal", 0x387fc000, 0x03ff},
		{"just below smallest normal rounds up to it", 0x387fe000, 0x0400},
		{"smallest subnormal 2^-24", 0x33800000, 0x0001},
		{"half the smallest subnormal ties to 0", 0x33000000, 0x0000},
		{"just above that rounds to 2^-24", 0x33000001, 0x0001},
		{"1.5 × 2^-24 ties up to even", 0x33c00000, 0x0002},
		{"2.5 × 2^-24 ties down to even", 0x34200000, 0x0002},
		{"negative subnormal", 0xb3800000, 0x8001},
		{"tiny negative to -0", 0xb3000000, 0x8000},
		{"float32 subnormal to 0", 0x00000001, 0x0000},
		{"quiet NaN", 0x7fc00000, 0x7e00},
		{"negative quiet NaN", 0xffc00000, 0xfe00},
		{"signalling NaN with low payload stays NaN", 0x7f800001, 0x7e00},
		{"NaN with high payload keeps it", 0x7f802000, 0x7e01},
		{"NaN payload that would round up", 0x7fffffff, 0x7fff},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Float16From(math.Float32frombits(tt.in)); got != tt.want {
				t.Errorf("Float16From(%#08x) = %#04x, want %#04x", tt.in, uint16(got), uint16(tt.want))
			}
		})
	}
}

// TestFloat16ToFloat32Exhaustive widens every one of the 65,536 float16
// values and compares with the value computed from the binary16 definition
// in float64 (specF16Value), bit for bit; NaNs must keep sign and payload.
// Each value must also convert back to itself (a signalling NaN comes back
// quiet).
func TestFloat16ToFloat32Exhaustive(t *testing.T) {
	for u := range 1 << 16 {
		h := Float16(u)
		got := h.Float32()
		want := specF16Value(uint16(u))
		if want != want {
			wantBits := uint32(u&0x8000)<<16 | 0x7f800000 | uint32(u&0x3ff)<<13
			if math.Float32bits(got) != wantBits {
				t.Fatalf("%#04x.Float32() = %#08x, want NaN %#08x", u, math.Float32bits(got), wantBits)
			}
			// The spec's own NaN keeps the sign and payload too.
			if b := specF16Bits(want); b != uint16(u)|uint16(f16QuietBit) {
				t.Fatalf("specF16Bits(specF16Value(%#04x)) = %#04x, want %#04x", u, b, uint16(u)|uint16(f16QuietBit))
			}
		} else if float64(got) != want || math.Signbit(float64(got)) != math.Signbit(want) {
			t.Fatalf("%#04x.Float32() = %v (%#08x), want %v", u, got, math.Float32bits(got), want)
		}
		back := h
		if got != got {
			back |= f16QuietBit
		}
		if r := Float16From(got); r != back {
			t.Fatalf("%#04x -> %v -> %#04x, want %#04x", u, got, uint16(r), uint16(back))
		}
		if b := specF16Bits(float64(got)); Float16(b) != back {
			t.Fatalf("specF16Bits(%#04x.Float32()) = %#04x, want %#04x", u, b, uint16(back))
		}
	}
}

// TestFloat16FromHalfwayExhaustive rounds, for every pair of neighbouring
// float16 magnitudes (zero to 65504, and 65504 to the 65536 that would
// follow it), their midpoint and the float32 values on either side of it:
// the midpoint goes to the even neighbour, the rest to the nearer one.
// Midpoints need 12 bits, so float32 holds them exactly, and computing them
// in float64 from specF16Value keeps the expected value independent of the
// code under test. Both signs.
func TestFloat16FromHalfwayExhaustive(t *testing.T) {
	for u := uint16(0); u < 0x7c00; u++ {
		lo := specF16Value(u)
		hi := specF16Value(u + 1) // 0x7c00 is Inf: the next step is 65536
		if u == 0x7bff {
			hi = 65536
		}
		mid := (lo + hi) / 2
		even := u
		if u&1 == 1 {
			even = u + 1
		}
		m := float32(mid)
		if float64(m) != mid {
			t.Fatalf("midpoint of %#04x and its successor, %v, is not a float32", u, mid)
		}
		for _, sign := range []uint16{0, 0x8000} {
			neg := func(f float32) float32 {
				if sign != 0 {
					return -f
				}
				return f
			}
			cases := []struct {
				in   float32
				want uint16
			}{
				{neg(m), even | sign},
				{neg(math.Nextafter32(m, 0)), u | sign},
				{neg(math.Nextafter32(m, float32(math.Inf(1)))), (u + 1) | sign},
			}
			for _, c := range cases {
				if got := Float16From(c.in); uint16(got) != c.want {
					t.Fatalf("Float16From(%v = %#08x) = %#04x, want %#04x", c.in, math.Float32bits(c.in), uint16(got), c.want)
				}
			}
		}
	}
}

// TestFloat16FromMatchesSpec compares the conversion of random float32
// values with the rounding computed in float64 (specF16Round, specF16Bits):
// uniform bits, and exponents near float16's range, where every rounding
// case lies (normal, subnormal, overflow, underflow to zero).
func TestFloat16FromMatchesSpec(t *testing.T) {
	// The edges of rounding, ties to even, each way.
	for _, tc := range []struct {
		f    float32
		want uint16
	}{
		{65504, 0x7bff},                         // the largest finite
		{math.Nextafter32(65520, 0), 0x7bff},    // just below the halfway point to 2^16
		{65520, 0x7c00},                         // halfway: to even, which is 2^16, out of range: Inf
		{-65520, 0xfc00},                        //
		{0x1p-25, 0x0000},                       // halfway between 0 and the least subnormal: to even, 0
		{math.Nextafter32(0x1p-25, 1), 0x0001},  // past halfway
		{3 * 0x1p-25, 0x0002},                   // halfway between subnormals 1 and 2: to even
		{0x1p-14 - 0x1p-25, 0x0400},             // halfway between the largest subnormal and the least normal: to even
		{1 + 0x1p-11, 0x3c00},                   // halfway above 1: to even
		{1 + 3*0x1p-11, 0x3c02},                 // halfway above 1 + 2^-10: to even
		{float32(math.Copysign(0, -1)), 0x8000}, // -0
	} {
		if got, spec := Float16From(tc.f), specF16Bits(float64(tc.f)); uint16(got) != tc.want || spec != tc.want {
			t.Errorf("%v (%#08x): Float16From %#04x, the spec %#04x; want %#04x", tc.f, math.Float32bits(tc.f), uint16(got), spec, tc.want)
		}
		// The reference's rounding in float64 gives the same value (a sum
		// at 65520 overflows there too, not only when encoded).
		if r, want := specF16Round(float64(tc.f)), specF16Value(tc.want); r != want || math.Signbit(r) != math.Signbit(want) {
			t.Errorf("specF16Round(%v) = %v, want %v", tc.f, r, want)
		}
	}
	rng := rand.New(rand.NewPCG(15, 16))
	n := 1 << 20
	if testing.Short() {
		n = 1 << 16
	}
	for i := range n {
		u := rng.Uint32()
		if i%4 != 0 { // exponents 2^-28 .. 2^17
			u = u&0x807fffff | (127-28+rng.Uint32N(46))<<23
		}
		f := math.Float32frombits(u)
		if got, want := Float16From(f), specF16Bits(float64(f)); uint16(got) != want {
			t.Fatalf("Float16From(%#08x = %v) = %#04x, want %#04x", u, f, uint16(got), want)
		}
	}
}

// TestFloat16KernelsCorrectlyRounded checks the claim in float16.go that
// widening to float32, combining and rounding back gives the correctly
// rounded float16 sum and product: against the exact result (the float64
// sum or product of two float16s is exact) rounded once, in float64 math.
// Every float16 b is paired with a sample of a's (exhaustive in b), which
// covers subnormal, overflowing and cancelling results.
func TestFloat16KernelsCorrectlyRounded(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	as := []uint16{0x0001, 0x03ff, 0x0400, 0x3c00, 0x3c01, 0x7bff, 0x8001, 0xbc00, 0xfbff}
	for range 24 {
		as = append(as, uint16(rng.Uint32()))
	}
	for _, op := range []wire.Op{wire.OpSum, wire.OpProd} {
		k, err := KernelFor(wire.Float16, op)
		if err != nil {
			t.Fatal(err)
		}
		d, s := make([]byte, 2), make([]byte, 2)
		for _, a := range as {
			for b := range 1 << 16 {
				x, y := specF16Value(a), specF16Value(uint16(b))
				if x != x || y != y || math.IsInf(x, 0) || math.IsInf(y, 0) {
					continue // NaN and Inf arithmetic are float32's, checked by the kernel tests
				}
				exact := x + y
				if op == wire.OpProd {
					exact = x * y
				}
				// A zero sum carries IEEE's sign (x + -x is +0) in float64
				// as in float32, so exact needs no special case.
				want := specF16Bits(exact)
				binary.LittleEndian.PutUint16(d, a)
				binary.LittleEndian.PutUint16(s, uint16(b))
				k(d, s)
				if got := binary.LittleEndian.Uint16(d); got != want {
					t.Fatalf("%v(%#04x, %#04x) = %#04x, want %#04x", op, a, b, got, want)
				}
			}
		}
	}
}

// TestFloat16MinMaxMatchesFloat32 checks that min and max, which compare
// the bits without converting, agree with fminOf and fmaxOf on the widened
// values, for every float16 against a sample of others (zeros, NaNs and
// infinities among them) in both operand orders.
func TestFloat16MinMaxMatchesFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	bs := []Float16{0x0000, 0x8000, 0x0001, 0x8001, 0x7c00, 0xfc00, 0x7e00, 0xfe01, 0x7c01, 0x3c00, 0xbc00, 0x7bff, 0xfbff}
	for range 24 {
		bs = append(bs, Float16(rng.Uint32()))
	}
	for u := range 1 << 16 {
		a := Float16(u)
		for _, b := range bs {
			for _, c := range []struct {
				name string
				got  Float16
				f    func(x, y float32) float32
			}{{"min", f16Min(a, b), fminOf[float32]}, {"min", f16Min(b, a), fminOf[float32]},
				{"max", f16Max(a, b), fmaxOf[float32]}, {"max", f16Max(b, a), fmaxOf[float32]}} {
				want := Float16From(c.f(a.Float32(), b.Float32()))
				if c.got != want {
					t.Fatalf("%s(%#04x, %#04x) = %#04x, want %#04x", c.name, uint16(a), uint16(b), uint16(c.got), uint16(want))
				}
			}
		}
	}
}

// TestSpecF16RoundGrid checks the float64 specification itself on the
// structure of binary16: rounding a float16 value gives it back, values
// strictly between two neighbours go to one of them, and the encoding is
// monotone over the positive codes.
func TestSpecF16RoundGrid(t *testing.T) {
	prev := -1.0
	for u := uint16(0); u < 0x7c00; u++ {
		v := specF16Value(u)
		if !(v > prev) {
			t.Fatalf("specF16Value(%#04x) = %v, not above the previous %v", u, v, prev)
		}
		if r := specF16Round(v); r != v {
			t.Fatalf("specF16Round(%v) = %v: a float16 value must round to itself", v, r)
		}
		if b := specF16Bits(v); b != u {
			t.Fatalf("specF16Bits(%v) = %#04x, want %#04x", v, b, u)
		}
		if u > 0 {
			q := prev + (v-prev)/3 // nearer prev
			if r := specF16Round(q); r != prev {
				t.Fatalf("specF16Round(%v) = %v, want %v", q, r, prev)
			}
		}
		prev = v
	}
}

// TestFloat16SumProdNaN pins the canonical NaN of sum and prod, and with
// it commutativity down to the bits: two NaN operands of different
// payloads, an invalid operation (x86 answers it with a negative NaN), and
// random vectors full of NaNs, folded both ways round.
func TestFloat16SumProdNaN(t *testing.T) {
	cases := []struct {
		op   wire.Op
		a, b Float16
	}{
		{wire.OpSum, 0x7ead, 0xffe8},
		{wire.OpSum, 0x7c01, 0x3c00},  // a signalling NaN
		{wire.OpSum, 0x7c00, 0xfc00},  // Inf - Inf
		{wire.OpProd, 0x7c00, 0x0000}, // Inf × 0
		{wire.OpProd, 0xfe03, 0x7d00},
	}
	for _, c := range cases {
		for _, ab := range [][2]Float16{{c.a, c.b}, {c.b, c.a}} {
			d := binary.LittleEndian.AppendUint16(nil, uint16(ab[0]))
			if err := Fold(wire.Float16, c.op, d, binary.LittleEndian.AppendUint16(nil, uint16(ab[1]))); err != nil {
				t.Fatal(err)
			}
			if got := binary.LittleEndian.Uint16(d); got != uint16(f16QuietNaN) {
				t.Errorf("%v(%#04x, %#04x) = %#04x, want the canonical NaN 0x7e00", c.op, uint16(ab[0]), uint16(ab[1]), got)
			}
		}
	}
	rng := rand.New(rand.NewPCG(21, 22))
	for _, op := range []wire.Op{wire.OpSum, wire.OpProd} {
		a, b := randVec(rng, wire.Float16, 4096), randVec(rng, wire.Float16, 4096)
		ab, ba := bytes.Clone(a), bytes.Clone(b)
		if err := Fold(wire.Float16, op, ab, b); err != nil {
			t.Fatal(err)
		}
		if err := Fold(wire.Float16, op, ba, a); err != nil {
			t.Fatal(err)
		}
		if i := firstDiff(ab, ba, 2); i >= 0 {
			t.Errorf("%v not commutative at element %d: % x vs % x", op, i, elemAt(ab, wire.Float16, i), elemAt(ba, wire.Float16, i))
		}
	}
}
