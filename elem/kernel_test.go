package elem

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/flare-net/flare/wire"
)

// testOpCode is where the kernel tests register testOp.
const testOpCode = wire.Op(250)

// testOp is a custom operator the kernel tests fold with next to the
// built-ins: the smaller magnitude, the lower value on a tie, which is
// commutative and associative. It has no Float64 function, so float64 must
// be unsupported for it.
var testOp = CustomOp{
	Name:    "test-absmin",
	Int8:    absMin[int8],
	Int16:   absMin[int16],
	Int32:   absMin[int32],
	Int64:   absMin[int64],
	Float32: absMin[float32],
}

// absMin compares magnitudes in float64 (int64 magnitudes round, but
// monotonically), breaks ties by the plain minimum and turns any NaN into
// one NaN, so that the result does not depend on the order of operands.
func absMin[T int8 | int16 | int32 | int64 | float32](a, b T) T {
	fa, fb := math.Abs(float64(a)), math.Abs(float64(b))
	switch {
	case fa < fb:
		return a
	case fb < fa:
		return b
	case fa == fb:
		return min(a, b)
	}
	return T(math.NaN())
}

var registerTestOp = sync.OnceValue(func() error { return RegisterOp(testOpCode, testOp) })

// withTestOp registers testOp once per process (tests may run with -count).
func withTestOp(t *testing.T) {
	t.Helper()
	if err := registerTestOp(); err != nil {
		t.Fatal(err)
	}
}

// unregisterOp removes code from the registry, so that tests registering
// operators can clean up after themselves and run again.
func unregisterOp(code wire.Op) {
	registryMu.Lock()
	defer registryMu.Unlock()
	old := customs.Load()
	if old == nil || old.ops[code-wire.OpCustomBase] == nil {
		return
	}
	next := &registry{ops: old.ops, byName: make(map[string]wire.Op, len(old.byName))}
	for name, c := range old.byName {
		if c != code {
			next.byName[name] = c
		}
	}
	next.ops[code-wire.OpCustomBase] = nil
	customs.Store(next)
}

// allOps is every operator the tests try on every dtype.
func allOps() []wire.Op { return append(append([]wire.Op(nil), wire.Ops...), testOpCode) }

