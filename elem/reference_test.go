package elem

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/flare-net/flare/wire"
)

// The reference and the checkers are what every test of a sum is held to:
// the handlers', the host's, the ring's and the simulator's. A checker
// made loose passes any wrong sum, so these tests hold them to values
// worked by hand and to the rounding bound's exact edge.

// encode writes vs as elements of dt: integers as two's complement of
// their width, floats rounded to dt (the tests' values are exact in dt).
func encode(dt wire.DType, vs ...float64) []byte {
	sz := dt.Size()
	b := make([]byte, sz*len(vs))
	for i, v := range vs {
		e := b[i*sz:]
		switch dt {
		case wire.Int8:
			e[0] = byte(int8(v))
		case wire.Int16:
			binary.LittleEndian.PutUint16(e, uint16(int16(v)))
		case wire.Int32:
			binary.LittleEndian.PutUint32(e, uint32(int32(v)))
		case wire.Int64:
			binary.LittleEndian.PutUint64(e, uint64(int64(v)))
		case wire.Float32:
			binary.LittleEndian.PutUint32(e, math.Float32bits(float32(v)))
		case wire.Float64:
			binary.LittleEndian.PutUint64(e, math.Float64bits(v))
		case wire.BFloat16:
			binary.LittleEndian.PutUint16(e, uint16(BFloat16From(float32(v))))
		case wire.Float16:
			binary.LittleEndian.PutUint16(e, uint16(Float16From(float32(v))))
		}
	}
	return b
}

// ulpsUp is positive float v of dt moved k units in the last place up: its
// encoding's bits plus k.
func ulpsUp(dt wire.DType, v float64, k int) []byte {
	b := encode(dt, v)
	switch dt.Size() {
	case 2:
		binary.LittleEndian.PutUint16(b, binary.LittleEndian.Uint16(b)+uint16(k))
	case 4:
		binary.LittleEndian.PutUint32(b, binary.LittleEndian.Uint32(b)+uint32(k))
	default:
		binary.LittleEndian.PutUint64(b, binary.LittleEndian.Uint64(b)+uint64(k))
	}
	return b
}

// ranks is one single-element input per rank.
func ranks(dt wire.DType, vs ...float64) [][]byte {
	in := make([][]byte, len(vs))
	for i, v := range vs {
		in[i] = encode(dt, v)
	}
	return in
}

func TestReferenceByHand(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name   string
		dt     wire.DType
		op     wire.Op
		inputs []float64
		want   float64
	}{
		{"int8 sum wraps", wire.Int8, wire.OpSum, []float64{100, 100, -1}, -57},
		{"int16 min of negatives", wire.Int16, wire.OpMin, []float64{-1, 1, 300}, -1},
		{"int16 max of negatives", wire.Int16, wire.OpMax, []float64{-7, -300, -2}, -2},
		{"int32 prod", wire.Int32, wire.OpProd, []float64{3, -4, 5}, -60},
		{"int64 and", wire.Int64, wire.OpAnd, []float64{0xff, 0x3c, 0x36}, 0x34},
		{"int64 or", wire.Int64, wire.OpOr, []float64{0xc0, 0x0c, 0x01}, 0xcd},
		{"int64 xor", wire.Int64, wire.OpXor, []float64{0xff, 0x3c, 0x36}, 0xf5},
		// each step rounds to the dtype: 1 + half an ulp is a tie that
		// rounds to 1, twice; one rounding at the end would give 1 + ulp
		{"float32 rounds each step", wire.Float32, wire.OpSum, []float64{1, 0x1p-24, 0x1p-24}, 1},
		{"bfloat16 rounds each step", wire.BFloat16, wire.OpSum, []float64{1, 0x1p-8, 0x1p-8}, 1},
		{"float16 rounds each step", wire.Float16, wire.OpSum, []float64{1, 0x1p-11, 0x1p-11}, 1},
		{"float64 prod", wire.Float64, wire.OpProd, []float64{1.5, -2, 4}, -12},
		{"float64 min of signed zeros", wire.Float64, wire.OpMin, []float64{0, math.Copysign(0, -1)}, math.Copysign(0, -1)},
		{"float64 max of signed zeros", wire.Float64, wire.OpMax, []float64{math.Copysign(0, -1), 0}, 0},
		{"float32 min, NaN first", wire.Float32, wire.OpMin, []float64{nan, 1}, nan},
		{"float32 min, NaN last", wire.Float32, wire.OpMin, []float64{1, nan}, nan},
		{"float64 max, NaN first", wire.Float64, wire.OpMax, []float64{nan, -1}, nan},
	} {
		got, err := Reference(tc.dt, tc.op, ranks(tc.dt, tc.inputs...))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var g float64
		if tc.dt.IsFloat() {
			g = specLoadFloat(tc.dt, got)
		} else {
			g = float64(specLoadInt(tc.dt, got))
		}
		if math.IsNaN(tc.want) != math.IsNaN(g) || !math.IsNaN(g) && (g != tc.want || math.Signbit(g) != math.Signbit(tc.want)) {
			t.Errorf("%s: got %g, want %g", tc.name, g, tc.want)
		}
	}
	for _, op := range []wire.Op{wire.OpAnd, wire.OpOr, wire.OpXor} {
		if _, err := Reference(wire.Float32, op, ranks(wire.Float32, 1, 2)); !errors.Is(err, ErrUnsupported) {
			t.Errorf("float32 %s: %v, want ErrUnsupported", op, err)
		}
	}
}

