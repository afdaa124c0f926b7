package swtch

// The egress: what the handlers emit, collected per core and handed to a
// writer per socket a run at a time, and the writers that send it. Where
// the switch shares its process's CPUs (Config.SharedCPUs), whoever runs
// a handler sends what it emits instead, the writer taking only what
// they cannot: a reader sends the emits of the cores it borrowed (its own
// batch, sendOwn), and a core's goroutine its run when the socket is free.

import (
	"errors"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/wire"
)

type outRun struct {
	head, tail *outPacket
	n          int
}

// add appends op to the run and returns the run's length.
func (r *outRun) add(op *outPacket) int {
	if r.head == nil {
		r.head = op
	} else {
		r.tail.next = op
	}
	r.tail = op
	r.n++
	return r.n
}

// coreLane is what one core holds for one reader: its emits for the
// reader's writer not yet handed on, and its ends of the reader's free
// lists (the send buffers it takes, the received packets it gives back, a
// batch at a time). Only the core's goroutine touches it; a core's lanes
// are one allocation, on cache lines of their own.
type coreLane struct {
	run   outRun
	out   freeCache[outPacket] // taken from by EmitFrom
	freed freeCache[inPacket]  // given back to by done, flushed with the run
	held  heldRefs             // what the packets given back held, flushed with the run
	_     [8]byte
}

// heldRefs is what a core's finished packets still hold, for one
// reader: their job's count in flight (jobTally.enter) and their receive
// region, given back once for each run of packets of one job and of one
// region (flush, with the core's batch: CoreEgress.Flush) instead of with
// two locked instructions a packet. Only the core's runner touches it.
type heldRefs struct {
	c       *readerCounts
	n       int64
	region  *inRegion
	regionN int32
}

// drop takes over a finished packet's hold on its job's counts c and on
// region g (nil: none).
func (r *heldRefs) drop(c *readerCounts, g *inRegion) {
	if c != r.c {
		r.flushJob()
		r.c = c
	}
	r.n++
	if g == nil {
		return
	}
	if g != r.region {
		r.flushRegion()
		r.region = g
	}
	r.regionN++
}

// flush gives back everything r holds.
func (r *heldRefs) flush() {
	r.flushJob()
	r.flushRegion()
}

func (r *heldRefs) flushJob() {
	if r.c != nil {
		r.c.inflight.Add(-r.n)
		r.c, r.n = nil, 0
	}
}

func (r *heldRefs) flushRegion() {
	if r.region != nil {
		r.region.releaseN(r.regionN)
		r.region, r.regionN = nil, 0
	}
}

// coreRun is the most emits a core collects for one writer before it
// hands them on: the results of a core's batch go together, and a writer
// still takes a full GSO run at a time.
const coreRun = 16

// EmitFor is the egress the handlers call from core goroutines
// (hpu.PacketEgress): the packet is encoded once and queued for the
// writer, which sends it to every member (a result), to one member (a
// resent result) or up to the parent. The members are those of the job
// the packet p came with, which its handler belongs to; a job of the same
// id and token created since is another job. The unit's cores call
// EmitFrom, which collects; EmitFor hands on at once.
func (s *Switch) EmitFor(p *hpu.Packet, h *wire.Header, payload []byte) {
	ip := p.Ref.(*inPacket)
	op := s.outFree[ip.rd].get()
	s.encode(op, ip, h, payload, false)
	s.outs[ip.rd] <- op
}

// EmitFrom is EmitFor on core `core` (hpu.CoreEgress): the packet joins
// the core's run for its writer, which goes to the writer when the core
// has run its batch (Flush) or the run is full, one channel send for the
// lot.
func (s *Switch) EmitFrom(core int, p *hpu.Packet, h *wire.Header, payload []byte) {
	s.emitFrom(core, p, h, payload, false)
}

