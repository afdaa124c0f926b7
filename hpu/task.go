package hpu

import (
	"sync"
	"time"

	"github.com/flare-net/flare/wire"
)

// Packet is one Flare packet handed to the processing unit. Its memory is
// owned by whoever submitted it until the unit hands it back through the
// done function given to New (or NewVirtual).
type Packet struct {
	Hdr     wire.Header // decoded header
	Payload []byte      // the payload, a view into the submitter's buffer
	Handler Handler     // the job's handler, chosen by the daemon's match rule
	Arrival int64       // arrival time: ns (real time) or cycles (virtual time)
	Ref     any         // the submitter's token for the buffer, given back with the packet to done
}

// Handler processes the packets of one job. Payload runs for every packet
// that Header accepted. A handler is plain code: it reads the packet, works
// on buffers from its quota, and Emits packets; it never touches a socket.
type Handler interface {
	Payload(t *Task)
}

// HeaderHandler is an optional first stage: it runs before Payload on every
// packet and may reject it (returning false), for example a duplicate.
type HeaderHandler interface {
	Header(t *Task) bool
}

// CompletionHandler is an optional last stage: it runs after Payload on the
// same core when Payload called Task.Complete, for example to send a
// finished block's result and free its buffers.
type CompletionHandler interface {
	Completion(t *Task)
}

// Egress receives what handlers emit. Emit must copy what it keeps: the
// header and payload are only valid during the call. It is called from core
// goroutines concurrently.
type Egress interface {
	Emit(h *wire.Header, payload []byte)
}

// PacketEgress is an Egress that is told which packet's handler emits:
// Task.Emit calls EmitFor instead of Emit. A daemon whose jobs share one
// egress finds the job by the packet (its Ref), never by the ids in the
// header, which a job created after this one ended may reuse.
type PacketEgress interface {
	Egress
	EmitFor(p *Packet, h *wire.Header, payload []byte)
}

// CoreEgress is a PacketEgress that collects each core's emits and hands
// them on once the core has run the packets it took together, so that a
// burst's results cross to the sender in one step instead of one per
// packet. The real-time unit calls EmitFrom, with the core's index
// (cluster × CoresPerCluster + core), instead of EmitFor, and Flush(core)
// on that core's goroutine after every batch it ran (before it sleeps or
// exits), so nothing stays collected. A VirtualUnit calls Emit.
type CoreEgress interface {
	PacketEgress
	EmitFrom(core int, p *Packet, h *wire.Header, payload []byte)
	Flush(core int)
}

// KeptEgress is a CoreEgress that can send a payload in place instead of
// copying it, for Task.EmitKept: the handler promises the bytes stay as
// they are until every receiver has the packet.
type KeptEgress interface {
	CoreEgress
	EmitKeptFrom(core int, p *Packet, h *wire.Header, payload []byte)
}

// Lock guards an aggregation buffer (or a block's state). Handlers take it
// through Task.Lock so that waiting is measured and charged.
//
// In real time it is a mutex. Under a VirtualUnit, which interleaves
// handlers in cycle order on one goroutine, freeAt is lockHeld while a
// handler holds the lock and otherwise the cycle of the last release.
type Lock struct {
	mu     sync.Mutex
	freeAt int64
}

// Task is what a handler sees of one packet's execution: the packet, where it
// runs, its memory, and the services of the unit.
type Task struct {
	Pkt     *Packet
	Cluster int // cluster running the handler
	Core    int // core index within the cluster

	cost     *CostModel
	egress   Egress
	pegress  PacketEgress // egress, when it is one
	cegress  CoreEgress   // egress, when it is one (real time only)
	kegress  KeptEgress   // egress, when it is one (real time only)
	index    int          // the core's index for cegress: cluster × CoresPerCluster + core
	now      int64        // virtual: the current cycle of this handler
	started  int64        // when the handler started: ns on the daemon's clock (real time) or the cycle (virtual)
	cycles   int64        // cycles charged to this packet
	waitNs   int64        // real time spent waiting for locks
	waitCyc  int64        // cycles charged for waiting (back-off)
	complete bool
	contends int64       // lock acquisitions that had to wait
	out      wire.Header // Emit's copy of the header, so a handler's local never escapes
	sim      *vcore      // the VirtualUnit core running this task, or nil (see vsim.go)
}

// Cost is the cycle cost model the unit runs with.
func (t *Task) Cost() *CostModel { return t.cost }

// Charge adds cycles of work to this packet's service time. Under a
// VirtualUnit the handler may pause here until the cores that are earlier in
// virtual time have caught up (see VirtualUnit).
func (t *Task) Charge(cycles int64) {
	t.cycles += cycles
	t.now += cycles
	if t.sim != nil && cycles != 0 {
		t.sim.sync()
	}
}

