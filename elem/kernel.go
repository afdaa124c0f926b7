package elem

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/flare-net/flare/wire"
)

// Kernel folds src into dst element by element: dst[i] = op(dst[i], src[i]).
//
// Both slices hold little-endian elements of one dtype, as the packet payload
// carries them. The caller guarantees that they have equal length and that
// the length is a multiple of the element size: handlers check the element
// count once, when the packet is decoded, so the hot loop does not pay for an
// error return. A kernel handed slices that break this panics, since that is
// a bug in the caller rather than bad input; use Fold where the lengths have
// not been checked. dst and src may be the same slice but must not otherwise
// overlap.
//
// A kernel keeps no state and never allocates (a custom operator's own
// functions aside), so one kernel may run on many cores at once over
// different buffers.
type Kernel func(dst, src []byte)

// ErrUnsupported is wrapped by KernelFor and Fold when an operator is not
// defined on a dtype: and, or, xor on floating-point types, an unknown dtype,
// an unregistered custom operator, or a custom operator without a function
// for that dtype.
var ErrUnsupported = errors.New("elem: unsupported dtype/op combination")

// ErrLength is wrapped by Fold when dst and src differ in length or their
// length is not a whole number of elements.
var ErrLength = errors.New("elem: vector length mismatch")

// Table dimensions: codes index the tables directly, so slot 0 (no valid
// dtype or op has code 0) stays empty and reads as "unsupported".
const (
	dtypeSlots = int(wire.Float16) + 1
	opSlots    = int(wire.OpXor) + 1
)

// kernelPair holds the kernel KernelFor hands out (native) and the portable
// one built from the same scalar function. On big-endian machines the two are
// the same code; on little-endian ones the portable kernel is kept so that
// tests can check the big-endian path on every machine.
type kernelPair struct {
	native, portable Kernel
}

// builtins holds the kernels of the built-in operators, indexed by
// [dtype][op]: the look-up on the packet path is two bounds checks and a load.
var builtins = buildBuiltins()

// KernelFor returns the kernel that folds vectors of dtype dt with operator
// op, a built-in or one registered with RegisterOp. The look-up does not
// allocate, so a handler may call it per packet rather than caching the
// kernel. When op is not defined on dt the error wraps ErrUnsupported and
// names both.
//
// The built-in operators are sum, min, max and prod on every dtype, and
// and, or, xor on the integer ones. Their semantics, exact to the bit:
//   - integer sum and prod wrap around in two's complement, as Go arithmetic
//     does: the switch has no wider accumulator to overflow into, and
//     wrapping keeps integer sums exact and independent of arrival order;
//   - float32 and float64 sum and prod are one IEEE 754 operation per
//     element in the dtype's own precision, rounded to nearest even; a NaN
//     result carries whatever payload the hardware gives;
//   - float min and max are IEEE 754-2019 minimum and maximum, made
//     independent of operand order down to the bits: -0 orders below +0,
//     and any NaN operand gives the canonical quiet NaN (0x7fc00000,
//     0x7ff8000000000000; 0x7fc0 for bfloat16, 0x7e00 for float16), never
//     an operand's payload;
//   - bfloat16 and float16 widen both operands to float32, combine them
//     there and round back to nearest even (see BFloat16 and Float16);
//     a float16 sum or prod that is NaN is the canonical 0x7e00.
//
// Kernels view aligned payloads in place as typed slices on little-endian
// machines; on big-endian machines, and for payloads not aligned to their
// element size, they decode element by element, about ten times slower
// (the vector sums of amd64 take any payload's whole 128-byte iterations,
// sum_amd64.go).
func KernelFor(dt wire.DType, op wire.Op) (Kernel, error) {
	if k := lookup(dt, op); k.native != nil {
		return k.native, nil
	}
	return nil, unsupported(dt, op)
}

// Fold folds src into dst with the kernel for (dt, op): dst[i] = op(dst[i],
// src[i]). Unlike calling a Kernel it checks the lengths, returning an error
// that wraps ErrLength, so it suits vectors that have not been validated.
func Fold(dt wire.DType, op wire.Op, dst, src []byte) error {
	k, err := KernelFor(dt, op)
	if err != nil {
		return err
	}
	if size := dt.Size(); len(dst) != len(src) || len(dst)%size != 0 {
		return fmt.Errorf("%w: dst has %d bytes, src %d, and %v elements are %d bytes each",
			ErrLength, len(dst), len(src), dt, size)
	}
	k(dst, src)
	return nil
}