// EmitKeptFrom is EmitFrom for a payload the handler keeps as it is until
// every receiver has the packet (hpu.KeptEgress): the packet's buffer
// holds the header alone and the writer gathers the payload from where it
// is (conn.Datagram's Tail), one copy fewer a result.
func (s *Switch) EmitKeptFrom(core int, p *hpu.Packet, h *wire.Header, payload []byte) {
	s.emitFrom(core, p, h, payload, true)
}

func (s *Switch) emitFrom(core int, p *hpu.Packet, h *wire.Header, payload []byte, kept bool) {
	ip := p.Ref.(*inPacket)
	rd := ip.rd
	l := &s.cores[core][rd]
	op := l.out.get()
	s.encode(op, ip, h, payload, kept)
	if ln := &s.sends[rd]; ln.own != nil && s.unit.Borrowed(core) {
		// Reader rd runs the core for its own batch: the emit joins what
		// the reader sends itself, with no hand-off to wake the writer.
		ln.hold(op)
		return
	}
	if l.run.add(op) == coreRun {
		s.handOn(rd, &l.run)
	}
}

// Flush hands core's collected runs to their writers (hpu.CoreEgress),
// and the packets it has run back to their readers' free lists. Where the
// CPUs are shared (Config.SharedCPUs), a core's goroutine sends a run
// itself when no one else is sending on the socket, rather than wake the
// writer for it.
func (s *Switch) Flush(core int) {
	// A borrowed core's run (emitted before it was borrowed) is the
	// writer's, as its submitter may be another reader.
	own := !s.unit.Borrowed(core)
	for rd := range s.cores[core] {
		l := &s.cores[core][rd]
		if l.run.head != nil && !(own && s.sends[rd].sendRun(&l.run)) {
			s.handOn(rd, &l.run)
		}
		l.held.flush()
		l.freed.flush()
	}
}

// handOn gives run r to writer rd and empties it.
func (s *Switch) handOn(rd int, r *outRun) {
	head := r.head
	*r = outRun{}
	s.outs[rd] <- head
}

// encode fills op with an emit of the packet ip. A kept payload is sent
// from where it is, after the header in op's buffer. The emit leaves
// through the writer of the reader that took ip (ip.rd), in a send buffer
// of that reader's list.
func (s *Switch) encode(op *outPacket, ip *inPacket, h *wire.Header, payload []byte, kept bool) {
	j, live := ip.job, ip.live
	if kept {
		op.buf, op.tail = wire.AppendPacket(op.buf[:0], h, nil), payload
	} else {
		op.buf = wire.AppendPacket(op.buf[:0], h, payload)
	}
	op.job, op.to = live, netip.AddrPort{}
	switch {
	case h.Flags&wire.FlagFromSwitch != 0: // a non-root switch's aggregate, up
		op.to = s.parent
	case h.Flags&wire.FlagRetransmit != 0 && int(h.Child) < len(live.addrs):
		op.to = live.addrs[h.Child]
	}
	j.per[ip.rd].tx.Add(1)
}

// Emit is hpu.Egress's method, which the unit never calls on a
// PacketEgress: every emit comes with its packet (EmitFor).
func (s *Switch) Emit(*wire.Header, []byte) {
	panic("swtch: Emit without its packet; the processing unit calls EmitFor")
}

var _ hpu.KeptEgress = (*Switch)(nil)

// writer rd sends the packets queued for it on its socket, in batches.
// One channel receive (a run from a core, or a control packet) wakes it,
// then it takes whatever else is queued, up to a full batch
// (sender.limit), and sends them (sender.flush); what a run had past the
// full batch starts the next one.
func (s *Switch) writer(rd int) {
	out := s.outs[rd]
	snd := s.newSender(rd)
	for {
		if len(snd.held) == 0 { // else what the last batch left (sender.take)
			head, ok := <-out
			if !ok {
				return
			}
			snd.take(head)
		}
		// Take what is queued; when that is little, let the cores run a
		// moment first (they are mid-burst more often than not) so the
		// batch, and its per-destination runs, grow.
		for yields := 0; len(snd.held) < snd.limit(); {
			select {
			case head, ok := <-out:
				if !ok {
					s.sends[rd].flushAll(snd)
					return
				}
				snd.take(head)
				continue
			default:
			}
			if yields == writerYields {
				break
			}
			yields++
			s.unit.Yield()
		}
		s.sends[rd].flush(snd)
	}
}