// TestCheckCatches holds Check to its contract: exact where the switch
// must be exact, within the rounding bound of a float sum or product and
// not one unit in the last place past it, for every float dtype.
func TestCheckCatches(t *testing.T) {
	// Three operands of 1 (a sum of 3, a product of 3) give a bound of
	// 2·2·u·3 = 3 ulps of a result in [2, 4), whose ulp is 4u, in every
	// float dtype: 3 ulps off passes, 4 do not.
	for _, dt := range []wire.DType{wire.Float32, wire.Float64, wire.BFloat16, wire.Float16} {
		for _, tc := range []struct {
			op     wire.Op
			inputs []float64
		}{{wire.OpSum, []float64{1, 1, 1}}, {wire.OpProd, []float64{1, 1, 3}}} {
			in := ranks(dt, tc.inputs...)
			if err := Check(dt, tc.op, in, ulpsUp(dt, 3, 3)); err != nil {
				t.Errorf("%s %s: 3 ulps off, within the bound: %v", dt, tc.op, err)
			}
			if Check(dt, tc.op, in, ulpsUp(dt, 3, 4)) == nil {
				t.Errorf("%s %s: 4 ulps off, past the bound: not caught", dt, tc.op)
			}
		}
	}
	f64 := wire.Float64
	for _, tc := range []struct {
		name   string
		dt     wire.DType
		op     wire.Op
		inputs [][]byte
		got    []byte
	}{
		{"a longer result", wire.Int32, wire.OpSum, ranks(wire.Int32, 1, 2), encode(wire.Int32, 3, 0)},
		{"an int off in its second byte", wire.Int32, wire.OpSum, ranks(wire.Int32, 1, 2), encode(wire.Int32, 3+256)},
		{"a sum of two off by an ulp (one rounding, exact)", f64, wire.OpSum, ranks(f64, 1, 2), ulpsUp(f64, 3, 1)},
		{"a min off by an ulp", f64, wire.OpMin, ranks(f64, 2, 1, 3), ulpsUp(f64, 1, 1)},
		{"a max off by an ulp", f64, wire.OpMax, ranks(f64, 2, 1, 3), ulpsUp(f64, 3, 1)},
		{"NaN for a number", f64, wire.OpSum, ranks(f64, 1, 2, 3), encode(f64, math.NaN())},
		{"a number for infinity", f64, wire.OpSum, ranks(f64, math.Inf(1), 1, 1), encode(f64, 5)},
	} {
		if Check(tc.dt, tc.op, tc.inputs, tc.got) == nil {
			t.Errorf("%s: not caught", tc.name)
		}
	}
	if err := Check(f64, wire.OpSum, ranks(f64, math.Inf(1), 1, 1), encode(f64, math.Inf(1))); err != nil {
		t.Errorf("infinity for infinity: %v", err)
	}
}

// sparseF64 is float64 pairs from (index, value) couples.
func sparseF64(kv ...float64) []byte {
	var b []byte
	for i := 0; i+1 < len(kv); i += 2 {
		b = wire.AppendPair(b, uint32(kv[i]), encode(wire.Float64, kv[i+1]))
	}
	return b
}

// TestCheckSparseBound holds CheckSparse's float sums to the bound of the
// operands an index has, as TestCheckCatches holds Check's.
func TestCheckSparseBound(t *testing.T) {
	f64 := wire.Float64
	three := [][]byte{sparseF64(4, 1), sparseF64(4, 1), sparseF64(4, 1, 9, 2)}
	pair := func(idx uint32, v []byte) []byte { return wire.AppendPair(nil, idx, v) }
	within := append(pair(4, ulpsUp(f64, 3, 3)), pair(9, encode(f64, 2))...)
	if err := CheckSparse(f64, wire.OpSum, three, within); err != nil {
		t.Errorf("3 ulps off over 3 operands, within the bound: %v", err)
	}
	for name, tc := range map[string]struct {
		inputs [][]byte
		got    []byte
	}{
		"4 ulps off over 3 operands": {three, append(pair(4, ulpsUp(f64, 3, 4)), pair(9, encode(f64, 2))...)},
		"an ulp off over 2 operands": {[][]byte{sparseF64(4, 1), sparseF64(4, 2)}, pair(4, ulpsUp(f64, 3, 1))},
		"NaN for a number":           {three, sparseF64(4, math.NaN(), 9, 2)},
		"a number for infinity":      {[][]byte{sparseF64(4, math.Inf(1)), sparseF64(4, 1), sparseF64(4, 1)}, sparseF64(4, 5)},
		"a pair past the last":       {three, append(within, pair(11, encode(f64, 0))...)},
	} {
		if CheckSparse(f64, wire.OpSum, tc.inputs, tc.got) == nil {
			t.Errorf("%s: not caught", name)
		}
	}
}
