package elem

import "math"

// The specification of float16 for Reference and Check, written in float64
// arithmetic from the definition of IEEE 754 binary16 and sharing nothing
// with float16.go, so that the kernels and the conversions are checked
// against an independent derivation rather than against themselves.

// specF16Value decodes float16 bits into the float64 they stand for
// (exactly: binary16 is a subset of binary64). A NaN keeps its sign and its
// payload in the top fraction bits, where a float64 operation and a
// conversion to float32 keep it too.
func specF16Value(h uint16) float64 {
	neg := h>>15 == 1
	exp, frac := int(h>>10&0x1f), float64(h&0x3ff)
	var v float64
	switch exp {
	case 0x1f:
		if frac != 0 {
			return math.Float64frombits(uint64(h>>15)<<63 | 0x7ff<<52 | uint64(h&0x3ff)<<42)
		}
		v = math.Inf(1)
	case 0:
		v = math.Ldexp(frac, -24) // subnormal: frac units of 2⁻²⁴
	default:
		v = math.Ldexp(1024+frac, exp-15-10) // 1.frac × 2^(exp−15)
	}
	if neg {
		v = math.Copysign(v, -1)
	}
	return v
}

// specF16Round rounds x to the nearest float16 value, ties to even, and
// returns it as a float64. |x| ≥ 65520, halfway between the largest finite
// float16 (65504) and 2¹⁶, rounds to Inf; the grid below 2⁻¹⁴ is the
// subnormal one, 2⁻²⁴; zeros, infinities and NaNs come back as they are.
func specF16Round(x float64) float64 {
	ax := math.Abs(x)
	switch {
	case ax != ax || ax == 0 || math.IsInf(ax, 0):
		return x
	case ax >= 65520:
		return math.Copysign(math.Inf(1), x)
	}
	_, exp := math.Frexp(ax) // ax in [2^(exp−1), 2^exp)
	e := max(exp-1, -14)
	ulp := math.Ldexp(1, e-10) // 11 significant bits
	return math.Copysign(math.RoundToEven(ax/ulp)*ulp, x)
}

// specF16Bits encodes x, rounded to float16 first, as float16 bits. A NaN
// keeps its sign and the top ten bits of its payload and is made quiet.
func specF16Bits(x float64) uint16 {
	var sign uint16
	if math.Signbit(x) {
		sign = 0x8000
	}
	if x != x {
		return sign | 0x7e00 | uint16(math.Float64bits(x)>>42)&0x3ff
	}
	ax := math.Abs(specF16Round(x))
	switch {
	case math.IsInf(ax, 0):
		return sign | 0x7c00
	case ax < 0x1p-14:
		return sign | uint16(ax*0x1p24) // subnormal or zero: a whole number of 2⁻²⁴
	}
	frac, exp := math.Frexp(ax) // frac in [0.5, 1): 1.f × 2^(exp−1)
	return sign | uint16(exp-1+15)<<10 | uint16((2*frac-1)*1024)
}
