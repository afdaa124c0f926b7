package elem

import "math"

// BFloat16 is a bfloat16 value: the upper 16 bits of an IEEE 754 float32
// (sign, 8-bit exponent, 7-bit fraction). It has float32's range with 8 bits
// of precision, which is why machine-learning gradients travel in it: half
// the bytes of float32, and a conversion that is a shift. On the wire it is a
// little-endian uint16.
//
// The bfloat16 kernels widen both operands to float32, combine them there
// and round the result back to nearest even. For sum and prod that is the
// correctly rounded bfloat16 result: float32 carries 24 bits, more than the
// 2·8+2 beyond which rounding twice (to float32, then to 8 bits) cannot
// differ from rounding once. A chain of sums still rounds at every step, as
// a bfloat16 accumulator would; that is the accepted semantics, and the
// result then depends on the order of the chain (the tree design fixes that
// order where reproducibility matters). Min and max return an operand, or
// the canonical quiet NaN 0x7fc0.
type BFloat16 uint16

// BFloat16From rounds f to the nearest bfloat16, ties to even, as IEEE 754
// rounds by default. Values beyond the largest finite bfloat16 round to
// ±Inf, -0 stays -0, and a NaN stays a NaN with its sign, made quiet: simply
// dropping the low half would turn a NaN whose payload lies only in those
// bits into an infinity.
func BFloat16From(f float32) BFloat16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return BFloat16(u>>16 | 0x0040)
	}
	// Adding just under half a unit of the kept part, plus its lowest bit,
	// carries into the kept part exactly when the dropped half is above
	// half, or equal to half with the kept part odd. A carry out of the
	// fraction bumps the exponent, which is again correct, up to +Inf.
	u += 0x7fff + (u>>16)&1
	return BFloat16(u >> 16)
}

// Float32 returns b as a float32; every bfloat16 value is exactly one.
func (b BFloat16) Float32() float32 {
	return math.Float32frombits(uint32(b) << 16)
}

// The scalar bfloat16 operators, as the BFloat16 doc describes them.

func bf16Sum(a, b BFloat16) BFloat16  { return BFloat16From(a.Float32() + b.Float32()) }
func bf16Prod(a, b BFloat16) BFloat16 { return BFloat16From(a.Float32() * b.Float32()) }

// bf16Min and bf16Max follow fminOf and fmaxOf. The result is an operand,
// whose low float32 half is zero, so it needs no rounding, only the drop of
// that half; written out, they are cheap enough for the loops to inline.
func bf16Min(a, b BFloat16) BFloat16 {
	if m := min(a.Float32(), b.Float32()); m == m {
		return BFloat16(math.Float32bits(m) >> 16)
	}
	return bf16QuietNaN
}

func bf16Max(a, b BFloat16) BFloat16 {
	if m := max(a.Float32(), b.Float32()); m == m {
		return BFloat16(math.Float32bits(m) >> 16)
	}
	return bf16QuietNaN
}

// bf16QuietNaN is the canonical quiet NaN, the upper half of float32's.
const bf16QuietNaN BFloat16 = 0x7fc0

// The bfloat16 loops: zipInto with the operator inlined into each.

func bf16SumInto(d, s []BFloat16)  { zipInto(d, s, bf16Sum) }
func bf16ProdInto(d, s []BFloat16) { zipInto(d, s, bf16Prod) }
func bf16MinInto(d, s []BFloat16)  { zipInto(d, s, bf16Min) }
func bf16MaxInto(d, s []BFloat16)  { zipInto(d, s, bf16Max) }

// widenBF16 adapts a float32 operator to bfloat16 operands, with the same
// widen, combine, round semantics as the built-ins.
func widenBF16(f func(a, b float32) float32) func(a, b BFloat16) BFloat16 {
	return func(a, b BFloat16) BFloat16 {
		return BFloat16From(f(a.Float32(), b.Float32()))
	}
}
