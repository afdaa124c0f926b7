package elem

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/flare-net/flare/wire"
)

// CustomOp is a reduction operator defined at run time: the point of Flare
// is that the switch's handler is programmable, so a job may reduce with an
// operator the switch was not built with. Each field is the operator on one
// element type; a nil field leaves that dtype unsupported for the operator.
// Float32 also serves bfloat16 and float16: both operands are widened to
// float32 and the result is rounded back to nearest even, as for the
// built-ins.
//
// The functions run on every core at once, once per element: they must be
// pure (no state, safe for concurrent use) and should be cheap.
type CustomOp struct {
	Name    string // what OpName returns and LookupOp finds; must not be a built-in's name
	Int8    func(a, b int8) int8
	Int16   func(a, b int16) int16
	Int32   func(a, b int32) int32
	Int64   func(a, b int64) int64
	Float32 func(a, b float32) float32 // also used for bfloat16 and float16 (widened, rounded back)
	Float64 func(a, b float64) float64
}

// customEntry is one registered operator with its kernels, built once at
// registration so that KernelFor only indexes.
type customEntry struct {
	name    string
	kernels [dtypeSlots]kernelPair
}

// registry is an immutable snapshot of the registered operators. Readers
// (KernelFor on every packet) load it with one atomic read and no lock;
// RegisterOp, rare and off the packet path, copies it and swaps the pointer.
type registry struct {
	ops    [256 - int(wire.OpCustomBase)]*customEntry // by code - OpCustomBase
	byName map[string]wire.Op
}

var (
	registryMu sync.Mutex // serialises writers; readers never take it
	customs    atomic.Pointer[registry]
)

// RegisterOp makes op available under code, from OpCustomBase up, to
// KernelFor, Fold, OpName and LookupOp. It fails if code is below
// OpCustomBase, if code or op.Name is taken (built-in names included), if
// op.Name is empty, or if op has no function at all. Operators cannot be
// unregistered: a kernel handed out stays valid for the life of the process.
//
// The operator must be commutative and associative for every dtype it
// defines, as sum, min and max are: packets arrive in any order and the
// aggregation designs combine them in different shapes (one buffer, B
// buffers, a tree), and the tests of reproducibility and order independence
// assume that only the floating-point rounding of sum and prod differs.
// RegisterOp cannot check this; an operator that breaks it gives results
// that depend on arrival order.
//
// Register operators at start-up, before jobs use them; RegisterOp is safe
// for concurrent use with itself and with KernelFor.
func RegisterOp(code wire.Op, op CustomOp) error {
	if code < wire.OpCustomBase {
		return fmt.Errorf("elem: register %q: op code %d is below wire.OpCustomBase (%d), the range of built-in operators",
			op.Name, uint8(code), uint8(wire.OpCustomBase))
	}
	if op.Name == "" {
		return fmt.Errorf("elem: register op code %d: empty name", uint8(code))
	}
	if _, ok := builtinByName(op.Name); ok {
		return fmt.Errorf("elem: register %q: the name of a built-in operator", op.Name)
	}
	e := &customEntry{name: op.Name}
	setCustom(e, wire.Int8, op.Int8)
	setCustom(e, wire.Int16, op.Int16)
	setCustom(e, wire.Int32, op.Int32)
	setCustom(e, wire.Int64, op.Int64)
	setCustom(e, wire.Float32, op.Float32)
	setCustom(e, wire.Float64, op.Float64)
	if op.Float32 != nil {
		setCustom(e, wire.BFloat16, widenBF16(op.Float32))
		setCustom(e, wire.Float16, widenF16(op.Float32))
	}
	if !e.any() {
		return fmt.Errorf("elem: register %q: no function for any dtype", op.Name)
	}

	registryMu.Lock()
	defer registryMu.Unlock()
	old := customs.Load()
	next := &registry{byName: make(map[string]wire.Op, 1)}
	if old != nil {
		if prev := old.ops[code-wire.OpCustomBase]; prev != nil {
			return fmt.Errorf("elem: register %q: op code %d is taken by %q", op.Name, uint8(code), prev.name)
		}
		if prev, ok := old.byName[op.Name]; ok {
			return fmt.Errorf("elem: register %q: name is taken by op code %d", op.Name, uint8(prev))
		}
		next.ops = old.ops
		for name, c := range old.byName {
			next.byName[name] = c
		}
	}
	next.ops[code-wire.OpCustomBase] = e
	next.byName[op.Name] = code
	customs.Store(next)
	return nil
}

// setCustom builds the kernels of e for dtype dt from f, if f is given.
func setCustom[T element](e *customEntry, dt wire.DType, f func(a, b T) T) {
	if f != nil {
		e.kernels[dt] = pair(f, applyInto(f))
	}
}

// any reports whether e defines the operator on at least one dtype.
func (e *customEntry) any() bool {
	for _, k := range e.kernels {
		if k.native != nil {
			return true
		}
	}
	return false
}

// lookupCustom returns the registered operator with code op, or nil.
func lookupCustom(op wire.Op) *customEntry {
	r := customs.Load()
	if r == nil || op < wire.OpCustomBase {
		return nil
	}
	return r.ops[op-wire.OpCustomBase]
}

// OpName returns the name of a built-in or registered operator ("sum",
// "absmax"), or a placeholder with the code ("op(200)") for any other.
func OpName(code wire.Op) string {
	if c := lookupCustom(code); c != nil {
		return c.name
	}
	return code.String()
}

// LookupOp returns the code of the built-in or registered operator called
// name, and whether there is one.
func LookupOp(name string) (wire.Op, bool) {
	if op, ok := builtinByName(name); ok {
		return op, true
	}
	if r := customs.Load(); r != nil {
		op, ok := r.byName[name]
		return op, ok
	}
	return 0, false
}

// builtinByName looks name up among the built-in operators without the
// error value wire.ParseOp would build.
func builtinByName(name string) (wire.Op, bool) {
	for _, op := range wire.Ops {
		if op.String() == name {
			return op, true
		}
	}
	return 0, false
}
