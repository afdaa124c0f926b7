// Package hostlib is the host side of Flare: what a training or HPC process
// links to reduce its vectors in a Flare switch, and the host-based ring
// allreduce the switch is compared with.
//
// # In-network allreduce
//
// A Session is one rank's membership in a job, in the manner of an MPI
// communicator or an NCCL communicator: it has a rank and a world size, and
// its collective calls reduce a caller's buffer in place. The job's element
// type (a dtype) and operator (an op: sum, min, max, prod, and, or, xor, or
// a custom code registered on the switch with elem.RegisterOp) and the
// vector's length in elements are fixed when the job is joined, because the
// switch reserves aggregation memory and sets up its handler for them. The
// usage loop:
//
//	s, err := hostlib.Join(ctx, hostlib.Options{
//		Switch: "127.0.0.1:7470", Job: 7, Token: secret,
//		Rank: rank, World: 4,
//		DType: wire.Float32, Op: wire.OpSum, Elements: len(grads),
//	})
//	if err != nil { ... }          // *SwitchError if refused, ErrTimeout if no answer
//	defer s.Close()                // leaves the job
//	for step := range steps {
//		computeGradients(grads)
//		if err := hostlib.AllReduce(ctx, s, grads); err != nil { ... }
//		// grads now holds the sum over all ranks
//	}
//
// AllReduce takes a typed slice ([]float32, []int32, []elem.BFloat16,
// []elem.Float16, ...; see Element and DTypeOf); AllReduceBytes takes the vector's
// little-endian bytes. Neither takes an op: the op, like the dtype and
// the length, is the job's, fixed at Join (Options.Op), where the switch
// set up its handler for it. Every rank must make the same calls in the
// same order.
//
// # What a call does
//
// Join sends a join packet (repeated every 100 ms) and returns when the
// switch, having heard from all World ranks, answers with the job's
// parameters: the window W (blocks a host may have in flight, sized by
// Little's law from the buffers it reserved), the aggregation design, the
// elements per packet and the number of blocks. An AllReduce call then cuts
// the vector into those blocks and streams them to the switch, each rank
// starting at a different block (staggered, proto.StaggeredOrder) so that
// the switch's cores rarely contend, keeping W in flight. The switch
// aggregates each block as its packets arrive and multicasts the result
// when every rank has contributed; the host copies it into place and sends
// the next block. A block whose result has not come within its timeout (20
// ms, doubled per retry up to 1 s) is sent again, flagged as a
// retransmission: the switch's per-block bitmap ignores a second copy and
// answers it with the stored result if the block is done. Successive calls
// carry successive generation numbers, so packets of one call never mix
// with another's.
//
// Packets go out in batches of up to 64 messages per system call (with
// GSO, a message is a run of datagrams to one address) and come in up to
// 64 datagrams at a time, through one reader goroutine per session, over a
// conn.Conn (a UDP socket unless Options.Conn gives another, such as a
// conn.MemNetwork conn in tests); in steady state a call allocates nothing. A session takes only what comes from the
// switch's address with the job's token, and checks every field before it
// uses it; Stats counts packets, retransmissions, call durations and the
// datagrams dropped, by reason.
//
// # Failure
//
// A call that fails here (its timeout, a cancelled context, Close during
// the call) aborts the job, as NCCL's ncclCommAbort does: the session tells
// the switch, which ends the job and tells the other ranks, whose calls
// then fail at once with an *AbortedError naming this rank and why,
// instead of at their own timeouts. A rank that dies without a word is
// named by the first survivor's timeout, which aborts for all. After a
// failed call the job is over: Close, and Join again (the job id is free at
// once).
//
// # Ring allreduce
//
// Ring (NewRing, RunLocalRing) is the host-based baseline: a reduce-scatter
// and an all-gather around a ring of TCP connections, the algorithm MPI,
// NCCL and Gloo run between hosts.
package hostlib
