// Package proto holds the rules of the Flare protocol that hosts and
// switches must both follow, beyond the byte layout that package wire
// fixes: the order in which a host sends its blocks (StaggeredOrder), the
// dense designs' bounds and the paper's choice among them (MaxChildren,
// MaxBuffers, Choose), and how a sparse vector is cut into packet streams
// (SparsePacker) and a block's stream from the switch is put back together
// and merged with its spills (SparseAssembler, MergeSparse).
//
// hostlib, the switch's handlers, the simulator and the model import it, so
// that the two ends and the model cannot drift apart; it imports wire, and
// elem for the kernels the merge folds with.
//
//	order := proto.StaggeredOrder(nil, rank, world, blocks, window) // send order
//	algo, b := proto.Choose(bytes, false)                            // design for auto
//	pk := proto.SparsePacker{DType: dt, BlockElems: be, PacketPairs: pp}
//	payload := pk.Packet(buf, &hdr, blk, pk.BlockPairs(pairs, int(blk)), seq)
package proto