// lookup finds the kernels of (dt, op); both are nil when op is not defined
// on dt.
func lookup(dt wire.DType, op wire.Op) kernelPair {
	if int(dt) >= dtypeSlots {
		return kernelPair{}
	}
	if op.Builtin() {
		return builtins[dt][op]
	}
	if c := lookupCustom(op); c != nil {
		return c.kernels[dt]
	}
	return kernelPair{}
}

// unsupported explains why op is not defined on dt and what to do about it.
// It runs only on the error path, so it may take its time.
func unsupported(dt wire.DType, op wire.Op) error {
	switch {
	case !dt.Valid():
		return fmt.Errorf("%w: %s on %v (unknown dtype)", ErrUnsupported, OpName(op), dt)
	case op.BitwiseOnly():
		return fmt.Errorf("%w: %v on %v (bitwise operators are defined on integer dtypes only)", ErrUnsupported, op, dt)
	case op >= wire.OpCustomBase && lookupCustom(op) == nil:
		return fmt.Errorf("%w: %v on %v (custom operator not registered; see RegisterOp)", ErrUnsupported, op, dt)
	case op >= wire.OpCustomBase:
		return fmt.Errorf("%w: %s on %v (the custom operator has no %v function)", ErrUnsupported, OpName(op), dt, dt)
	default:
		return fmt.Errorf("%w: unknown operator %v on %v", ErrUnsupported, op, dt)
	}
}

// buildBuiltins builds every built-in kernel once, at package start.
func buildBuiltins() (t [dtypeSlots][opSlots]kernelPair) {
	// Narrow integers add eight or four to a 64-bit word, as PsPIN's vector
	// lanes do; benchmarks show 3-4x (int8) and 2x (int16) over one by one.
	setIntegers(&t, wire.Int8, sumLanes8)
	setIntegers(&t, wire.Int16, sumLanes16)
	setIntegers(&t, wire.Int32, sumInto[int32])
	setIntegers(&t, wire.Int64, sumInto[int64])
	setFloats(&t, wire.Float32, float32(0))
	setFloats(&t, wire.Float64, float64(0))

	bf := &t[wire.BFloat16]
	bf[wire.OpSum] = pair(bf16Sum, bf16SumInto)
	bf[wire.OpProd] = pair(bf16Prod, bf16ProdInto)
	bf[wire.OpMin] = pair(bf16Min, bf16MinInto)
	bf[wire.OpMax] = pair(bf16Max, bf16MaxInto)

	hf := &t[wire.Float16]
	hf[wire.OpSum] = pair(f16Sum, f16SumInto)
	hf[wire.OpProd] = pair(f16Prod, f16ProdInto)
	hf[wire.OpMin] = pair(f16Min, f16MinInto)
	hf[wire.OpMax] = pair(f16Max, f16MaxInto)

	vectorKernels(&t) // the int32, int64, float32 and float64 sums' vector lanes, where the CPU has them (sum_amd64.go)
	return t
}

// setIntegers fills the row of integer dtype dt, with sum as its sum loop.
func setIntegers[T integer](t *[dtypeSlots][opSlots]kernelPair, dt wire.DType, sum func(d, s []T)) {
	row := &t[dt]
	row[wire.OpSum] = pair(sumOf[T], sum)
	row[wire.OpProd] = pair(prodOf[T], prodInto[T])
	row[wire.OpMin] = pair(minOf[T], minInto[T])
	row[wire.OpMax] = pair(maxOf[T], maxInto[T])
	row[wire.OpAnd] = pair(andOf[T], andInto[T])
	row[wire.OpOr] = pair(orOf[T], orInto[T])
	row[wire.OpXor] = pair(xorOf[T], xorInto[T])
}

// setFloats fills the row of floating-point dtype dt; the zero value only
// selects T. The bitwise operators stay nil, that is, unsupported.
func setFloats[T float](t *[dtypeSlots][opSlots]kernelPair, dt wire.DType, _ T) {
	row := &t[dt]
	row[wire.OpSum] = pair(sumOf[T], sumInto[T])
	row[wire.OpProd] = pair(prodOf[T], prodInto[T])
	row[wire.OpMin] = pair(fminOf[T], fminInto[T])
	row[wire.OpMax] = pair(fmaxOf[T], fmaxInto[T])
}

// pair builds the native and portable kernels of one operator from its
// scalar definition and its typed loop, which must compute the same thing.
func pair[T element](scalar func(a, b T) T, loop func(d, s []T)) kernelPair {
	return kernelPair{native: nativeKernel(scalar, loop), portable: portableKernel(scalar)}
}

