package elem

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/flare-net/flare/wire"
)

// Reference reduces inputs (one little-endian vector per rank, equal
// lengths) element by element in rank order with plain scalar code. It is
// the specification the switch is checked against and shares no code with
// the kernels. Only built-in operators are supported.
func Reference(dt wire.DType, op wire.Op, inputs [][]byte) ([]byte, error) {
	if len(inputs) == 0 {
		return nil, fmt.Errorf("reference: no inputs")
	}
	if !op.Builtin() || (dt.IsFloat() && op.BitwiseOnly()) || !dt.Valid() {
		return nil, fmt.Errorf("reference: %s on %s: %w", op, dt, ErrUnsupported)
	}
	sz := dt.Size()
	out := make([]byte, len(inputs[0]))
	for i := 0; i+sz <= len(out); i += sz {
		if dt.IsFloat() {
			acc := specLoadFloat(dt, inputs[0][i:])
			for _, in := range inputs[1:] {
				acc = specFloat(dt, op, acc, specLoadFloat(dt, in[i:]))
			}
			specStoreFloat(dt, out[i:], acc)
		} else {
			acc := specLoadInt(dt, inputs[0][i:])
			for _, in := range inputs[1:] {
				acc = specInt(dt, op, acc, specLoadInt(dt, in[i:]))
			}
			specStoreInt(dt, out[i:], acc)
		}
	}
	return out, nil
}

func specLoadInt(dt wire.DType, b []byte) int64 {
	switch dt {
	case wire.Int8:
		return int64(int8(b[0]))
	case wire.Int16:
		return int64(int16(binary.LittleEndian.Uint16(b)))
	case wire.Int32:
		return int64(int32(binary.LittleEndian.Uint32(b)))
	}
	return int64(binary.LittleEndian.Uint64(b))
}

func specStoreInt(dt wire.DType, b []byte, v int64) {
	switch dt {
	case wire.Int8:
		b[0] = byte(v)
	case wire.Int16:
		binary.LittleEndian.PutUint16(b, uint16(v))
	case wire.Int32:
		binary.LittleEndian.PutUint32(b, uint32(v))
	default:
		binary.LittleEndian.PutUint64(b, uint64(v))
	}
}

// specInt computes in int64 and the store truncates: two's complement
// wrap-around, the same as a narrow typed operation.
func specInt(_ wire.DType, op wire.Op, a, b int64) int64 {
	switch op {
	case wire.OpSum:
		return a + b
	case wire.OpProd:
		return a * b
	case wire.OpMin:
		return min(a, b)
	case wire.OpMax:
		return max(a, b)
	case wire.OpAnd:
		return a & b
	case wire.OpOr:
		return a | b
	}
	return a ^ b
}

// specLoadFloat widens to float64; every float32, bfloat16 and float16 is
// exact there.
func specLoadFloat(dt wire.DType, b []byte) float64 {
	switch dt {
	case wire.Float32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
	case wire.BFloat16:
		return float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16))
	case wire.Float16:
		return specF16Value(binary.LittleEndian.Uint16(b))
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b))
}

func specStoreFloat(dt wire.DType, b []byte, v float64) {
	switch dt {
	case wire.Float32:
		binary.LittleEndian.PutUint32(b, math.Float32bits(float32(v)))
	case wire.BFloat16:
		binary.LittleEndian.PutUint16(b, uint16(BFloat16From(float32(v))))
	case wire.Float16:
		binary.LittleEndian.PutUint16(b, specF16Bits(v))
	default:
		binary.LittleEndian.PutUint64(b, math.Float64bits(v))
	}
}

// specFloat applies op in the dtype's own precision: the result of each step
// is rounded to the dtype, as the switch does. The float64 sum or product of
// two float16s is exact, so a float16 step rounds once, where the kernels
// round to float32 first: the two agree because float32 is wide enough (see
// Float16), which the tests hold the kernels to.
func specFloat(dt wire.DType, op wire.Op, a, b float64) float64 {
	var r float64
	switch op {
	case wire.OpSum:
		r = a + b
	case wire.OpProd:
		r = a * b
	case wire.OpMin:
		r = specMin(a, b)
	default:
		r = -specMin(-a, -b)
	}
	switch dt {
	case wire.Float32:
		return float64(float32(r))
	case wire.BFloat16:
		return float64(BFloat16From(float32(r)).Float32())
	case wire.Float16:
		if math.IsNaN(r) {
			return math.NaN() // stored as the canonical 0x7e00, as the kernels give
		}
		return specF16Round(r)
	}
	return r
}

