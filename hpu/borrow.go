package hpu

// A submitter that runs an idle core's packets itself.
//
// A core is a goroutine, and the box has fewer CPUs than the unit has
// cores. When the submitting goroutines (the switch's readers) and the
// awake cores already take every CPU the Go runtime has, waking a parked
// core runs its packet no sooner: the core's goroutine gets a CPU only when
// a submitter or an awake core gives one up, after a goroutine switch, and
// parks again when the burst has passed. SubmitBatch then borrows the core
// instead: it runs the packet's handler on its own goroutine, as that core
// (the core's Task, counters and CoreEgress chain, the same handler code),
// and gives the core back when the batch is submitted, after flushing what
// the core emitted and publishing its counters. What the emulator is does
// not change: a packet runs to completion on the core the policy chose,
// cores run at once up to the CPUs there are, and a core's goroutine runs
// whatever is queued for it. Where the CPUs outnumber the submitters and
// the awake cores, parked cores are woken as before.
//
// A core is run by one goroutine at a time. A core is borrowed only while
// its goroutine is parked with nothing queued; a borrowed core is not
// sleeping, so another submitter's push queues on it without waking it,
// and the give-back wakes the goroutine when something was queued. A
// submitter gives its cores back before it waits for room in a cluster, so
// no two submitters wait on each other's borrowed cores.

// maxBorrowed bounds the cores one SubmitBatch holds; past it, a packet's
// core is woken as without borrowing.
const maxBorrowed = 64

// borrowed is the cores one SubmitBatch runs as, its clock, and what their
// finished packets still hold of the unit's counts.
//
// A packet counts in its cluster's queue (cluster.occ) and in its core's
// work (core.load) from its placing until its handler returns, and each of
// those four changes is a locked instruction, which waits for the CPU's
// stores to drain. A borrowed packet that ends leaves its two counts to
// the submitter instead (its credits, room and idle), and the submitter's
// next packet placed in that cluster, on that core, takes them over, so
// that a run of borrowed packets moves neither count; what is left goes
// back with the cores (giveBack), and at once when a submitter waits for
// room in the cluster. The submitter sees the unit through b (its
// occupancy: the counts less its credits), so its placement, its queue
// samples and the policy's choices are those of counts given back at
// once; another submitter sees at most one request more per cluster and
// core of this one's for the rest of its batch, as if the packet had
// ended a little later (docs/PERFORMANCE.md: what it bought).
type borrowed struct {
	h     *HPU
	cores [maxBorrowed]*core
	idle  [maxBorrowed]int32 // finished packets of cores[i] still counted in its work
	n     int
	// room[ci] is how many finished packets of b's cores in cluster ci
	// still count in its queue (cluster.occ): a cluster's count is one,
	// whichever of its cores ran them. One entry a cluster, and a held
	// core's place in cores kept on the core (core.slot), so that a
	// packet's placing finds b's credits by index, not by walks over
	// the cores b holds, about one a cluster: at 32 clusters those
	// walks cost BenchmarkGenPath readers-1 10-14% of its time
	// (docs/PERFORMANCE.md).
	room []int32
	// clock is the submitter's clock for the batch (valid once marked):
	// a borrowed packet starts when the one before it ended (while timed),
	// one clock read a packet, as on a core. Queueing a packet on a core
	// ends the run (timed false), so that a packet's service time does
	// not include the submitter's work for others: the next borrowed one
	// starts from a fresh read.
	clock         mark
	marked, timed bool
}

// newBorrowed returns an empty borrowing state for a submitter of h. Its
// room takes whole 128-byte line pairs (roomAlign entries), so that no
// other submitter's state shares a line it writes a packet: allocated
// side by side, two readers' rooms of four clusters shared one, and the
// readers' packets cost 6% more with two readers on two CPUs
// (BenchmarkGenPath readers-2, docs/PERFORMANCE.md).
func newBorrowed(h *HPU) *borrowed {
	n := len(h.clusters)
	return &borrowed{h: h, room: make([]int32, n, (n+roomAlign-1)/roomAlign*roomAlign)}
}

// roomAlign is the int32s of a 128-byte line pair: the allocator puts an
// object whose size is a multiple of 128 bytes on line pairs of its own.
const roomAlign = 128 / 4

var _ occupancy = (*borrowed)(nil)

// borrows reports whether waking a parked core would run nothing sooner:
// the submitters and the awake cores take every CPU.
func (h *HPU) borrows() bool {
	return h.cfg.Submitters > 0 && h.awake.Load()+int32(h.cfg.Submitters) >= h.procs
}

// holds reports whether b holds co.
func (b *borrowed) holds(co *core) bool { return b.index(co) >= 0 }