// TestKernelMatchesReference folds random vectors with every supported
// (dtype, op) and compares, bit for bit, with a scalar reference written
// independently over encoding/binary: the native kernel on aligned and on
// misaligned payloads (the latter take the portable path, but for the
// vector sums' whole iterations, sum_amd64.go), the portable
// kernel that big-endian machines run, and dst and src being one slice.
func TestKernelMatchesReference(t *testing.T) {
	withTestOp(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, dt := range wire.DTypes {
		for _, op := range allOps() {
			k := lookup(dt, op)
			if k.native == nil {
				continue
			}
			t.Run(dt.String()+"/"+OpName(op), func(t *testing.T) {
				for _, n := range []int{1, 2, 3, 5, 7, 31, 64, 127, 256, 1 + rng.IntN(600)} {
					dst, src := randVec(rng, dt, n), randVec(rng, dt, n)
					want := refFold(dt, op, dst, src)
					check := func(path string, k Kernel, offset int) {
						t.Helper()
						d, s := alignedCopy(dst, offset), alignedCopy(src, offset)
						k(d, s)
						if i := firstDiff(d, want, dt.Size()); i >= 0 {
							t.Fatalf("%s, %d elements: element %d: got % x, want % x (dst % x, src % x)", path, n, i,
								elemAt(d, dt, i), elemAt(want, dt, i), elemAt(dst, dt, i), elemAt(src, dt, i))
						}
						if !bytes.Equal(s, src) {
							t.Fatalf("%s: src modified", path)
						}
					}
					check("native", k.native, 0)
					check("native misaligned", k.native, 1)
					check("portable", k.portable, 0)

					self := refFold(dt, op, src, src)
					for _, k := range []Kernel{k.native, k.portable} {
						d := alignedCopy(src, 0)
						k(d, d)
						if i := firstDiff(d, self, dt.Size()); i >= 0 {
							t.Fatalf("dst == src, %d elements: element %d differs", n, i)
						}
					}
				}
			})
		}
	}
}

// TestKernelOrderIndependent checks that every operator but the
// floating-point sum and prod is commutative and associative down to the
// bits, NaN payloads and signed zeros included: the property that lets a
// switch fold packets in arrival order.
func TestKernelOrderIndependent(t *testing.T) {
	withTestOp(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, dt := range wire.DTypes {
		for _, op := range allOps() {
			k, err := KernelFor(dt, op)
			if err != nil || dt.IsFloat() && (op == wire.OpSum || op == wire.OpProd) {
				continue
			}
			t.Run(dt.String()+"/"+OpName(op), func(t *testing.T) {
				const n = 300
				a, b, c := randVec(rng, dt, n), randVec(rng, dt, n), randVec(rng, dt, n)
				fold := func(x, y []byte) []byte {
					d := bytes.Clone(x)
					k(d, y)
					return d
				}
				if ab, ba := fold(a, b), fold(b, a); !bytes.Equal(ab, ba) {
					t.Errorf("not commutative: element %d", firstDiff(ab, ba, dt.Size()))
				}
				if l, r := fold(fold(a, b), c), fold(a, fold(b, c)); !bytes.Equal(l, r) {
					t.Errorf("not associative: element %d", firstDiff(l, r, dt.Size()))
				}
			})
		}
	}
}

// TestKernelWraps pins the documented integer overflow: two's complement
// wrap-around, as Go arithmetic does.
func TestKernelWraps(t *testing.T) {
	tests := []struct {
		dt         wire.DType
		op         wire.Op
		a, b, want int64
	}{
		{wire.Int8, wire.OpSum, math.MaxInt8, 1, math.MinInt8},
		{wire.Int8, wire.OpSum, math.MinInt8, -1, math.MaxInt8},
		{wire.Int8, wire.OpProd, 16, 16, 0},
		{wire.Int8, wire.OpProd, -128, -1, -128},
		{wire.Int16, wire.OpSum, math.MaxInt16, math.MaxInt16, -2},
		{wire.Int16, wire.OpProd, 300, 300, 90000 - 65536},
		{wire.Int32, wire.OpSum, math.MaxInt32, 1, math.MinInt32},
		{wire.Int32, wire.OpProd, 1 << 16, 1 << 16, 0},
		{wire.Int64, wire.OpSum, math.MaxInt64, 1, math.MinInt64},
		{wire.Int64, wire.OpProd, math.MinInt64, -1, math.MinInt64},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v/%v/%d,%d", tt.dt, tt.op, tt.a, tt.b), func(t *testing.T) {
			d, s := intBytes(tt.dt, tt.a), intBytes(tt.dt, tt.b)
			if err := Fold(tt.dt, tt.op, d, s); err != nil {
				t.Fatal(err)
			}
			if want := intBytes(tt.dt, tt.want); !bytes.Equal(d, want) {
				t.Errorf("got % x, want % x", d, want)
			}
		})
	}
}

