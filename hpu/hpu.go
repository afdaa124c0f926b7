package hpu

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/flare-net/flare/internal/yield"
)

// Errors returned by Submit.
var (
	ErrQueueFull = errors.New("hpu: input queues full")
	ErrClosed    = errors.New("hpu: processing unit stopped")
)

// HPU is the processing unit: clusters of cores with their queues and L1.
type HPU struct {
	cfg      Config
	pl       placement
	mem      *Memory
	egress   Egress
	done     func(p *Packet, core int)
	clusters []*cluster
	started  atomic.Bool
	stopped  atomic.Bool
	wg       sync.WaitGroup

	// awake counts the cores whose goroutine is not parked on its wake
	// channel (or is about to be signalled), and the borrowed ones (a
	// submitter runs as them); procs is how many goroutines
	// the Go runtime runs at once (GOMAXPROCS at New). Once procs cores
	// are awake, waking another buys no parallelism, only a goroutine
	// switch: dispatch then queues on an awake core of the block's subset
	// (see dispatch).
	awake atomic.Int32
	procs int32

	// The cores' clock (clock.go), read once per packet.
	clock clock

	// yield gives the CPU up where a core or a submitter lets others run
	// (Config.LocalYield).
	yield func()
}

type cluster struct {
	id    int
	depth int64
	occ   atomic.Int64 // handler requests held: queued or running
	// room is signalled when a request leaves while a submitter waits.
	room    chan struct{}
	waiting atomic.Int32
	cores   []*core
	// awakeSet has bit j (of word j/64) set while core j's goroutine is
	// awake, written under the core's mu, read without it by dispatch.
	awakeSet []atomic.Uint64

	occSum     atomic.Int64 // queue occupancy summed over arrival samples
	occSamples atomic.Int64
	occMax     atomic.Int64
	overflowIn atomic.Int64 // packets received because their home cluster was full
}

// core is one core: a FIFO of packets assigned to it, and the goroutine
// that runs them. The goroutine takes the whole FIFO at once and sleeps on
// wake only when it is empty, so a burst costs one wake-up, not one per
// packet.
type core struct {
	id       int
	cluster  *cluster
	mu       sync.Mutex
	q        []*Packet   // assigned, not yet taken; at most the cluster's depth
	sleeping bool        // under mu: the goroutine waits on wake, and whoever queues next sends it
	exited   bool        // under mu: the goroutine has returned (the unit stopped); nothing may be queued
	borrowed atomic.Bool // set under mu: a submitter runs as this core (borrow.go), and its goroutine waits
	wake     chan struct{}
	awake    *atomic.Int32 // the unit's count of awake cores
	load     atomic.Int64  // assigned and not finished: 0 means idle
	slot     atomic.Int32  // its place in the borrowing submitter's cores (borrow.go), beside load: a placing reads both
	task     Task
	stats    coreCounters
	batch    batchCounters // the goroutine's own: its batch's counts, not yet in stats
}

// New builds a processing unit. egress receives what handlers emit; done, if
// not nil, is called on a core after a packet's handler returns, to give the
// packet's memory back to its owner, with the core's index (as
// CoreEgress's): an owner can gather what one core gives back and take it
// a batch at a time (CoreEgress.Flush ends each core's batch).
func New(cfg Config, egress Egress, done func(p *Packet, core int)) (*HPU, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if egress == nil {
		return nil, errors.New("hpu: egress is nil")
	}
	h := &HPU{cfg: cfg, pl: newPlacement(cfg), mem: newMemory(cfg), egress: egress, done: done, clock: newClock()}
	h.procs = int32(runtime.GOMAXPROCS(0))
	h.yield = runtime.Gosched
	if cfg.LocalYield {
		h.yield = yield.Local
	}
	for c := 0; c < cfg.Clusters; c++ {
		cl := &cluster{id: c, depth: int64(cfg.QueueDepth), room: make(chan struct{}, 1), awakeSet: make([]atomic.Uint64, (cfg.CoresPerCluster+63)/64)}
		h.mem.arenas[c].clock = steady
		for k := 0; k < cfg.CoresPerCluster; k++ {
			co := &core{id: k, cluster: cl, q: make([]*Packet, 0, cfg.QueueDepth), wake: make(chan struct{}, 1), awake: &h.awake}
			co.task = Task{cost: &h.cfg.Cost, egress: egress}
			co.task.pegress, _ = egress.(PacketEgress)
			co.task.cegress, _ = egress.(CoreEgress)
			co.task.kegress, _ = egress.(KeptEgress)
			co.task.index = c*cfg.CoresPerCluster + k
			cl.cores = append(cl.cores, co)
			co.setAwake(true)
		}
		h.clusters = append(h.clusters, cl)
	}
	return h, nil
}