// index is co's place in b.cores, or -1: the slot co keeps, if b's own
// list has co there (another submitter may hold co, at another slot).
func (b *borrowed) index(co *core) int {
	if i := int(co.slot.Load()); i < b.n && b.cores[i] == co {
		return i
	}
	return -1
}

// enter counts a request into cluster ci: in a slot a finished packet of
// b's left there, or else as the unit does.
func (b *borrowed) enter(ci int) bool {
	if b.room[ci] > 0 {
		b.room[ci]--
		return true
	}
	return b.h.enter(ci)
}

// held is how many requests cluster ci holds, less b's finished ones.
func (b *borrowed) held(ci int) int64 { return b.h.held(ci) - int64(b.room[ci]) }

// work is core j of cluster ci's work, less b's finished packets on it.
func (b *borrowed) work(ci, j int) int64 {
	co := b.h.clusters[ci].cores[j]
	if i := b.index(co); i >= 0 {
		return co.load.Load() - int64(b.idle[i])
	}
	return co.load.Load()
}

// counted counts a request placed on co into its work: in what a
// finished packet of b's left there, or as the unit does.
func (b *borrowed) counted(co *core) {
	if b != nil {
		if i := b.index(co); i >= 0 && b.idle[i] > 0 {
			b.idle[i]--
			return
		}
	}
	co.load.Add(1)
}

// leave is co.leave for a packet b ran as co: its counts stay with b,
// unless a submitter waits for room in the cluster.
func (b *borrowed) leave(co *core) {
	if co.cluster.waiting.Load() > 0 {
		co.leave()
		return
	}
	b.room[co.cluster.id]++
	b.idle[b.index(co)]++
}

// settle gives back what b's finished packets still hold of the counts.
func (b *borrowed) settle() {
	for i, co := range b.cores[:b.n] {
		if n := b.idle[i]; n > 0 {
			co.load.Add(-int64(n))
		}
		if n := b.room[co.cluster.id]; n > 0 {
			co.cluster.occ.Add(-int64(n))
			co.cluster.signalRoom()
			b.room[co.cluster.id] = 0
		}
		b.idle[i] = 0
	}
}

// take borrows co if its goroutine is parked with nothing queued.
func (b *borrowed) take(co *core) bool {
	if b.n == len(b.cores) || co.borrowed.Load() {
		return false
	}
	co.mu.Lock()
	if !co.sleeping || len(co.q) > 0 || co.exited {
		co.mu.Unlock()
		return false
	}
	co.sleeping = false // a push now queues without a wake-up
	co.slot.Store(int32(b.n))
	co.borrowed.Store(true)
	co.setAwake(true) // it runs: the unit counts it awake, as a woken core
	co.mu.Unlock()
	b.cores[b.n] = co
	b.n++
	return true
}

// runBorrowed runs p's handler on the submitter's goroutine, as co.
func (h *HPU) runBorrowed(b *borrowed, co *core, p *Packet) {
	switch {
	case !b.marked:
		b.clock, b.marked = h.clock.mark(), true
	case !b.timed:
		h.clock.next(&b.clock) // the packet starts now
	}
	b.timed = true
	h.execute(co, p, &b.clock, false)
	b.leave(co)
}

// Borrowed reports whether core (a Task's index, as CoreEgress gets it)
// runs on a submitter's goroutine. Asked from the core's own emit, it says
// that the caller is the submitter that borrowed the core, whose packet it
// runs (SubmitBatch borrows cores for its own batch only), so the emit
// may go straight to what that submitter sends.
func (h *HPU) Borrowed(core int) bool {
	k := h.cfg.CoresPerCluster
	return h.clusters[core/k].cores[core%k].borrowed.Load()
}

// Yield gives the CPU up as the unit's cores and submitters do
// (Config.LocalYield), for a goroutine that feeds them or takes what they
// emit (the switch's writers).
func (h *HPU) Yield() { h.yield() }

// giveBack ends the batch on every borrowed core, as its goroutine ends
// one, and returns each core to its goroutine: parked again, or woken when
// a packet was queued on it meanwhile. Then the submitter yields once.
func (h *HPU) giveBack(b *borrowed) {
	b.settle()
	for _, co := range b.cores[:b.n] {
		co.batch.publish(&co.stats)
		if ce := co.task.cegress; ce != nil {
			ce.Flush(co.task.index)
		}
		co.mu.Lock()
		co.borrowed.Store(false)
		queued := len(co.q) > 0
		if !queued {
			co.sleeping = true
			co.setAwake(false)
		}
		co.mu.Unlock()
		if queued {
			co.signal()
		}
	}
	yield := b.n > 0
	clear(b.cores[:b.n])
	b.n, b.marked, b.timed = 0, false, false
	if yield {
		// The goroutines that waited while the submitter ran the cores'
		// packets (a writer with what they emitted, the goroutines of
		// hosts that share the CPUs) run before it reads again.
		h.yield()
	}
}
