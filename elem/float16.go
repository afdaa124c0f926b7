package elem

import "math"

// Float16 is an IEEE 754 binary16 value (sign, 5-bit exponent, 10-bit
// fraction): PyTorch's torch.float16, numpy's float16, the half precision
// of mixed-precision training, and one of the types SHARP aggregates. It
// has 11 bits of precision and a range of ±65504, with subnormals down to
// 2⁻²⁴. On the wire it is a little-endian uint16.
//
// The float16 kernels work as the bfloat16 ones do: widen both operands to
// float32 (exact), combine them there and round the result back to nearest
// even. For sum and prod that is the correctly rounded float16 result:
// float32 carries 24 bits, at least the 2·11+2 beyond which rounding twice
// (to float32, then to 11 bits) cannot differ from rounding once, and every
// float16 result, subnormal ones included, lies in float32's normal range.
// A chain of sums rounds at every step, so its result depends on the order
// of the chain (the tree design fixes that order). Min and max return an
// operand, or the canonical quiet NaN 0x7e00. A NaN result of sum or prod
// is that canonical NaN too, whatever the operands' payloads: which of two
// NaN operands float32 hardware passes on depends on the order in which
// the compiler happens to place them, so passing it on would make the bits
// depend on the build (it does: with -race they differ).
type Float16 uint16

// Bit fields of a binary16 and the float32 constants that convert them.
const (
	f16Sign     = 0x8000
	f16ExpMask  = 0x7c00 // exponent field; all ones is Inf or NaN
	f16FracMask = 0x03ff
	f16QuietBit = 0x0200 // top fraction bit: set in a quiet NaN

	// f16QuietNaN is the canonical quiet NaN, what float32's 0x7fc00000
	// converts to.
	f16QuietNaN Float16 = 0x7e00

	// f32 exponent fields (biased, in place) of the float16 range limits:
	// 2¹⁶, the first power of two beyond the largest finite float16, and
	// 2⁻¹⁴, the smallest normal float16.
	f32Exp2p16  = (127 + 16) << 23
	f32Exp2m14  = (127 - 14) << 23
	f16Rebias   = (127 - 15) << 23 // float32 bias minus float16 bias, in place
	f32FracBits = 23
	f16FracBits = 10
)

// Float16From rounds f to the nearest float16, ties to even, as IEEE 754
// rounds by default: values from 65520 (the midpoint between 65504 and the
// next power of two) up round to ±Inf, values below 2⁻¹⁴ round to the
// subnormal grid of 2⁻²⁴ steps (down to ±0), -0 stays -0, and a NaN stays a
// NaN with its sign and the top of its payload, made quiet (as x86's
// vcvtps2ph and ARM's fcvt do), so a payload only in the dropped bits
// cannot turn it into an infinity.
func Float16From(f float32) Float16 {
	u := math.Float32bits(f)
	sign := Float16(u>>16) & f16Sign
	a := u &^ (1 << 31)
	switch {
	case a > 0x7f800000: // NaN
		return sign | f16ExpMask | f16QuietBit | Float16(a>>(f32FracBits-f16FracBits))&f16FracMask
	case a >= f32Exp2p16: // 2¹⁶ or more, or Inf
		return sign | f16ExpMask
	case a >= f32Exp2m14: // normal: rebias the exponent, round the fraction
		a -= f16Rebias
		// As in BFloat16From: adding just under half of the kept part's
		// unit, plus its lowest bit, carries exactly when the dropped part
		// is above half, or half with the kept part odd. A carry out of
		// the fraction bumps the exponent, up to Inf from 65520 on.
		a += 0x0fff + (a>>13)&1
		return sign | Float16(a>>13)
	}
	return sign | f16Subnormal(a)
}