// Config is the configuration the unit runs with, defaults applied.
func (h *HPU) Config() Config { return h.cfg }

// Memory is the unit's L1 memory, for admission (Reserve) and statistics.
func (h *HPU) Memory() *Memory { return h.mem }

// Run starts one goroutine per core and blocks until ctx is done; then the
// cores finish the packets already queued and Run returns nil.
func (h *HPU) Run(ctx context.Context) error {
	if !h.started.CompareAndSwap(false, true) {
		return errors.New("hpu: Run called twice")
	}
	for _, cl := range h.clusters {
		for _, co := range cl.cores {
			h.wg.Add(1)
			go h.loop(ctx, co)
		}
	}
	<-ctx.Done()
	h.stopped.Store(true)
	h.wg.Wait()
	return nil
}

// coreYields is how many times a core whose queue ran dry yields to the
// other goroutines (HPU.yield) before it parks: the reader is
// mid-burst more often than not, so the core's next packets usually come
// while it yields, and it takes them in a batch, awake, instead of parking
// and being woken for each few (a park and a wake-up cost more than the
// handler of a 1 KiB packet). A real PsPIN core polls its queue the same
// way. Only while the awake cores and the submitters leave a proc free
// (spareProc): 32 cores yielding in turn on one CPU leave the reader a
// 33rd of it (8 yields each, unguarded, cost 40% more CPU a packet than
// none in BenchmarkMemPath), beyond procs the dispatch queues on the awake
// cores anyway, and where the submitters take the procs they run parked
// cores' packets themselves (borrow.go): a core that stayed awake there
// took every packet placed on it through its queue and goroutine
// switches, and kept itself awake doing so (a quarter of the packets at
// one CPU, 7% of its CPU a packet, docs/PERFORMANCE.md). An idle unit
// parks within a few yields.
const coreYields = 4

// spareProc reports whether a core whose queue ran dry has a proc to wait
// on: the awake cores (itself included) and the submitters do not take
// them all.
func (h *HPU) spareProc() bool {
	return h.awake.Load()+int32(h.cfg.Submitters) <= h.procs
}

// loop is core co's goroutine: it runs the packets queued for it, a
// batch at a time, and parks when none come.
func (h *HPU) loop(ctx context.Context, co *core) {
	defer h.wg.Done()
	batch := make([]*Packet, 0, h.cfg.QueueDepth)
	yields := 0
	for {
		co.mu.Lock()
		if co.borrowed.Load() && (len(co.q) > 0 || ctx.Err() == nil) {
			// Woken while a submitter runs as this core (by ctx, or
			// mid-hand-over): the give-back wakes it for what is queued.
			co.mu.Unlock()
			h.yield()
			continue
		}
		if len(co.q) == 0 {
			if ctx.Err() != nil {
				co.exited = true // under mu: a push from now on is refused, not lost
				co.mu.Unlock()
				return // stopped, and nothing left to run
			}
			if yields < coreYields && h.spareProc() {
				co.mu.Unlock()
				yields++
				h.yield()
				continue
			}
			yields = 0
			co.sleeping = true
			co.setAwake(false)
			co.mu.Unlock()
			select {
			case <-co.wake:
			case <-ctx.Done():
			}
			continue
		}
		yields = 0
		batch = append(batch[:0], co.q...)
		clear(co.q)
		co.q = co.q[:0]
		co.mu.Unlock()
		m := h.clock.mark()
		for i, p := range batch {
			h.execute(co, p, &m, i == len(batch)-1)
			co.leave()
		}
		if ce := co.task.cegress; ce != nil {
			ce.Flush(co.task.index)
		}
		clear(batch)
	}
}