// TestKernelFloatMinMax pins the documented floating-point min and max:
// -0 below +0 and the canonical quiet NaN, whichever operand comes first.
func TestKernelFloatMinMax(t *testing.T) {
	negZero := math.Copysign(0, -1)
	payloadNaN := math.Float64frombits(0xfff0000000000123) // negative, signalling, with a payload
	nan := math.NaN()
	tests := []struct {
		a, b     float64
		min, max float64
	}{
		{1, 2, 1, 2},
		{negZero, 0, negZero, 0},
		{negZero, negZero, negZero, negZero},
		{math.Inf(-1), math.Inf(1), math.Inf(-1), math.Inf(1)},
		{payloadNaN, 1, nan, nan},
		{payloadNaN, nan, nan, nan},
		{math.Inf(1), payloadNaN, nan, nan},
	}
	for _, dt := range []wire.DType{wire.Float32, wire.Float64, wire.BFloat16, wire.Float16} {
		for _, tt := range tests {
			for _, op := range []wire.Op{wire.OpMin, wire.OpMax} {
				want := tt.min
				if op == wire.OpMax {
					want = tt.max
				}
				for _, order := range [][2]float64{{tt.a, tt.b}, {tt.b, tt.a}} {
					d, s := floatBytes(dt, order[0]), floatBytes(dt, order[1])
					if err := Fold(dt, op, d, s); err != nil {
						t.Fatal(err)
					}
					if w := canonicalFloatBytes(dt, want); !bytes.Equal(d, w) {
						t.Errorf("%v %v(%v, %v) = % x, want % x", dt, op, order[0], order[1], d, w)
					}
				}
			}
		}
	}
}

// TestKernelUnsupported checks the error of every undefined combination:
// it wraps ErrUnsupported and names the dtype and the operator.
func TestKernelUnsupported(t *testing.T) {
	withTestOp(t)
	tests := []struct {
		dt     wire.DType
		op     wire.Op
		dtName string
		opName string
	}{
		{wire.Float32, wire.OpAnd, "float32", "and"},
		{wire.Float64, wire.OpOr, "float64", "or"},
		{wire.BFloat16, wire.OpXor, "bfloat16", "xor"},
		{wire.Float16, wire.OpAnd, "float16", "and"},
		{wire.DType(0), wire.OpSum, "dtype(0)", "sum"},
		{wire.DType(99), wire.OpMax, "dtype(99)", "max"},
		{wire.Int32, wire.Op(0), "int32", "op(0)"},
		{wire.Int32, wire.Op(8), "int32", "op(8)"},
		{wire.Int32, wire.Op(127), "int32", "op(127)"},
		{wire.Int32, wire.Op(249), "int32", "op(249)"},
		{wire.Float64, testOpCode, "float64", testOp.Name},
	}
	for _, tt := range tests {
		t.Run(tt.dtName+"/"+tt.opName, func(t *testing.T) {
			k, err := KernelFor(tt.dt, tt.op)
			if k != nil || !errors.Is(err, ErrUnsupported) {
				t.Fatalf("KernelFor = %v, %v; want nil, ErrUnsupported", k != nil, err)
			}
			if msg := err.Error(); !strings.Contains(msg, tt.dtName) || !strings.Contains(msg, tt.opName) {
				t.Errorf("error %q does not name %s and %s", msg, tt.dtName, tt.opName)
			}
			if err := Fold(tt.dt, tt.op, make([]byte, 8), make([]byte, 8)); !errors.Is(err, ErrUnsupported) {
				t.Errorf("Fold: %v, want ErrUnsupported", err)
			}
		})
	}
}

// TestKernelLengths checks the length contract: Fold reports, a Kernel
// panics.
func TestKernelLengths(t *testing.T) {
	tests := []struct {
		dt       wire.DType
		dst, src int
	}{
		{wire.Int32, 8, 4},
		{wire.Int32, 4, 8},
		{wire.Int32, 6, 6},
		{wire.Float64, 12, 12},
		{wire.BFloat16, 3, 3},
		{wire.Float16, 4, 2},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v/%d,%d", tt.dt, tt.dst, tt.src), func(t *testing.T) {
			dst, src := make([]byte, tt.dst), make([]byte, tt.src)
			if err := Fold(tt.dt, wire.OpSum, dst, src); !errors.Is(err, ErrLength) {
				t.Errorf("Fold: %v, want ErrLength", err)
			}
			for path, k := range map[string]Kernel{"native": lookup(tt.dt, wire.OpSum).native, "portable": lookup(tt.dt, wire.OpSum).portable} {
				func() {
					defer func() {
						if recover() == nil {
							t.Errorf("%s kernel did not panic", path)
						}
					}()
					k(dst, src)
				}()
			}
		})
	}
	if err := Fold(wire.Int32, wire.OpSum, nil, nil); err != nil {
		t.Errorf("Fold of empty vectors: %v", err)
	}
}

