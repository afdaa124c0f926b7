package hpu

// Which core of a cluster runs a packet in real time, and which core
// goroutines are awake.

// dispatch samples the queue occupancy the packet sees (itself included)
// and assigns it to a core of the block's subset: the lowest-numbered idle
// one, or else the one with the least work (the placement policy), except
// that a core whose goroutine is parked is not woken while the Go
// runtime's procs are all taken by awake cores and an awake core of the
// subset can queue the packet. On a box with fewer CPUs than emulated
// cores, waking a 9th goroutine on 2 CPUs runs nothing sooner: a burst of
// 64 packets woke up to 32 goroutines, each for two packets, and the
// wake-ups and goroutine switches cost more than the handlers. Where CPUs
// are as many as the cores, every idle core is woken as before.
//
// Among the awake cores the choice is the policy's (an idle one, the
// lowest-numbered, or else the least work): a core with work is awake, so
// when the procs are taken, the awake cores of the subset are the ones
// the policy would choose from but for the parked idle ones.
func (h *HPU) dispatch(cl *cluster, p *Packet, a *arrivals, b *borrowed) *core {
	o := h.view(b)
	a.add(cl, o.held(cl.id))
	j := -1
	if h.awake.Load() >= h.procs {
		j = h.awakeCore(cl, p.Hdr.Block, o)
	}
	if j < 0 {
		j, _ = h.pl.core(cl.id, p.Hdr.Block, o)
	}
	best := cl.cores[j]
	b.counted(best)
	return best
}

// awakeCore is the awake core of block's subset in cl with the least work
// (the first of equals in the subset's order), or -1 when every core of
// the subset is parked.
func (h *HPU) awakeCore(cl *cluster, block uint32, o occupancy) int {
	best, bestWork := -1, int64(0)
	wi, set := -1, uint64(0)
	for c, k := h.pl.subsetBase(block), 0; k < h.pl.subset; c, k = h.pl.next(c), k+1 {
		if c>>6 != wi {
			wi = c >> 6
			set = cl.awakeSet[wi].Load()
		}
		if set&(1<<(c&63)) == 0 {
			continue
		}
		w := o.work(cl.id, c)
		if w == 0 {
			return c
		}
		if best < 0 || w < bestWork {
			best, bestWork = c, w
		}
	}
	return best
}

// setAwake counts the core's goroutine in or out of the awake ones (the
// unit's count and the cluster's set), under co.mu.
func (co *core) setAwake(awake bool) {
	bit := uint64(1) << (co.id % 64)
	if awake {
		co.awake.Add(1)
		co.cluster.awakeSet[co.id/64].Or(bit)
		return
	}
	co.awake.Add(-1)
	co.cluster.awakeSet[co.id/64].And(^bit)
}