// sendLane is what reader rd's socket sends through: its writer and, in a
// process whose CPUs other goroutines share, the reader itself (sendOwn)
// and the cores' goroutines (sendRun). A conn has one sender at a time
// (mu).
type sendLane struct {
	mu  sync.Mutex
	own *sender // the reader's (Config.SharedCPUs); nil: the writer alone sends
	run *sender // a core goroutine's run, under mu (Config.SharedCPUs)
	_   [40]byte
}

// flush sends w's batch under the lane's lock.
func (l *sendLane) flush(w *sender) {
	l.mu.Lock()
	w.flush()
	l.mu.Unlock()
}

// flushAll sends all w holds, under the lane's lock.
func (l *sendLane) flushAll(w *sender) {
	l.mu.Lock()
	w.flushAll()
	l.mu.Unlock()
}

// hold adds op to the reader's own batch, from the reader's goroutine
// (a core it borrowed emitted op), and sends the batch once it is full;
// sendOwn sends the rest after the reader's batch.
func (l *sendLane) hold(op *outPacket) {
	if l.own.held = append(l.own.held, op); len(l.own.held) >= l.own.limit() {
		l.flush(l.own)
	}
}

// sendRun sends run r from its core's own goroutine, where the lane sends
// that way (Config.SharedCPUs) and no one is sending on it, and empties r.
// It reports false, sending nothing, otherwise: the run is the writer's
// then.
func (l *sendLane) sendRun(r *outRun) bool {
	if l.run == nil || !l.mu.TryLock() {
		return false
	}
	l.run.take(r.head)
	*r = outRun{}
	l.run.flushAll()
	l.mu.Unlock()
	return true
}

// sendOwn sends, from reader rd, what its batch produced (the emits of
// the cores it ran, held by hold) and the results its writer has queued,
// when the switch shares its process's CPUs (Config.SharedCPUs). There
// every goroutine the hosts run wants the CPUs too, and each hand-off to
// the writer is a wake-up that waits for a P: the reader, running
// already, sends before it reads again. The writer stays, for what the
// cores' goroutines could not send while the socket was busy.
func (s *Switch) sendOwn(rd int) {
	l := &s.sends[rd]
	if l.own == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		select {
		case head := <-s.outs[rd]: // open: the queues close once the readers have returned
			l.own.take(head)
			if len(l.own.held) >= l.own.limit() {
				l.own.flush()
			}
		default:
			l.own.flushAll()
			return
		}
	}
}

// sender is a batch of emits being sent on socket rd, and its scratch;
// one goroutine uses it.
type sender struct {
	s     *Switch
	rd    int
	held  []*outPacket
	rest  *outPacket // what take left past a full batch, the next batch's first
	full  int        // a full batch once known (limit)
	msgs  []conn.Datagram
	stage []byte    // the batch's results for every member, back to back (stageFanOut)
	spans []fanSpan // the stage's runs (stageFanOut)
}

func (s *Switch) newSender(rd int) *sender {
	return &sender{s: s, rd: rd, held: make([]*outPacket, 0, writerHold), msgs: make([]conn.Datagram, 0, writerHold*8)}
}

// batchHold is how many emits a sender's batch takes on socket rd:
// writerHold, rounded down to whole GSO sends of the switch's largest
// datagram (conn.WholeRuns). A batch of 64 results of 1 KiB went to each
// member as a send of 62 datagrams (65,507 bytes) and one of 2; 62 go as
// one.
func (s *Switch) batchHold(rd int) int {
	return conn.WholeRuns(s.conns[rd], writerHold, s.cfg.PacketBytes+wire.HeaderLen)
}