// TestKernelZeroAllocs asserts the packet-path promise: looking a kernel up
// and running it allocates nothing, for every supported pair.
func TestKernelZeroAllocs(t *testing.T) {
	withTestOp(t)
	d, s := make([]byte, 1024), make([]byte, 1024)
	for _, dt := range wire.DTypes {
		for _, op := range allOps() {
			if _, err := KernelFor(dt, op); err != nil {
				continue
			}
			allocs := testing.AllocsPerRun(20, func() {
				k, _ := KernelFor(dt, op)
				k(d, s)
				k(d[1:9], s[3:11]) // misaligned: the portable path
			})
			if allocs != 0 {
				t.Errorf("%v/%s: %v allocations per run, want 0", dt, OpName(op), allocs)
			}
		}
	}
}

// TestKernelRegisterConcurrent registers operators while other goroutines
// look kernels and names up; run under -race it checks the copy-on-write
// registry.
func TestKernelRegisterConcurrent(t *testing.T) {
	const first, n = wire.Op(200), 8
	for i := range wire.Op(n) {
		t.Cleanup(func() { unregisterOp(first + i) })
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			d, s := make([]byte, 64), make([]byte, 64)
			for {
				select {
				case <-stop:
					return
				default:
				}
				for op := first; op < first+n; op++ {
					if k, err := KernelFor(wire.Int32, op); err == nil {
						k(d, s)
					}
					_ = OpName(op)
				}
				_, _ = LookupOp("concurrent-3")
			}
		})
	}
	for i := range wire.Op(n) {
		op := CustomOp{Name: fmt.Sprintf("concurrent-%d", i), Int32: sumOf[int32]}
		if err := RegisterOp(first+i, op); err != nil {
			t.Error(err)
		}
	}
	close(stop)
	wg.Wait()
	for i := range wire.Op(n) {
		if code, ok := LookupOp(fmt.Sprintf("concurrent-%d", i)); !ok || code != first+i {
			t.Errorf("LookupOp(concurrent-%d) = %d, %v", i, code, ok)
		}
	}
}

// refFold is the reference: element by element, decoded with
// encoding/binary, computed in the widest type of its kind where that makes
// the wrap-around explicit.
func refFold(dt wire.DType, op wire.Op, dst, src []byte) []byte {
	size := dt.Size()
	out := make([]byte, len(dst))
	for i := 0; i < len(dst); i += size {
		refElem(dt, op, out[i:i+size], dst[i:i+size], src[i:i+size])
	}
	return out
}

func refElem(dt wire.DType, op wire.Op, out, a, b []byte) {
	switch dt {
	case wire.Float32:
		x, y := math.Float32frombits(binary.LittleEndian.Uint32(a)), math.Float32frombits(binary.LittleEndian.Uint32(b))
		binary.LittleEndian.PutUint32(out, math.Float32bits(refFloat32(op, x, y)))
	case wire.BFloat16:
		x := math.Float32frombits(uint32(binary.LittleEndian.Uint16(a)) << 16)
		y := math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16)
		binary.LittleEndian.PutUint16(out, uint16(BFloat16From(refFloat32(op, x, y))))
	case wire.Float16:
		// Widened by the float64 specification, combined in float32 as
		// the kernels document, rounded back by the specification; a
		// built-in's NaN is the canonical one (a custom op's passes on).
		x := float32(specF16Value(binary.LittleEndian.Uint16(a)))
		y := float32(specF16Value(binary.LittleEndian.Uint16(b)))
		r := float64(refFloat32(op, x, y))
		if math.IsNaN(r) && op.Builtin() {
			binary.LittleEndian.PutUint16(out, 0x7e00)
			break
		}
		binary.LittleEndian.PutUint16(out, specF16Bits(r))
	case wire.Float64:
		x, y := math.Float64frombits(binary.LittleEndian.Uint64(a)), math.Float64frombits(binary.LittleEndian.Uint64(b))
		var r float64
		switch op {
		case wire.OpSum:
			r = x + y
		case wire.OpProd:
			r = x * y
		case wire.OpMin, wire.OpMax:
			r = refMinMax(x, y, op == wire.OpMin, math.Float64frombits(0x7ff8000000000000))
		default:
			panic("no float64 reference for " + OpName(op))
		}
		binary.LittleEndian.PutUint64(out, math.Float64bits(r))
	default:
		refInt(dt, op, out, a, b)
	}
}