// Type sets of the element types. element adds BFloat16 and Float16 (uint16s
// underneath).
type (
	integer interface {
		~int8 | ~int16 | ~int32 | ~int64
	}
	float interface {
		~float32 | ~float64
	}
	number interface {
		integer | float
	}
	element interface {
		number | ~uint16
	}
)

// sizeOf is the size of one T in bytes. For an instantiated shape the
// compiler folds it to a constant.
func sizeOf[T element]() int {
	var v T
	return int(unsafe.Sizeof(v))
}

// aligned reports whether s starts at an address a T may be loaded from.
func aligned[T, S any](s []S) bool {
	var v T
	return uintptr(unsafe.Pointer(unsafe.SliceData(s)))&(unsafe.Alignof(v)-1) == 0
}

// reinterpret views the memory of s as a []T, as far as whole Ts reach. s
// must be aligned to T. The elements are in native byte order, so only a
// little-endian machine may do this to a payload (kernel_le.go).
func reinterpret[T, S any](s []S) []T {
	var v T
	var e S
	n := uintptr(len(s)) * unsafe.Sizeof(e) / unsafe.Sizeof(v)
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(s))), n)
}

// checkLengths enforces the Kernel contract. Its failure path is a separate
// function so that the check itself stays small enough to inline.
func checkLengths(dst, src []byte, size int) {
	if len(dst) != len(src) || len(dst)&(size-1) != 0 {
		panicLengths(len(dst), len(src), size)
	}
}

func panicLengths(dst, src, size int) {
	panic(fmt.Sprintf("elem: kernel called with dst of %d bytes and src of %d bytes for %d-byte elements", dst, src, size))
}

// Scalar definitions of the built-in operators: they are the semantics
// KernelFor documents. The loops below apply them, and the portable kernels
// call them per element.

func sumOf[T number](a, b T) T  { return a + b }
func prodOf[T number](a, b T) T { return a * b }
func minOf[T integer](a, b T) T { return min(a, b) }
func maxOf[T integer](a, b T) T { return max(a, b) }
func andOf[T integer](a, b T) T { return a & b }
func orOf[T integer](a, b T) T  { return a | b }
func xorOf[T integer](a, b T) T { return a ^ b }

// fminOf and fmaxOf are IEEE 754-2019 minimum and maximum, made independent
// of argument order down to the bits, so that a min/max allreduce gives the
// same bytes whatever order the packets arrive in:
//   - -0 orders below +0 (Go's min and max already do this);
//   - a NaN operand makes the result NaN (so do they), and always the same
//     one, the canonical quiet NaN (0x7fc00000, 0x7ff8000000000000), rather
//     than whichever operand's payload the hardware would pass on.
func fminOf[T float](a, b T) T {
	if m := min(a, b); m == m {
		return m
	}
	return quietNaN[T]()
}

func fmaxOf[T float](a, b T) T {
	if m := max(a, b); m == m {
		return m
	}
	return quietNaN[T]()
}

// quietNaN is the canonical quiet NaN of T.
func quietNaN[T float]() T {
	if sizeOf[T]() == 4 {
		return T(math.Float32frombits(0x7fc00000))
	}
	return T(math.Float64frombits(0x7ff8000000000000))
}

// Typed loops, one per operator, run over little-endian payloads viewed in
// place. Re-slicing s to len(d) lets the compiler drop the bounds checks.
// Unrolling them by hand gained nothing measurable (the loop is already
// load, op, store), so they are left plain.

func sumInto[T number](d, s []T) {
	s = s[:len(d)]
	for i := range d {
		d[i] += s[i]
	}
}

func prodInto[T number](d, s []T) {
	s = s[:len(d)]
	for i := range d {
		d[i] *= s[i]
	}
}

func minInto[T integer](d, s []T) {
	s = s[:len(d)]
	for i := range d {
		d[i] = min(d[i], s[i])
	}
}

func maxInto[T integer](d, s []T) {
	s = s[:len(d)]
	for i := range d {
		d[i] = max(d[i], s[i])
	}
}

func andInto[T integer](d, s []T) {
	s = s[:len(d)]
	for i := range d {
		d[i] &= s[i]
	}
}

func orInto[T integer](d, s []T) {
	s = s[:len(d)]
	for i := range d {
		d[i] |= s[i]
	}
}

func xorInto[T integer](d, s []T) {
	s = s[:len(d)]
	for i := range d {
		d[i] ^= s[i]
	}
}