// limit is a full batch of w: batchHold of its socket, which is open by
// the time anything is sent.
func (w *sender) limit() int {
	if w.full == 0 {
		w.full = w.s.batchHold(w.rd)
	}
	return w.full
}

// take adds the chain from head to the batch, up to a full batch (limit);
// what does not fit waits in w.rest, which flush starts the next batch
// with.
func (w *sender) take(head *outPacket) {
	op := head
	for op != nil && len(w.held) < w.limit() {
		next := op.next
		op.next = nil
		w.held = append(w.held, op)
		op = next
	}
	if op == nil {
		return
	}
	if w.rest == nil {
		w.rest = op
		return
	}
	last := w.rest
	for last.next != nil {
		last = last.next
	}
	last.next = op
}

// flushAll sends the batch and what take left past it, a full batch at a
// time.
func (w *sender) flushAll() {
	for len(w.held) > 0 {
		w.flush()
	}
}

// flush sends the batch, fanning the multicasts out destination-major:
// every held result for member 0, then every one for member 1, and so on.
// Runs of datagrams to one address are what GSO turns into one send, so a
// batch of 64 results to 8 hosts crosses the kernel as 8 segmented sends
// instead of 512 plain ones. The packets go back to their free list.
func (w *sender) flush() {
	s, msgs := w.s, w.msgs
	fan, fanned := 0, 0 // the most members of a result for every member, and those results' bytes
	for _, op := range w.held {
		switch {
		case op.fansOut():
			fan = max(fan, len(op.job.addrs))
			fanned += op.size()
		case op.job != nil && !op.to.IsValid(): // once, to every member (multicast.go)
			msgs = append(msgs, op.datagram(op.job.group))
		default:
			msgs = append(msgs, op.datagram(op.to))
		}
	}
	if fan > 1 && s.conns[w.rd].Offload().GSO {
		msgs = w.fanOutRuns(msgs, fan, fanned)
	} else {
		msgs = w.fanOut(msgs, fan)
	}
	if s.cap != nil {
		s.cap.record(msgs, false)
	}
	s.links.countTx(w.rd, msgs)
	s.sendAll(s.conns[w.rd], msgs)
	s.perReader[w.rd].tx.Add(int64(conn.Count(msgs)))
	clear(msgs) // keep no references to pooled buffers
	w.msgs = msgs[:0]
	for _, op := range w.held {
		op.job, op.tail = nil, nil
	}
	s.outFree[w.rd].putAll(w.held)
	clear(w.held)
	w.held = w.held[:0]
	if rest := w.rest; rest != nil {
		w.rest = nil
		w.take(rest)
	}
}

// fanOut appends the held results that fan out to msgs, a datagram for
// each member (of at most fan) and result, from where each lies.
func (w *sender) fanOut(msgs []conn.Datagram, fan int) []conn.Datagram {
	for m := 0; m < fan; m++ {
		for _, op := range w.held {
			if !op.fansOut() || m >= len(op.job.addrs) {
				continue
			}
			if to := op.job.addrs[m]; to.IsValid() {
				msgs = append(msgs, op.datagram(to))
			}
		}
	}
	return msgs
}

// fanOutRuns is fanOut for a conn with GSO: it copies the held results
// that fan out (fanned bytes), header and payload, back to back into the
// sender's stage, once for all members (stageFanOut), and appends for
// each member one entry for each span of them (conn.Datagram.Seg) rather
// than one a result. The kernel copies a span as one piece for each of
// the P sends, where the same run in pieces costs it ~50 ns more a
// datagram (docs/PERFORMANCE.md), and the writer's work a member is a
// span's, not a result's. Without GSO the copy would buy nothing.
func (w *sender) fanOutRuns(msgs []conn.Datagram, fan, fanned int) []conn.Datagram {
	w.stageFanOut(fanned)
	for m := 0; m < fan; m++ {
		for i := range w.spans {
			sp := &w.spans[i]
			if m >= len(sp.job.addrs) {
				continue
			}
			if to := sp.job.addrs[m]; to.IsValid() {
				msgs = append(msgs, conn.Datagram{Buf: w.stage[sp.at : sp.at+sp.n], N: sp.n, Seg: sp.seg, Addr: to})
			}
		}
	}
	clear(w.spans) // keep no references to jobs
	w.spans = w.spans[:0]
	return msgs
}