func refFloat32(op wire.Op, x, y float32) float32 {
	switch op {
	case wire.OpSum:
		return x + y
	case wire.OpProd:
		return x * y
	case wire.OpMin, wire.OpMax:
		// The NaN must not pass through a float conversion: where the quiet
		// bit means signalling (legacy MIPS) that would replace it.
		if x != x || y != y {
			return math.Float32frombits(0x7fc00000)
		}
		return float32(refMinMax(float64(x), float64(y), op == wire.OpMin, 0))
	case testOpCode:
		return testOp.Float32(x, y)
	}
	panic("no float32 reference for " + OpName(op))
}

// refMinMax spells out the documented rules case by case. Widening float32
// to float64 is exact, and the result is an operand or the NaN given.
func refMinMax(x, y float64, isMin bool, nan float64) float64 {
	switch {
	case math.IsNaN(x) || math.IsNaN(y):
		return nan
	case x == 0 && y == 0:
		neg := math.Signbit(x) && math.Signbit(y)
		if isMin {
			neg = math.Signbit(x) || math.Signbit(y)
		}
		if neg {
			return math.Copysign(0, -1)
		}
		return 0
	case (x < y) == isMin:
		return x
	}
	return y
}

func refInt(dt wire.DType, op wire.Op, out, a, b []byte) {
	x, y := specLoadInt(dt, a), specLoadInt(dt, b)
	var r int64
	switch op {
	case wire.OpSum:
		r = x + y // the low bits of the wide sum are the wrapped narrow sum
	case wire.OpProd:
		r = x * y
	case wire.OpMin:
		r = min(x, y)
	case wire.OpMax:
		r = max(x, y)
	case wire.OpAnd:
		r = x & y
	case wire.OpOr:
		r = x | y
	case wire.OpXor:
		r = x ^ y
	case testOpCode:
		switch dt {
		case wire.Int8:
			r = int64(testOp.Int8(int8(x), int8(y)))
		case wire.Int16:
			r = int64(testOp.Int16(int16(x), int16(y)))
		case wire.Int32:
			r = int64(testOp.Int32(int32(x), int32(y)))
		default:
			r = testOp.Int64(x, y)
		}
	default:
		panic("no integer reference for " + OpName(op))
	}
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], uint64(r))
	copy(out, buf[:dt.Size()])
}

// intBytes encodes v as one element of dt: the low dt.Size() bytes of its
// two's complement (of any dtype, since benchVectors asks for float ones).
func intBytes(dt wire.DType, v int64) []byte {
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], uint64(v))
	return bytes.Clone(buf[:dt.Size()])
}

// floatBytes encodes v as one element of float dtype dt, as the reference
// stores its results.
func floatBytes(dt wire.DType, v float64) []byte {
	b := make([]byte, dt.Size())
	specStoreFloat(dt, b, v)
	return b
}

