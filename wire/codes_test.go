package wire

import "testing"

// Each enumeration takes its first and last known values and refuses the
// values just past them, and a custom operator code is valid from
// OpCustomBase up.
func TestCodesValid(t *testing.T) {
	for _, tc := range []struct {
		name  string
		valid func(int) bool
		known []int // the ends of the known range
		not   []int // just past them
	}{
		{"type", func(v int) bool { return Type(v).Valid() }, []int{int(TypeJoin), int(typeMax)}, []int{int(TypeJoin) - 1, int(typeMax) + 1}},
		{"dtype", func(v int) bool { return DType(v).Valid() }, []int{int(Int8), int(dtypeMax)}, []int{int(Int8) - 1, int(dtypeMax) + 1}},
		{"built-in op", func(v int) bool { return Op(v).Builtin() }, []int{int(OpSum), int(opMax)}, []int{int(OpSum) - 1, int(opMax) + 1}},
		{"op", func(v int) bool { return Op(v).Valid() }, []int{int(OpSum), int(opMax), int(OpCustomBase), 255}, []int{int(OpSum) - 1, int(opMax) + 1, int(OpCustomBase) - 1}},
		{"algo", func(v int) bool { return Algo(v).Valid() }, []int{int(AlgoAuto), int(algoMax)}, []int{int(algoMax) + 1}},
		{"storage", func(v int) bool { return Storage(v).Valid() }, []int{int(StorageDense), int(storageMax)}, []int{int(storageMax) + 1}},
		{"error code", func(v int) bool { return ErrorCode(v).Valid() }, []int{int(CodeRefusedMemory), int(codeMax)}, []int{int(CodeRefusedMemory) - 1, int(codeMax) + 1}},
	} {
		for _, v := range tc.known {
			if !tc.valid(v) {
				t.Errorf("%s %d: refused, want it valid", tc.name, v)
			}
		}
		for _, v := range tc.not {
			if tc.valid(v) {
				t.Errorf("%s %d: valid, want it refused", tc.name, v)
			}
		}
	}
}

// The bitwise operators, and only they, are defined on integers alone.
func TestBitwiseOnly(t *testing.T) {
	for _, op := range Ops {
		want := op == OpAnd || op == OpOr || op == OpXor
		if op.BitwiseOnly() != want {
			t.Errorf("%v.BitwiseOnly() = %v, want %v", op, op.BitwiseOnly(), want)
		}
	}
}