// f16Subnormal rounds a, the bits of a non-negative float32 below 2⁻¹⁴, to
// a multiple of 2⁻²⁴, ties to even, and returns the float16 bits of that:
// a subnormal, zero, or 0x0400 (2⁻¹⁴) when a rounds up to it.
func f16Subnormal(a uint32) Float16 {
	e := a >> f32FracBits
	// A normal float32 is m·2^(e−150) with m the 24-bit significand, which
	// is m·2^(e−126) units of 2⁻²⁴: m shifted right by 126−e. Below
	// e = 102 (float32 subnormals included) the shift reaches 25 or more
	// and the value is under half a unit: it rounds to 0.
	if e < 102 {
		return 0
	}
	m := a&(1<<f32FracBits-1) | 1<<f32FracBits
	shift := 126 - e // 14..24
	q := m >> shift
	rest, half := m&(1<<shift-1), uint32(1)<<(shift-1)
	if rest > half || rest == half && q&1 == 1 {
		q++
	}
	return Float16(q)
}

// Float32 returns h as a float32; every float16 value is exactly one. An
// Inf stays an Inf and a NaN keeps its sign and payload (a signalling one
// stays signalling).
func (h Float16) Float32() float32 {
	sign := uint32(h&f16Sign) << 16
	exp := h & f16ExpMask
	frac := uint32(h & f16FracMask)
	switch exp {
	case f16ExpMask: // Inf or NaN
		return math.Float32frombits(sign | 0x7f800000 | frac<<(f32FracBits-f16FracBits))
	case 0: // zero or subnormal: frac·2⁻²⁴, exact in float32 (frac < 2¹⁰)
		return math.Float32frombits(sign | math.Float32bits(float32(frac)*0x1p-24))
	}
	return math.Float32frombits(sign | (uint32(exp)<<(f32FracBits-f16FracBits) + f16Rebias) | frac<<(f32FracBits-f16FracBits))
}

// isNaN reports whether h is a NaN.
func (h Float16) isNaN() bool { return h&^f16Sign > f16ExpMask }

// f16Order maps a non-NaN float16 to an integer in the same order, with -0
// below +0: sign-magnitude turned into a line.
func f16Order(h Float16) int32 {
	if h&f16Sign != 0 {
		return -int32(h&^f16Sign) - 1
	}
	return int32(h)
}

// The scalar float16 operators, as the Float16 doc describes them.

func f16Sum(a, b Float16) Float16  { return f16Result(a.Float32() + b.Float32()) }
func f16Prod(a, b Float16) Float16 { return f16Result(a.Float32() * b.Float32()) }

// f16Result rounds the float32 result of sum or prod, with any NaN as the
// canonical one.
func f16Result(r float32) Float16 {
	if r != r {
		return f16QuietNaN
	}
	return Float16From(r)
}

// f16Min and f16Max follow fminOf and fmaxOf: IEEE 754-2019 minimum and
// maximum with -0 below +0 and the canonical quiet NaN for any NaN operand.
// The result is an operand, so they compare the bits in order and need no
// conversion.
func f16Min(a, b Float16) Float16 {
	if a.isNaN() || b.isNaN() {
		return f16QuietNaN
	}
	if f16Order(b) < f16Order(a) {
		return b
	}
	return a
}

func f16Max(a, b Float16) Float16 {
	if a.isNaN() || b.isNaN() {
		return f16QuietNaN
	}
	if f16Order(b) > f16Order(a) {
		return b
	}
	return a
}

// The float16 loops: zipInto with the operator inlined into each.

func f16SumInto(d, s []Float16)  { zipInto(d, s, f16Sum) }
func f16ProdInto(d, s []Float16) { zipInto(d, s, f16Prod) }
func f16MinInto(d, s []Float16)  { zipInto(d, s, f16Min) }
func f16MaxInto(d, s []Float16)  { zipInto(d, s, f16Max) }

// widenF16 adapts a float32 operator to float16 operands, with the same
// widen, combine, round semantics as the built-ins.
func widenF16(f func(a, b float32) float32) func(a, b Float16) Float16 {
	return func(a, b Float16) Float16 {
		return Float16From(f(a.Float32(), b.Float32()))
	}
}