// canonicalFloatBytes is floatBytes with any NaN as the canonical quiet NaN.
func canonicalFloatBytes(dt wire.DType, v float64) []byte {
	if !math.IsNaN(v) {
		return floatBytes(dt, v)
	}
	switch dt {
	case wire.Float32:
		return binary.LittleEndian.AppendUint32(nil, 0x7fc00000)
	case wire.BFloat16:
		return binary.LittleEndian.AppendUint16(nil, 0x7fc0)
	case wire.Float16:
		return binary.LittleEndian.AppendUint16(nil, 0x7e00)
	}
	return binary.LittleEndian.AppendUint64(nil, 0x7ff8000000000000)
}

// randVec returns n random elements of dt: mostly random bits (for floats
// that includes NaNs with payloads, infinities and subnormals), some
// special values, and some ordinary small numbers so that sums and products
// do not all overflow.
func randVec(rng *rand.Rand, dt wire.DType, n int) []byte {
	size := dt.Size()
	b := make([]byte, n*size)
	for i := 0; i < len(b); i += size {
		e := b[i : i+size]
		switch p := rng.IntN(10); {
		case p < 6:
			var buf [8]byte
			binary.LittleEndian.PutUint64(buf[:], rng.Uint64())
			copy(e, buf[:])
		case p < 8:
			copy(e, specials(dt)[rng.IntN(len(specials(dt)))])
		default:
			if dt.IsFloat() {
				copy(e, floatBytes(dt, rng.NormFloat64()*4))
			} else {
				copy(e, intBytes(dt, rng.Int64N(21)-10))
			}
		}
	}
	return b
}

// specials lists the edge values of dt, encoded.
func specials(dt wire.DType) [][]byte {
	var out [][]byte
	if !dt.IsFloat() {
		bits := dt.Size() * 8
		for _, v := range []int64{0, 1, -1, 2, -(1 << (bits - 1)), 1<<(bits-1) - 1} {
			out = append(out, intBytes(dt, v))
		}
		return out
	}
	negZero := math.Copysign(0, -1)
	for _, v := range []float64{0, negZero, 1, -1, math.Inf(1), math.Inf(-1), math.NaN(),
		math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, math.SmallestNonzeroFloat64} {
		out = append(out, floatBytes(dt, v))
	}
	switch dt { // NaNs with payloads, of either sign, quiet and signalling
	case wire.Float32:
		for _, u := range []uint32{0x7f800001, 0xffc00123, 0x7fffffff} {
			out = append(out, binary.LittleEndian.AppendUint32(nil, u))
		}
	case wire.Float64:
		for _, u := range []uint64{0x7ff0000000000001, 0xfff8000000000123, 0x7fffffffffffffff} {
			out = append(out, binary.LittleEndian.AppendUint64(nil, u))
		}
	case wire.BFloat16:
		for _, u := range []uint16{0x7f81, 0xffc3, 0x7fff} {
			out = append(out, binary.LittleEndian.AppendUint16(nil, u))
		}
	case wire.Float16: // and the edges of its narrow range: ±65504, subnormals, 2⁻¹⁴
		for _, u := range []uint16{0x7c01, 0xfe03, 0x7fff, 0x7bff, 0xfbff, 0x0001, 0x83ff, 0x0400} {
			out = append(out, binary.LittleEndian.AppendUint16(nil, u))
		}
	}
	return out
}

// alignedCopy copies b into fresh memory starting offset bytes past an
// 8-byte boundary.
func alignedCopy(b []byte, offset int) []byte {
	words := make([]uint64, (len(b)+offset+7)/8+1)
	mem := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
	out := mem[offset : offset+len(b) : offset+len(b)]
	copy(out, b)
	return out
}

// firstDiff is the index of the first element at which a and b differ, or -1.
func firstDiff(a, b []byte, size int) int {
	for i := 0; i < len(a); i += size {
		if !bytes.Equal(a[i:i+size], b[i:i+size]) {
			return i / size
		}
	}
	return -1
}

func elemAt(b []byte, dt wire.DType, i int) []byte {
	return b[i*dt.Size() : (i+1)*dt.Size()]
}
