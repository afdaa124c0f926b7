package hpu

import (
	"errors"
	"fmt"
	"iter"
	"math"
)

// VirtualUnit is the processing unit in virtual time: a deterministic
// discrete-event simulator that runs the real handlers on the PsPIN cycle
// cost model instead of on core goroutines. Packets arrive at given cycles
// and are placed as HPU.SubmitWait places them (home cluster = block mod
// clusters; with Config.Overflow and S > 1 the least-loaded cluster when
// the home one is full; at most QueueDepth requests, queued plus running,
// per cluster, the others waiting for their home cluster), and run as
// PsPIN's cluster scheduler runs them: on the lowest-numbered idle core of the block's subset of S
// cores, or else queued in the cluster until one of those cores is free,
// which takes the oldest request it may run. (The real-time HPU hands a
// request to a core's own FIFO at once, the least-loaded core when none is
// idle, so that a received batch wakes each core once; with handlers of
// very different lengths, such as the tree's climbs, a request can then
// wait behind a long one while another core of its subset idles, which
// PsPIN's scheduler does not let happen.) A core runs its packets one
// after another; a handler's service time τ is the cycles it charges, lock
// waiting included.
//
// # How handlers share virtual time
//
// Every core runs its handlers on a coroutine (iter.Pull), and only one
// coroutine runs at a time, so a run is deterministic. The unit executes all
// handler code in cycle order: a handler runs until it charges cycles
// (Task.Charge*) or must wait for a lock, and then yields if another core or
// an arrival is due earlier, to be resumed when the clock reaches its cycle.
// Code between two charges therefore happens at one instant, in the same
// global order as everything else, and every handler sees the block state,
// the locks and the memory exactly as they are at its cycle. (Running each
// handler to completion instead would let a handler that started earlier
// take a lock again "in the future" and make one that started a little later
// wait for that; multi-buffer would look like single-buffer.)
//
// A lock held by a handler that is still running in virtual time is busy
// until that handler releases it. A core that finds it busy spins, as a
// PsPIN core does: it polls every Cost.LockBackoff cycles from its first
// attempt (continuously when the back-off is 0) and takes the lock at the
// first poll at or after the release, unless another core's poll came first.
// The whole wait is charged to the handler (Task.LockWaitCycles).
//
// # Ingress
//
// A packet that finds every eligible cluster queue full (its home one, and
// with Overflow the least-loaded one) waits for room in its home cluster, as
// HPU.SubmitWait does: the waiting packets are kept per home cluster, each
// in arrival order, and whenever a request leaves a cluster the packets
// waiting for it enter while it has room. A packet waiting for a full
// cluster does not hold up packets for other clusters (PsPIN keeps arrived
// packets in its packet buffer in per-message queues and hands each cluster
// its own work; there is no single ingress FIFO to block). The wait is
// reported (VirtualStats.IngressWaitCycles) and is not part of τ.
//
// # Time
//
// Now is the current cycle: during a handler (for example inside the
// egress's Emit) it is the cycle the handler has reached, so an egress that
// keeps a pointer to the unit timestamps what it receives with Now. Drivers
// add packets with Submit and timers with At, also from inside Emit or a
// timer, at cycles not before Now.
//
// A VirtualUnit is not safe for concurrent use; Close releases its
// coroutines.
type VirtualUnit struct {
	cfg      Config
	pl       placement
	mem      *Memory
	egress   Egress
	done     func(p *Packet, core int)
	clusters []vcluster
	cores    []vcore

	events  eventQueue
	seq     uint64
	clock   int64
	waiting []fifo[*Packet] // per home cluster: packets that found no room
	nwait   int             // packets waiting, all clusters together
	parked  []*vcore        // cores whose handler waits for a busy lock
	running bool            // inside Run
	closed  bool

	arrivals          int64
	ingressWaited     int64
	ingressWaitCycles int64
	ingressMax        int
	memNow, memMax    int   // buffers allocated at clock, and the most ever
	memArea           int64 // Σ buffers × cycles over [0, clock]
}

