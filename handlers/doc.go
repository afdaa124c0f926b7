// Package handlers holds Flare's packet handlers: plain code over an
// hpu.Task that never touches a socket, so the same handler runs in the
// real-time daemon and the virtual-time simulator. The element kernels they
// fold with are package elem's.
//
// Dense aggregation (Dense) implements the paper's three designs:
//
//   - single buffer: every packet of a block folds into one L1 buffer inside
//     the block's critical section (M = 1);
//   - multi-buffer: B buffers per block, a handler takes a free one, the last
//     to finish folds the B−1 others (M = B);
//   - tree: each packet gets its own buffer at the leaf of its child index
//     and siblings fold pairwise, left ⊕ right, when both are present, so
//     float results are bit-identical whatever the arrival order.
//
// A per-block contributor bitmap, sized for the job's fan-in (any P up to
// proto.MaxChildren), makes a retransmitted packet harmless; successive allreduce
// calls are told apart by the generation in the header.
//
// The usage loop for one job:
//
//	q, _ := unit.Memory().Reserve(buffers)          // admission
//	d, _ := handlers.NewDense(handlers.DenseConfig{ // the job's handler
//		Algo: wire.AlgoTree, Children: P, DType: wire.Float32, Op: wire.OpSum,
//		Elements: n, PacketElems: 256, Quota: q})
//	p.Handler = d; unit.Submit(p)                    // per packet
//	d.Close(); q.Release()                           // job end
//
// internal/harness plays P hosts against a processing unit in one process;
// the concurrent property tests run the handlers on it.
package handlers
