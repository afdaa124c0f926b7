package elem_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/wire"
)

// ExampleRegisterOp registers absmax, the largest magnitude, an operator
// used to agree on the scale of a quantised gradient block. It is
// commutative and associative, as RegisterOp requires.
func ExampleRegisterOp() {
	const opAbsMax = wire.OpCustomBase
	err := elem.RegisterOp(opAbsMax, elem.CustomOp{
		Name: "absmax",
		Float32: func(a, b float32) float32 {
			return float32(math.Max(math.Abs(float64(a)), math.Abs(float64(b))))
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	// A handler finds the kernel by the codes in the packet header.
	k, err := elem.KernelFor(wire.Float32, opAbsMax)
	if err != nil {
		fmt.Println(err)
		return
	}
	dst, src := float32s(1.5, -4, 2), float32s(-3, 2, -0.5)
	k(dst, src)
	fmt.Println(decodeFloat32s(dst))

	// Float32 serves bfloat16 too; float64 has no function, so no kernel.
	_, err = elem.KernelFor(wire.BFloat16, opAbsMax)
	fmt.Println(err)
	_, err = elem.KernelFor(wire.Float64, opAbsMax)
	fmt.Println(err)

	code, ok := elem.LookupOp("absmax")
	fmt.Println(code == opAbsMax, ok, elem.OpName(code))
	// Output:
	// [3 4 2]
	// <nil>
	// elem: unsupported dtype/op combination: absmax on float64 (the custom operator has no float64 function)
	// true true absmax
}

// float32s encodes vs as a little-endian payload.
func float32s(vs ...float32) []byte {
	b := make([]byte, 0, 4*len(vs))
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

func decodeFloat32s(b []byte) []float32 {
	vs := make([]float32, len(b)/4)
	for i := range vs {
		vs[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return vs
}

// The public tests share one operator, registered once per process because
// operators cannot be unregistered and tests may run with -count.
const sharedCode = wire.Op(240)

var registerShared = sync.OnceValue(func() error {
	return elem.RegisterOp(sharedCode, elem.CustomOp{
		Name:  "test-or-max",
		Int64: func(a, b int64) int64 { return max(a, b) },
	})
})

// registerSecond registers a second operator, after the shared one.
var registerSecond = sync.OnceValue(func() error {
	return elem.RegisterOp(sharedCode-1, elem.CustomOp{
		Name: "test-second-min",
		Int8: func(a, b int8) int8 { return min(a, b) },
	})
})

// Registering an operator keeps the ones registered before it: their
// kernels, names and codes.
func TestCustomRegisterKeepsEarlier(t *testing.T) {
	if err := registerShared(); err != nil {
		t.Fatal(err)
	}
	if err := registerSecond(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		code wire.Op
		dt   wire.DType
		name string
	}{{sharedCode, wire.Int64, "test-or-max"}, {sharedCode - 1, wire.Int8, "test-second-min"}} {
		if _, err := elem.KernelFor(c.dt, c.code); err != nil {
			t.Errorf("KernelFor(%v, %d): %v", c.dt, c.code, err)
		}
		if got, ok := elem.LookupOp(c.name); !ok || got != c.code || elem.OpName(c.code) != c.name {
			t.Errorf("LookupOp(%q) = %d, %v; OpName(%d) = %q", c.name, got, ok, c.code, elem.OpName(c.code))
		}
	}
}

func TestCustomRegisterOpErrors(t *testing.T) {
	if err := registerShared(); err != nil {
		t.Fatal(err)
	}
	fn := func(a, b int32) int32 { return a + b }
	tests := []struct {
		name string
		code wire.Op
		op   elem.CustomOp
		want string
	}{
		{"built-in code", wire.OpSum, elem.CustomOp{Name: "x", Int32: fn}, "below wire.OpCustomBase"},
		{"unused code below custom range", 127, elem.CustomOp{Name: "x", Int32: fn}, "below wire.OpCustomBase"},
		{"empty name", 241, elem.CustomOp{Int32: fn}, "empty name"},
		{"built-in name", 241, elem.CustomOp{Name: "sum", Int32: fn}, "built-in"},
		{"no function", 241, elem.CustomOp{Name: "x"}, "no function"},
		{"code taken", sharedCode, elem.CustomOp{Name: "x", Int32: fn}, "taken"},
		{"name taken", 241, elem.CustomOp{Name: "test-or-max", Int32: fn}, "taken"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := elem.RegisterOp(tt.code, tt.op)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("RegisterOp = %v, want an error containing %q", err, tt.want)
			}
			if _, kerr := elem.KernelFor(wire.Int32, tt.code); tt.code == 241 && !errors.Is(kerr, elem.ErrUnsupported) {
				t.Errorf("a failed registration left a kernel behind: %v", kerr)
			}
		})
	}
}

func TestCustomOpNameLookupOp(t *testing.T) {
	if err := registerShared(); err != nil {
		t.Fatal(err)
	}
	for _, op := range wire.Ops {
		if got := elem.OpName(op); got != op.String() {
			t.Errorf("OpName(%d) = %q, want %q", op, got, op.String())
		}
		if got, ok := elem.LookupOp(op.String()); !ok || got != op {
			t.Errorf("LookupOp(%q) = %d, %v", op.String(), got, ok)
		}
	}
	if got := elem.OpName(sharedCode); got != "test-or-max" {
		t.Errorf("OpName(%d) = %q", sharedCode, got)
	}
	if got, ok := elem.LookupOp("test-or-max"); !ok || got != sharedCode {
		t.Errorf("LookupOp(test-or-max) = %d, %v", got, ok)
	}
	if got := elem.OpName(242); got != "op(242)" {
		t.Errorf("OpName(242) = %q, want op(242)", got)
	}
	if _, ok := elem.LookupOp("no-such-op"); ok {
		t.Error("LookupOp(no-such-op) found something")
	}
}

// TestCustomOpFold runs a registered operator through Fold on int64, the
// one dtype it defines, and checks the others are refused.
func TestCustomOpFold(t *testing.T) {
	if err := registerShared(); err != nil {
		t.Fatal(err)
	}
	dst := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, 5), math.MaxUint64) // 5, -1
	src := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, 7), 3)              // 7, 3
	if err := elem.Fold(wire.Int64, sharedCode, dst, src); err != nil {
		t.Fatal(err)
	}
	if a, b := binary.LittleEndian.Uint64(dst), binary.LittleEndian.Uint64(dst[8:]); a != 7 || b != 3 {
		t.Errorf("got %d, %d, want 7, 3", a, b)
	}
	for _, dt := range wire.DTypes {
		if _, err := elem.KernelFor(dt, sharedCode); (err == nil) != (dt == wire.Int64) {
			t.Errorf("KernelFor(%v, test-or-max): %v", dt, err)
		}
	}
}
