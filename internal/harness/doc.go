// Package harness plays P hosts against a processing unit in one process,
// without sockets: Run drives one job's dense handler (handlers.Dense),
// RunSparse one sparse job's (handlers.Sparse), each with staggered
// windows, random duplicates and reordering, retransmission, and
// back-to-back generations, and returns every host's result.
//
// It is test support: the handlers' concurrent property tests and
// benchmarks run on it (handlers' external tests), and flare bench
// calibrates the CPU with it. Hosts and the switch proper are exercised
// over real sockets elsewhere (switch, hostlib, cmd/flare).
//
//	res, err := harness.Run(ctx, harness.Config{Hosts: 8, DType: wire.Float32,
//		Op: wire.OpSum, Elements: n, Window: 64}, inputs)
//	err = elem.Check(wire.Float32, wire.OpSum, inputs, res.Out[0])
package harness