// lockHeld is Lock.freeAt while a handler holds the lock under a
// VirtualUnit (otherwise freeAt is the cycle of the last release).
const lockHeld = math.MaxInt64

// errStopped unwinds a handler suspended on a coroutine that Close stops.
var errStopped = errors.New("hpu: virtual unit closed")

type vcluster struct {
	queued                         []*Packet // admitted, waiting for an idle core of their subset, oldest first
	occ                            int       // requests held: queued or running
	occSum, occSamples, overflowIn int64
	occMax                         int64
}

// vcore is one core of a VirtualUnit: the packet given to it and the
// coroutine that runs its handler.
type vcore struct {
	u        *VirtualUnit
	cluster  int
	id       int
	pending  *Packet // given to it, not started
	busy     bool    // a packet is pending or running
	task     *Task
	next     func() (struct{}, bool) // resumes the coroutine (nil until first used)
	stop     func()
	yield    func(struct{}) bool
	idle     bool  // the coroutine waits for work and has no event pending
	lockWant *Lock // the busy lock the handler waits for
	lockFrom int64 // cycle of its first attempt: the phase of its polls
	stats    vcoreStats
}

type vcoreStats struct {
	packets, rejected, busy, cycles, waitCycles, contended int64
	hist                                                   [HistBuckets]int64
}

// NewVirtual builds a virtual-time unit of shape cfg. egress receives what
// handlers emit (at cycle Now); done, if not nil, is called when a packet's
// handler has returned, to give the packet back to its owner, with the
// core's index (cluster × CoresPerCluster + core), as New's.
func NewVirtual(cfg Config, egress Egress, done func(p *Packet, core int)) (*VirtualUnit, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if egress == nil {
		return nil, errors.New("hpu: egress is nil")
	}
	u := &VirtualUnit{cfg: cfg, pl: newPlacement(cfg), mem: newMemory(cfg), egress: egress, done: done}
	u.clusters = make([]vcluster, cfg.Clusters)
	u.waiting = make([]fifo[*Packet], cfg.Clusters)
	u.cores = make([]vcore, cfg.Cores())
	for i := range u.cores {
		c := &u.cores[i]
		c.u, c.cluster, c.id, c.idle = u, i/cfg.CoresPerCluster, i%cfg.CoresPerCluster, true
		c.task = &Task{Cluster: c.cluster, Core: c.id, cost: &u.cfg.Cost, egress: egress, sim: c}
		c.task.pegress, _ = egress.(PacketEgress)
	}
	return u, nil
}

// Config is the configuration the unit runs with, defaults applied.
func (u *VirtualUnit) Config() Config { return u.cfg }

// Memory is the unit's L1 memory: jobs reserve their quotas here.
func (u *VirtualUnit) Memory() *Memory { return u.mem }

// Now is the current virtual cycle (see the type's comment).
func (u *VirtualUnit) Now() int64 { return u.clock }

// Submit schedules p to arrive at cycle p.Arrival, which must not be before
// Now. The unit owns p until done is called for it.
func (u *VirtualUnit) Submit(p *Packet) error {
	switch {
	case u.closed:
		return ErrClosed
	case p.Handler == nil:
		return errors.New("hpu: packet has no handler")
	case p.Arrival < u.clock:
		return fmt.Errorf("hpu: packet arrives at cycle %d, before the virtual clock (cycle %d)", p.Arrival, u.clock)
	}
	u.push(event{at: p.Arrival, pkt: p})
	return nil
}

// At schedules fn to run at cycle at (not before Now), between handlers: a
// driver's timer, for example a host sending its next packet. fn may Submit
// and call At. Pass a func value made once, not a new closure per call, to
// keep a run free of allocations.
func (u *VirtualUnit) At(at int64, fn func()) error {
	switch {
	case u.closed:
		return ErrClosed
	case fn == nil:
		return errors.New("hpu: timer function is nil")
	case at < u.clock:
		return fmt.Errorf("hpu: timer at cycle %d, before the virtual clock (cycle %d)", at, u.clock)
	}
	u.push(event{at: at, fn: fn})
	return nil
}

