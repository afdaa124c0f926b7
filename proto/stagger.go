package proto

// StaggeredOrder appends to dst the order in which host rank (of world
// hosts) sends the nblocks blocks of one allreduce when it keeps at most
// window blocks in flight, and returns it.
//
// Staggered sending (Flare §5) makes the packets of one block arrive spread
// in time, so two cores rarely work on the same block. Host i starts at
// block i·n/P of a group and wraps around inside it. The group is the whole
// vector when the window covers it; otherwise the vector is sent in groups
// of window blocks, each staggered the same way. Staggering over the whole
// vector with a smaller window would deadlock: a block completes only when
// all P hosts have sent it, and hosts that start n/P blocks apart would all
// fill their windows with blocks nobody else has sent yet.
func StaggeredOrder(dst []uint32, rank, world, nblocks, window int) []uint32 {
	if window <= 0 || window > nblocks {
		window = nblocks
	}
	for g := 0; g < nblocks; g += window {
		r := min(window, nblocks-g)
		off := 0
		if world > 0 {
			off = rank % world * r / world
		}
		for k := range r {
			dst = append(dst, uint32(g+(off+k)%r))
		}
	}
	return dst
}