// execute runs p's handler on co, from when the packet before it in the
// run that m marks ended (m.last): each packet costs one clock read. A
// packet's service time therefore includes the core's bookkeeping after
// the previous one (the done hook, the counters), as a real core's would.
// The counts go to the core's batch counters, published to Stats with the
// batch's last packet.
func (h *HPU) execute(co *core, p *Packet, m *mark, last bool) {
	t := &co.task
	t.reset(p, co.cluster.id, co.id)
	start := m.last
	t.started = h.clock.epochUnix + start
	ok := t.run()
	busy := h.clock.next(m) - start
	b := &co.batch
	if ok {
		b.packets++
	} else {
		b.rejected++
	}
	b.busyNs += busy
	b.hist[histBucket(busy)]++
	b.cycles += t.cycles
	b.contended += t.contends
	b.waitNs += t.waitNs
	b.waitCycles += t.waitCyc
	if last {
		b.publish(&co.stats)
	}
	t.Pkt = nil
	if h.done != nil {
		h.done(p, t.index)
	}
}

// Submit schedules p without blocking: to its home cluster (block mod
// clusters), or, with Config.Overflow and S > 1, to the least-loaded
// cluster when the home queue is full. It returns ErrQueueFull when no
// eligible queue has room; the caller drops or retries.
func (h *HPU) Submit(p *Packet) error {
	var a arrivals
	co, err := h.place(p, &a, nil)
	a.flush()
	if err != nil {
		return err
	}
	return h.commit(co, p)
}

// commit queues p on the core place chose, or undoes the placing and
// returns ErrClosed when that core has exited meanwhile: place's check of
// stopped may precede the cores' exit, and a packet queued after it would
// never run nor be given back.
func (h *HPU) commit(co *core, p *Packet) error {
	if _, ok := co.push(p, true); !ok {
		h.unplace(co)
		return ErrClosed
	}
	return nil
}

// unplace undoes place's counts for a packet that was not queued.
func (h *HPU) unplace(co *core) { co.leave() }

// leave counts a request out of the core and its cluster, when its handler
// has run or it was not queued after all, and tells a submitter waiting
// for room in the cluster.
func (co *core) leave() {
	co.load.Add(-1)
	cl := co.cluster
	cl.occ.Add(-1)
	cl.signalRoom()
}

// signalRoom tells a submitter waiting for room in the cluster that a
// request left.
func (cl *cluster) signalRoom() {
	if cl.waiting.Load() > 0 {
		select {
		case cl.room <- struct{}{}:
		default:
		}
	}
}

// place picks the cluster and core for p and counts it in; ErrQueueFull
// when no eligible cluster has room. b, when not nil, is the submitter's
// borrowing state, whose finished packets' counts p may take over.
func (h *HPU) place(p *Packet, a *arrivals, b *borrowed) (*core, error) {
	if h.stopped.Load() {
		return nil, ErrClosed
	}
	ci, overflow, ok := h.pl.cluster(p.Hdr.Block, h.view(b))
	if !ok {
		return nil, ErrQueueFull
	}
	cl := h.clusters[ci]
	if overflow {
		cl.overflowIn.Add(1)
	}
	return h.dispatch(cl, p, a, b), nil
}

// view is the occupancy submitter b places by: the unit's, less b's
// credits (borrowed); the unit's own where b is nil.
func (h *HPU) view(b *borrowed) occupancy {
	if b != nil {
		return b
	}
	return h
}

// The HPU's occupancy, for the placement policy: the clusters' counts are
// atomic, and enter claims room with a compare-and-swap.
func (h *HPU) enter(ci int) bool    { return h.clusters[ci].enter() }
func (h *HPU) held(ci int) int64    { return h.clusters[ci].occ.Load() }
func (h *HPU) work(ci, j int) int64 { return h.clusters[ci].cores[j].load.Load() }

// SubmitWait is Submit with back-pressure: when every eligible queue is
// full it waits for room in the home cluster, or for ctx.
func (h *HPU) SubmitWait(ctx context.Context, p *Packet) error {
	var a arrivals
	co, err := h.placeWait(ctx, p, &a)
	a.flush()
	if err != nil {
		return err
	}
	return h.commit(co, p)
}