// specMin is IEEE 754-2019 minimum: NaN if either is NaN, -0 below +0.
func specMin(a, b float64) float64 {
	switch {
	case math.IsNaN(a) || math.IsNaN(b):
		return math.NaN()
	case a == b && a == 0:
		if math.Signbit(a) {
			return a
		}
		return b
	case a < b:
		return a
	}
	return b
}

// roundingBound is how far a float result of ops rounded operations in dt
// may stray from the reference, which rounds too: 2·ops·u·scale, with u the
// unit roundoff of dt (the relative error of one operation) and scale the
// sum of the operands' magnitudes (a sum) or the result's (a product), plus
// one smallest subnormal per operation for results below the normal range.
func roundingBound(dt wire.DType, ops, scale float64) float64 {
	u, tiny := 0x1p-53, 0x1p-1074
	switch dt {
	case wire.Float32:
		u, tiny = 0x1p-24, 0x1p-149
	case wire.BFloat16:
		u, tiny = 0x1p-8, 0x1p-133
	case wire.Float16:
		u, tiny = 0x1p-11, 0x1p-24
	}
	return 2*ops*u*scale + ops*tiny
}

// Check compares got with the reduction of inputs. Integers and min/max
// must match exactly. Float sum and product may differ from the rank-order
// reference only by rounding, because the switch folds in arrival order:
// for a sum of P terms |got − ref| ≤ 2(P−1)·u·Σ|xᵢ| (the classic bound
// γ₍P−1₎Σ|xᵢ|, doubled since the reference rounds too), for a product
// |got − ref| ≤ 2(P−1)·u·|Πxᵢ| (relative), with u the unit roundoff of
// the dtype; results below the smallest normal get an absolute slack of one
// subnormal step per operation. A NaN matches only a NaN, an infinity only
// an infinity. The error names the first element off.
func Check(dt wire.DType, op wire.Op, inputs [][]byte, got []byte) error {
	want, err := Reference(dt, op, inputs)
	if err != nil {
		return err
	}
	if len(got) != len(want) {
		return fmt.Errorf("result has %d bytes, want %d", len(got), len(want))
	}
	sz := dt.Size()
	exact := !dt.IsFloat() || op == wire.OpMin || op == wire.OpMax || len(inputs) <= 2
	for i := 0; i+sz <= len(want); i += sz {
		if exact {
			if string(got[i:i+sz]) != string(want[i:i+sz]) {
				return mismatch(dt, i/sz, got[i:], want[i:])
			}
			continue
		}
		g, w := specLoadFloat(dt, got[i:]), specLoadFloat(dt, want[i:])
		if g == w || (math.IsNaN(g) && math.IsNaN(w)) {
			continue
		}
		var scale float64
		if op == wire.OpSum {
			for _, in := range inputs {
				scale += math.Abs(specLoadFloat(dt, in[i:]))
			}
		} else {
			scale = math.Abs(w)
		}
		bound := roundingBound(dt, float64(len(inputs)-1), scale)
		if math.IsNaN(g) || math.IsNaN(w) || math.Abs(g-w) > bound || math.IsInf(g, 0) != math.IsInf(w, 0) {
			return fmt.Errorf("element %d: got %g, want %g (bound %g)", i/sz, g, w, bound)
		}
	}
	return nil
}

func mismatch(dt wire.DType, i int, got, want []byte) error {
	if dt.IsFloat() {
		return fmt.Errorf("element %d: got %g, want %g", i, specLoadFloat(dt, got), specLoadFloat(dt, want))
	}
	return fmt.Errorf("element %d: got %d, want %d", i, specLoadInt(dt, got), specLoadInt(dt, want))
}