// stageFanOut copies the held results that fan out into the stage, n
// bytes in all, and makes their spans: results of one job one after the
// other, of one size but for a shorter last, as a GSO send takes them.
// The stage grows to the largest batch and is kept.
func (w *sender) stageFanOut(n int) {
	w.stage = slices.Grow(w.stage[:0], n)
	for _, op := range w.held {
		if !op.fansOut() {
			continue
		}
		at, size := len(w.stage), op.size()
		w.stage = append(append(w.stage, op.buf...), op.tail...)
		if k := len(w.spans) - 1; k >= 0 {
			if sp := &w.spans[k]; sp.job == op.job && size <= sp.seg && sp.n%sp.seg == 0 { // the stage is back to back: op follows sp
				sp.n += size
				continue
			}
		}
		w.spans = append(w.spans, fanSpan{job: op.job, at: at, n: size, seg: size})
	}
}

// fanSpan is a span of a sender's stage, [at, at+n), holding results of
// one job back to back, each of seg bytes but for a shorter last: a run
// for each of the job's members.
type fanSpan struct {
	job        *liveJob
	at, n, seg int
}

// size is op's datagram's length.
func (op *outPacket) size() int { return len(op.buf) + len(op.tail) }

// datagram is op sent to addr, as it lies: its header and payload in
// buf, or the header there and the payload kept in tail.
func (op *outPacket) datagram(addr netip.AddrPort) conn.Datagram {
	return conn.Datagram{Buf: op.buf, N: len(op.buf), Tail: op.tail, Addr: addr}
}

// fansOut says whether op goes to each member of its job in turn: a
// result of a job without a multicast group. Every other packet goes to
// one address, its own or its job's group.
func (op *outPacket) fansOut() bool {
	return !op.to.IsValid() && op.job != nil && !op.job.group.IsValid()
}

// sendAll sends msgs through c. WriteBatch stops at a datagram it
// cannot send, after sending those before it: that datagram is tried once
// more when the error is transient (transient), and otherwise, or when it
// fails again, dropped and counted once; the rest of the batch goes on.
// On a closed socket (shutdown) the rest is dropped.
func (s *Switch) sendAll(c conn.Conn, msgs []conn.Datagram) {
	retried := false
	for sent := 0; sent < len(msgs); {
		k, err := c.WriteBatch(msgs[sent:])
		if err == nil {
			return
		}
		sent += k
		if k > 0 {
			retried = false // msgs[sent] is a datagram not tried before
		}
		s.ioErrors.add(dirTx, err)
		switch {
		case errors.Is(err, net.ErrClosed):
			s.drops.addN(dropSendError, int64(conn.Count(msgs[sent:])))
			return
		case transient(err) && !retried:
			retried = true
			continue
		}
		s.logIOError("send", err, 1)
		s.drops.addN(dropSendError, int64(msgs[sent].Count()))
		sent++ // skip the datagram (or run) that failed
		retried = false
	}
}

// logIOError logs a socket error, at most once a second.
func (s *Switch) logIOError(op string, err error, consecutive int) {
	if s.ioLogLimit.allow(time.Now()) {
		s.log.Warn("socket error, going on", "op", op, "error", err, "consecutive", consecutive)
	}
}

// writerQueue is each writer's channel, in runs: each entry is the head of
// a chain of up to coreRun packets (one for a control packet).
const writerQueue = 4096

// writerHold is the most packets a sender's batch takes: enough for a full
// GSO run (64 segments) per destination where the datagrams are small;
// with larger ones a batch is whole runs (Switch.batchHold).
const writerHold = 64

// writerYields is how many times the writer yields to collect a batch
// before sending what it has.
const writerYields = 4