func (h *HPU) placeWait(ctx context.Context, p *Packet, a *arrivals) (*core, error) {
	co, err := h.place(p, a, nil)
	if err != ErrQueueFull {
		return co, err
	}
	home := h.clusters[h.pl.home(p.Hdr.Block)]
	home.waiting.Add(1)
	defer home.waiting.Add(-1)
	for !home.enter() {
		select {
		case <-home.room:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if h.stopped.Load() {
			return nil, ErrClosed
		}
	}
	return h.dispatch(home, p, a, nil), nil
}

// SubmitBatch submits ps in order with SubmitWait's back-pressure, but wakes
// each core once for the whole batch (and before it has to wait for room),
// so that a burst from the network costs one wake-up per core instead of
// one per packet. Where no CPU is free for a parked core (Config.Submitters),
// it runs that core's packets itself and gives the core back on return
// (borrow.go). It returns how many packets were submitted: on an error
// (ctx done, or the unit stopped) ps[n:] were not. It makes a borrowing
// state for the batch: a goroutine that submits batch after batch, as a
// switch's reader does, keeps a Submitter instead.
func (h *HPU) SubmitBatch(ctx context.Context, ps []*Packet) (int, error) {
	return h.NewSubmitter().SubmitBatch(ctx, ps)
}

// Submitter is one submitting goroutine's way into the unit: SubmitBatch
// with a borrowing state of its own, made once, so that a batch allocates
// nothing. Its lines stay with its goroutine's CPU: a state shared by the
// submitters (a pool, as before) cost each batch a lock and a few lines
// last written by another reader's CPU (with the two vCPUs on separate
// dies, ~200 ns each; docs/PERFORMANCE.md). A Submitter is for one
// goroutine at a time.
type Submitter struct {
	h *HPU
	b *borrowed
}

// NewSubmitter returns a Submitter of the unit.
func (h *HPU) NewSubmitter() *Submitter { return &Submitter{h: h, b: newBorrowed(h)} }

// SubmitBatch is HPU.SubmitBatch through s's own borrowing state.
func (s *Submitter) SubmitBatch(ctx context.Context, ps []*Packet) (int, error) {
	return s.h.submitBatch(ctx, ps, s.b)
}

// submitBatch is SubmitBatch with b as the batch's borrowing state; it
// gives b's cores back before it returns.
func (h *HPU) submitBatch(ctx context.Context, ps []*Packet, b *borrowed) (int, error) {
	var pending [64]*core
	np := 0
	wakeAll := func() {
		for _, co := range pending[:np] {
			co.signal()
		}
		np = 0
	}
	defer wakeAll()
	var a arrivals
	defer a.flush()
	defer h.giveBack(b)
	for i, p := range ps {
		co, err := h.place(p, &a, b)
		if err == ErrQueueFull {
			wakeAll() // the cores must run for room to appear
			h.giveBack(b)
			co, err = h.placeWait(ctx, p, &a)
		}
		if err != nil {
			return i, err
		}
		if b.holds(co) || h.borrows() && b.take(co) {
			h.runBorrowed(b, co, p)
			continue
		}
		b.timed = false
		sleeping, ok := co.push(p, false)
		if !ok {
			h.unplace(co)
			return i, ErrClosed
		}
		if sleeping {
			if np == len(pending) {
				wakeAll()
			}
			pending[np] = co
			np++
		}
	}
	return len(ps), nil
}

// push appends p to the core's FIFO. It reports whether the core was
// asleep; then it must be signalled, at once when wake is set, or later by
// the caller. It reports !ok, and queues nothing, when the core's
// goroutine has exited.
func (co *core) push(p *Packet, wake bool) (sleeping, ok bool) {
	co.mu.Lock()
	if co.exited {
		co.mu.Unlock()
		return false, false
	}
	co.q = append(co.q, p)
	if sleeping = co.sleeping; sleeping {
		co.sleeping = false
		co.setAwake(true)
	}
	co.mu.Unlock()
	if sleeping && wake {
		co.signal()
	}
	return sleeping, true
}

func (co *core) signal() {
	select {
	case co.wake <- struct{}{}:
	default:
	}
}

// enter counts a request into the cluster if its queue has room.
func (cl *cluster) enter() bool {
	for {
		n := cl.occ.Load()
		if n >= cl.depth {
			return false
		}
		if cl.occ.CompareAndSwap(n, n+1) {
			return true
		}
	}
}
