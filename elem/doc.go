// Package elem holds what Flare knows about the elements it reduces: the
// 16-bit float types (BFloat16, Float16) next to Go's own, the kernels that
// fold one little-endian vector into another for every dtype and operator
// (KernelFor, Fold), operators registered at run time (RegisterOp), and the
// reference reductions every result is checked against (Reference, Check,
// SparseReference, CheckSparse).
//
// The switch's handlers, the hosts (hostlib), the C ABI and the simulator
// import it; it imports only wire, for the dtype and operator codes.
//
//	k, err := elem.KernelFor(wire.Float32, wire.OpSum) // once per job
//	k(acc, payload)                                     // per packet: acc[i] += payload[i]
//	err = elem.Check(wire.Float32, wire.OpSum, inputs, acc)
package elem
