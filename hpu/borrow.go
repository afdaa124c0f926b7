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

// borrowed is the cores one SubmitBatch runs as, and its clock.
type borrowed struct {
	cores [maxBorrowed]*core
	n     int
	// clock is the submitter's clock for the batch (valid once marked):
	// a borrowed packet starts when the one before it ended (while timed),
	// one clock read a packet, as on a core. Queueing a packet on a core
	// ends the run (timed false), so that a packet's service time does
	// not include the submitter's work for others: the next borrowed one
	// starts from a fresh read.
	clock         mark
	marked, timed bool
}

// borrows reports whether waking a parked core would run nothing sooner:
// the submitters and the awake cores take every CPU.
func (h *HPU) borrows() bool {
	return h.cfg.Submitters > 0 && h.awake.Load()+int32(h.cfg.Submitters) >= h.procs
}

// holds reports whether b holds co.
func (b *borrowed) holds(co *core) bool {
	if !co.borrowed.Load() {
		return false
	}
	for _, c := range b.cores[:b.n] {
		if c == co {
			return true
		}
	}
	return false
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
