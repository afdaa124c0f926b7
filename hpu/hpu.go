package hpu

import (
	"context"
	"errors"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// Errors returned by Submit.
var (
	ErrQueueFull = errors.New("hpu: input queues full")
	ErrClosed    = errors.New("hpu: processing unit stopped")
)

// HPU is the processing unit: clusters of cores with their queues and L1.
type HPU struct {
	cfg      Config
	mem      *Memory
	egress   Egress
	done     func(*Packet)
	clusters []*cluster
	started  atomic.Bool
	stopped  atomic.Bool
	wg       sync.WaitGroup
}

type cluster struct {
	id    int
	slots chan struct{} // one token per handler request held (queued or running)
	cores []*core

	occSum     atomic.Int64 // queue occupancy summed over arrival samples
	occSamples atomic.Int64
	occMax     atomic.Int64
	overflowIn atomic.Int64 // packets received because their home cluster was full
}

type core struct {
	id      int
	cluster *cluster
	in      chan *Packet
	idle    atomic.Bool
	task    Task
	stats   coreCounters
}

type coreCounters struct {
	packets, rejected, busyNs, cycles, waitNs, waitCycles, contended atomic.Int64
	hist                                                             [HistBuckets]atomic.Int64
}

// HistBuckets is the number of buckets of the handler service-time
// histogram: bucket i counts handlers that took less than HistBound(i)
// (128 ns doubling up to 256 µs), the last one the rest.
const HistBuckets = 13

// HistBound is the upper bound of histogram bucket i in nanoseconds
// (bucket HistBuckets-1 has none).
func HistBound(i int) int64 { return 128 << i }

func histBucket(ns int64) int {
	return min(bits.Len64(uint64(ns)>>7), HistBuckets-1)
}

// New builds a processing unit. egress receives what handlers emit; done, if
// not nil, is called on a core after a packet's handler returns, to give the
// packet's memory back to its owner.
func New(cfg Config, egress Egress, done func(*Packet)) (*HPU, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if egress == nil {
		return nil, errors.New("hpu: egress is nil")
	}
	h := &HPU{cfg: cfg, mem: newMemory(cfg), egress: egress, done: done}
	for c := 0; c < cfg.Clusters; c++ {
		cl := &cluster{id: c, slots: make(chan struct{}, cfg.QueueDepth)}
		for k := 0; k < cfg.CoresPerCluster; k++ {
			co := &core{id: k, cluster: cl, in: make(chan *Packet, cfg.QueueDepth)}
			co.task = Task{cost: &h.cfg.Cost, egress: egress}
			co.idle.Store(true)
			cl.cores = append(cl.cores, co)
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

func (h *HPU) loop(ctx context.Context, co *core) {
	defer h.wg.Done()
	for {
		select {
		case p := <-co.in:
			h.execute(co, p)
		case <-ctx.Done():
			for {
				select {
				case p := <-co.in:
					h.execute(co, p)
				default:
					return
				}
			}
		}
	}
}

func (h *HPU) execute(co *core, p *Packet) {
	t := &co.task
	t.reset(p, co.cluster.id, co.id)
	start := time.Now()
	ok := t.run()
	busy := time.Since(start)
	s := &co.stats
	if ok {
		s.packets.Add(1)
	} else {
		s.rejected.Add(1)
	}
	s.busyNs.Add(int64(busy))
	s.hist[histBucket(int64(busy))].Add(1)
	s.cycles.Add(t.cycles)
	if t.contends > 0 {
		s.contended.Add(t.contends)
		s.waitNs.Add(t.waitNs)
		s.waitCycles.Add(t.waitCyc)
	}
	t.Pkt = nil
	if h.done != nil {
		h.done(p)
	}
	<-co.cluster.slots
	if len(co.in) == 0 {
		co.idle.Store(true)
	}
}

// Submit schedules p without blocking: to its home cluster (block mod
// clusters), or to the least-loaded cluster when the home queue is full
// (only when S > 1: with S = 1 a block belongs to one core, and sending it
// elsewhere would break that). It returns ErrQueueFull when no queue has
// room; the caller drops or retries.
func (h *HPU) Submit(p *Packet) error {
	if h.stopped.Load() {
		return ErrClosed
	}
	home := h.clusters[int(p.Hdr.Block%uint32(len(h.clusters)))]
	cl := home
	if !cl.enter() {
		if h.cfg.SubsetS == 1 {
			return ErrQueueFull
		}
		cl = h.leastLoaded()
		if cl == home || !cl.enter() {
			return ErrQueueFull
		}
		cl.overflowIn.Add(1)
	}
	h.dispatch(cl, p)
	return nil
}

// SubmitWait is Submit with back-pressure: when every eligible queue is
// full it waits for room in the home cluster, or for ctx.
func (h *HPU) SubmitWait(ctx context.Context, p *Packet) error {
	err := h.Submit(p)
	if err != ErrQueueFull {
		return err
	}
	home := h.clusters[int(p.Hdr.Block%uint32(len(h.clusters)))]
	select {
	case home.slots <- struct{}{}:
		h.dispatch(home, p)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (cl *cluster) enter() bool {
	select {
	case cl.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

func (h *HPU) leastLoaded() *cluster {
	best := h.clusters[0]
	for _, cl := range h.clusters[1:] {
		if len(cl.slots) < len(best.slots) {
			best = cl
		}
	}
	return best
}

// dispatch samples the queue occupancy the packet sees (itself included)
// and hands it to a core of the block's subset: the lowest-numbered idle
// one, or else the one with the shortest queue.
func (h *HPU) dispatch(cl *cluster, p *Packet) {
	occ := int64(len(cl.slots))
	cl.occSum.Add(occ)
	cl.occSamples.Add(1)
	for m := cl.occMax.Load(); occ > m && !cl.occMax.CompareAndSwap(m, occ); m = cl.occMax.Load() {
	}
	c := len(cl.cores)
	s := h.cfg.SubsetS
	base := 0
	if s < c {
		base = int(uint64(p.Hdr.Block/uint32(len(h.clusters))) * uint64(s) % uint64(c))
	}
	var best *core
	for j := 0; j < s; j++ {
		co := cl.cores[(base+j)%c]
		if co.idle.CompareAndSwap(true, false) {
			best = co
			break
		}
		if best == nil || len(co.in) < len(best.in) {
			best = co
		}
	}
	best.in <- p
}