func fminInto[T float](d, s []T) {
	s = s[:len(d)]
	for i := range d {
		d[i] = fminOf(d[i], s[i])
	}
}

func fmaxInto[T float](d, s []T) {
	s = s[:len(d)]
	for i := range d {
		d[i] = fmaxOf(d[i], s[i])
	}
}

// Lane masks for SWAR (SIMD within a register) sums: the top bit of every 8-
// or 16-bit lane of a 64-bit word.
const (
	topBits8  = 0x8080808080808080
	topBits16 = 0x8000800080008000
)

func sumLanes8(d, s []int8)   { sumLanes(d, s, topBits8) }
func sumLanes16(d, s []int16) { sumLanes(d, s, topBits16) }

// sumLanes adds int8 or int16 vectors a 64-bit word at a time where both are
// word-aligned (the switch's payloads are), and element by element for the
// rest. Lanes never carry into each other, so this is exact and does not
// depend on byte order.
func sumLanes[T int8 | int16](d, s []T, top uint64) {
	s = s[:len(d)]
	done := 0
	if aligned[uint64](d) && aligned[uint64](s) {
		dw, sw := reinterpret[uint64](d), reinterpret[uint64](s)
		addLanes(dw, sw, top)
		done = len(dw) * 8 / sizeOf[T]()
	}
	sumInto(d[done:], s[done:])
}

// addLanes adds the lanes that top marks, with two's complement wrap-around
// inside each lane: the lanes without their top bits are added, so no carry
// leaves a lane, and then the top bits, which are added modulo 2, by xor.
func addLanes(d, s []uint64, top uint64) {
	s = s[:len(d)]
	for i := range d {
		a, b := d[i], s[i]
		d[i] = (a&^top + b&^top) ^ (a^b)&top
	}
}

// zipInto folds s into d with f: d[i] = f(d[i], s[i]). Called with a
// named function of a concrete type (the bfloat16 and float16 loops), it is
// inlined, and f with it where f is small enough (the bfloat16 operators,
// float16 min and max), so the loop is the one written out; float16 sum and
// prod, which round in software, stay a call per element either way, and
// BenchmarkKernel shows no difference. The loops of the generic types are
// written out, since their operators (+=, min) are not values and a
// generic function value would stay a call.
func zipInto[T element](d, s []T, f func(a, b T) T) {
	s = s[:len(d)]
	for i := range d {
		d[i] = f(d[i], s[i])
	}
}

// applyInto turns a scalar operator (a custom one) into a typed loop. The
// call through f is indirect, which is the price of a run-time operator.
func applyInto[T element](f func(a, b T) T) func(d, s []T) {
	return func(d, s []T) { zipInto(d, s, f) }
}

// portableKernel applies scalar element by element, decoding each element
// from its little-endian bytes and encoding the result back. It is correct on
// any byte order and any alignment, and is what big-endian machines run; on
// little-endian ones it serves payloads that are not aligned to the element.
func portableKernel[T element](scalar func(a, b T) T) Kernel {
	size := sizeOf[T]()
	return func(dst, src []byte) {
		checkLengths(dst, src, size)
		for i := 0; i < len(dst); i += size {
			storeLE(dst[i:], scalar(loadLE[T](dst[i:]), loadLE[T](src[i:])))
		}
	}
}

// loadLE decodes one little-endian T from the front of b. It reads the bytes
// as an unsigned integer of T's size and reinterprets that value's memory as
// a T, the way math.Float32frombits does: both sides are native values, so
// this holds on either byte order.
func loadLE[T element](b []byte) T {
	var v T
	switch p := unsafe.Pointer(&v); sizeOf[T]() {
	case 1:
		*(*uint8)(p) = b[0]
	case 2:
		*(*uint16)(p) = binary.LittleEndian.Uint16(b)
	case 4:
		*(*uint32)(p) = binary.LittleEndian.Uint32(b)
	case 8:
		*(*uint64)(p) = binary.LittleEndian.Uint64(b)
	}
	return v
}

// storeLE encodes v little-endian at the front of b; see loadLE.
func storeLE[T element](b []byte, v T) {
	switch p := unsafe.Pointer(&v); sizeOf[T]() {
	case 1:
		b[0] = *(*uint8)(p)
	case 2:
		binary.LittleEndian.PutUint16(b, *(*uint16)(p))
	case 4:
		binary.LittleEndian.PutUint32(b, *(*uint32)(p))
	case 8:
		binary.LittleEndian.PutUint64(b, *(*uint64)(p))
	}
}