// Run processes events until none is left: every submitted packet has run.
// It returns an error when handlers are left waiting for locks that no one
// will release (a deadlock in handler code).
func (u *VirtualUnit) Run() error { return u.RunUntil(math.MaxInt64) }

// RunUntil processes the events due at or before cycle limit. Packets still
// queued or running stay so; a later Run continues them.
func (u *VirtualUnit) RunUntil(limit int64) error {
	switch {
	case u.closed:
		return ErrClosed
	case u.running:
		return errors.New("hpu: Run called from inside a run (egress, timer or done hook)")
	}
	u.running = true
	defer func() { u.running = false }()
	for u.events.len() > 0 && u.events.min().at <= limit {
		ev := u.events.pop()
		u.observeMem()
		u.setClock(ev.at)
		switch {
		case ev.core != nil:
			ev.core.resume()
		case ev.pkt != nil:
			u.arrive(ev.pkt)
		default:
			ev.fn()
		}
	}
	u.observeMem()
	if u.events.len() == 0 && len(u.parked) > 0 {
		c := u.parked[0]
		return fmt.Errorf("hpu: deadlock at cycle %d: %d handlers wait for locks no running handler will release (cluster %d core %d since cycle %d)",
			u.clock, len(u.parked), c.cluster, c.id, c.lockFrom)
	}
	return nil
}

// Close stops the cores' coroutines. Handlers still suspended (after a
// RunUntil) are abandoned. Close is idempotent.
func (u *VirtualUnit) Close() {
	if u.closed {
		return
	}
	u.closed = true
	for i := range u.cores {
		if c := &u.cores[i]; c.stop != nil {
			c.stop()
		}
	}
}

func (u *VirtualUnit) push(ev event) {
	ev.seq = u.seq
	u.seq++
	u.events.push(ev)
}

// setClock moves the clock forward to t, accumulating the memory in use.
func (u *VirtualUnit) setClock(t int64) {
	if t > u.clock {
		u.memArea += int64(u.memNow) * (t - u.clock)
		u.clock = t
	}
}

// observeMem records the buffers allocated now; any change since the last
// look happened at the current cycle, because the clock has not moved since.
func (u *VirtualUnit) observeMem() {
	n := 0
	for _, a := range u.mem.arenas {
		n += a.inUse() // the unit's one goroutine is the arenas' only user
	}
	u.memNow = n
	u.memMax = max(u.memMax, n)
}

// arrive places p at once, or queues it for its home cluster.
func (u *VirtualUnit) arrive(p *Packet) {
	u.arrivals++
	if u.place(p) {
		return
	}
	u.waiting[u.pl.home(p.Hdr.Block)].push(p)
	u.nwait++
	u.ingressWaited++
	u.ingressMax = max(u.ingressMax, u.nwait)
}

// admitWaiting places the packets waiting for cluster ci, in order, while
// it has room.
func (u *VirtualUnit) admitWaiting(ci int) {
	w := &u.waiting[ci]
	for w.len() > 0 && u.enter(ci) {
		p := w.pop()
		u.nwait--
		u.ingressWaitCycles += u.clock - p.Arrival
		u.assign(ci, p)
	}
}

// place mirrors HPU.place: the placement policy picks the cluster for p
// and p is assigned there, or it reports that no eligible cluster has room.
func (u *VirtualUnit) place(p *Packet) bool {
	ci, overflow, ok := u.pl.cluster(p.Hdr.Block, u)
	if !ok {
		return false
	}
	if overflow {
		u.clusters[ci].overflowIn++
	}
	u.assign(ci, p)
	return true
}

// The VirtualUnit's occupancy, for the placement policy: a core's work is
// 1 while it is busy, because a core here holds one request at a time.
func (u *VirtualUnit) enter(ci int) bool {
	cl := &u.clusters[ci]
	if cl.occ >= u.cfg.QueueDepth {
		return false
	}
	cl.occ++
	return true
}