// ChargeAggregate charges folding n elements of dtype d.
func (t *Task) ChargeAggregate(d wire.DType, n int) { t.Charge(t.cost.Aggregate(d, n)) }

// ChargeCopy charges a DMA copy of n bytes.
func (t *Task) ChargeCopy(n int) { t.Charge(t.cost.Copy(n)) }

// Emit hands a packet to the egress (to children or to the parent switch;
// the handler decides the type, the daemon the addresses).
func (t *Task) Emit(h *wire.Header, payload []byte) {
	t.out = *h
	if t.cegress != nil {
		t.cegress.EmitFrom(t.index, t.Pkt, &t.out, payload)
		return
	}
	if t.pegress != nil {
		t.pegress.EmitFor(t.Pkt, &t.out, payload)
		return
	}
	t.egress.Emit(&t.out, payload)
}

// EmitKept is Emit for a payload the handler keeps unchanged in kept
// until every receiver has the packet (a dense job's stored result, which
// only the generation after next overwrites, and only once every member
// has moved past this one): an egress that can (KeptEgress) sends it from
// there, without a copy. An egress that copies the payload as it takes it
// gets own instead, the same bytes in the handler's own memory, which no
// other core writes meanwhile. The cost charged is the handler's, as with
// Emit, so the virtual-time unit, which calls Emit, is unchanged.
func (t *Task) EmitKept(h *wire.Header, kept, own []byte) {
	if t.kegress == nil {
		t.Emit(h, own)
		return
	}
	t.out = *h
	t.kegress.EmitKeptFrom(t.index, t.Pkt, &t.out, kept)
}

// Complete asks the unit to run the handler's Completion stage after Payload.
func (t *Task) Complete() { t.complete = true }

// Lock acquires l, measuring how long the core waited. A handler never
// sleeps in PsPIN: it spins with a back-off, so waiting costs cycles. In real
// time one back-off period is charged per contended acquisition (the wait
// itself is reported in ns); in virtual time the whole wait is charged.
func (t *Task) Lock(l *Lock) {
	if t.sim != nil {
		t.sim.lock(l)
		return
	}
	if l.mu.TryLock() {
		return
	}
	start := time.Now()
	l.mu.Lock()
	t.waitNs += int64(time.Since(start))
	t.waitCyc += t.cost.LockBackoff
	t.contends++
	t.Charge(t.cost.LockBackoff)
}

// TryLock acquires l if it is free, without waiting.
func (t *Task) TryLock(l *Lock) bool {
	if t.sim != nil {
		return t.sim.tryLock(l)
	}
	return l.mu.TryLock()
}

// Unlock releases l.
func (t *Task) Unlock(l *Lock) {
	if t.sim != nil {
		t.sim.unlock(l)
		return
	}
	l.mu.Unlock()
}

// reset makes t the task of packet p, keeping the runner's fields (cost,
// the egresses and the core's index, now, sim). It sets the per-packet
// fields one by one rather than assigning a whole Task, which copied the
// struct (out included) per packet: a field added to Task that a packet
// changes must be reset here.
func (t *Task) reset(p *Packet, cluster, core int) {
	t.Pkt, t.Cluster, t.Core = p, cluster, core
	t.started = t.now
	t.cycles, t.waitNs, t.waitCyc, t.contends = 0, 0, 0, 0
	t.complete = false
}

// run executes the handler's stages for the task's packet. It reports
// whether the header stage accepted the packet.
func (t *Task) run() bool {
	h := t.Pkt.Handler
	t.Charge(t.cost.Dispatch)
	if hh, ok := h.(HeaderHandler); ok && !hh.Header(t) {
		return false
	}
	h.Payload(t)
	if t.complete {
		if ch, ok := h.(CompletionHandler); ok {
			ch.Completion(t)
		}
	}
	return true
}

// Cycles is the number of cycles charged to this packet so far.
func (t *Task) Cycles() int64 { return t.cycles }

// Now is the virtual cycle the handler is at (0 in real time).
func (t *Task) Now() int64 { return t.now }

// Started is when the handler started: in real time, Unix ns (the clock
// the daemon stamps Packet.Arrival with), in virtual time the cycle. The
// time from a block's first handler to the one that completes it is how
// long the block held its buffers.
func (t *Task) Started() int64 { return t.started }

// LockWaitCycles is the cycles this task spent waiting for locks.
func (t *Task) LockWaitCycles() int64 { return t.waitCyc }

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(t *Task)

// Payload calls f(t).
func (f HandlerFunc) Payload(t *Task) { f(t) }

// restart reuses a VirtualUnit core's task for another packet starting at
// cycle start, so the unit allocates nothing per packet.
func (t *Task) restart(p *Packet, cluster, core int, start int64) {
	t.now = start
	t.reset(p, cluster, core)
}