func (u *VirtualUnit) held(ci int) int64 { return int64(u.clusters[ci].occ) }

func (u *VirtualUnit) work(ci, j int) int64 {
	if u.cores[ci*u.cfg.CoresPerCluster+j].busy {
		return 1
	}
	return 0
}

// assign mirrors HPU.dispatch: it samples the queue occupancy p sees in
// cluster ci, which p has entered (itself included), and gives p to the
// lowest-numbered idle core of its subset, or queues it in the cluster
// until one of those cores is free (PsPIN's cluster scheduler: a request
// waits for an idle core, and the first core of its subset to finish takes
// the oldest request it may run; §4: "the packet waits in the input
// buffers memory until a core becomes available").
func (u *VirtualUnit) assign(ci int, p *Packet) {
	cl := &u.clusters[ci]
	occ := int64(cl.occ)
	cl.occSum += occ
	cl.occSamples++
	cl.occMax = max(cl.occMax, occ)
	if j, idle := u.pl.core(ci, p.Hdr.Block, u); idle {
		u.start(&u.cores[ci*u.cfg.CoresPerCluster+j], p)
		return
	}
	cl.queued = append(cl.queued, p)
}

// start gives p to the idle core co.
func (u *VirtualUnit) start(co *vcore, p *Packet) {
	co.busy, co.pending = true, p
	if co.idle {
		co.idle = false
		u.push(event{at: u.clock, core: co})
	}
}

// takeQueued gives the idle core co the oldest request queued in its
// cluster that its subset may run, if any.
func (u *VirtualUnit) takeQueued(co *vcore) {
	cl := &u.clusters[co.cluster]
	for i, p := range cl.queued {
		if u.pl.inSubset(p.Hdr.Block, co.id) {
			copy(cl.queued[i:], cl.queued[i+1:])
			cl.queued[len(cl.queued)-1] = nil
			cl.queued = cl.queued[:len(cl.queued)-1]
			u.start(co, p)
			return
		}
	}
}

// resume continues the core's coroutine at the current cycle.
func (c *vcore) resume() {
	if c.next == nil {
		c.next, c.stop = iter.Pull(c.body)
	}
	c.next()
}

// body is the core's coroutine: it runs the packet given to it and
// suspends until it is given the next.
func (c *vcore) body(yield func(struct{}) bool) {
	c.yield = yield
	defer func() {
		if r := recover(); r != nil && r != errStopped {
			panic(r)
		}
	}()
	for {
		for c.pending == nil {
			c.idle = true
			c.suspend()
		}
		p := c.pending
		c.pending = nil
		c.execute(p)
	}
}

// suspend gives control back to the event loop until it resumes this core.
func (c *vcore) suspend() {
	if !c.yield(struct{}{}) {
		panic(errStopped)
	}
}

// execute runs p's handler from the current cycle to its end, then frees
// the core's place in the cluster queue.
func (c *vcore) execute(p *Packet) {
	u, t := c.u, c.task
	start := u.clock
	t.restart(p, c.cluster, c.id, start)
	ok := t.run()
	u.observeMem()
	if t.now != u.clock {
		panic("hpu: virtual handler ended off the clock") // every advance goes through sync or lock
	}
	busy := t.now - start
	s := &c.stats
	if ok {
		s.packets++
	} else {
		s.rejected++
	}
	s.busy += busy
	s.cycles += t.cycles
	s.hist[histBucket(int64(u.cfg.Cost.Nanos(busy)))]++
	s.waitCycles += t.waitCyc
	s.contended += t.contends
	t.Pkt = nil
	if u.done != nil {
		u.done(p, c.cluster*u.cfg.CoresPerCluster+c.id)
	}
	c.busy = false
	u.clusters[c.cluster].occ--
	u.takeQueued(c)
	u.admitWaiting(c.cluster)
}
