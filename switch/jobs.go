package swtch

import (
	"container/list"
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/handlers"
	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/proto"
	"github.com/flare-net/flare/wire"
)

// job is one allreduce job: its members, its handler and its memory. It
// is pending while ranks are missing (pend, pending.go), then built off
// the reader (building, admit.go), then admitted; fields are under the
// table lock unless they are atomics.
type job struct {
	id    uint32
	token uint64
	spec  wire.JoinBody // what every member must agree on (jobSpec of a join)
	dtype wire.DType
	op    wire.Op

	// While pending: the ranks joined so far, one entry each, so that a
	// job of a large world with one rank joined holds one entry; nil once
	// every rank has joined (the members below are set then).
	pend    map[int]pendingMember
	pendEl  *list.Element // in the switch's pending list, while pending
	source  netip.Addr    // the address of the join that created the job
	created int64         // unix ns of that join

	members []netip.AddrPort // by rank, from when every rank joined; zero once left
	// sessions are the members' session ids (a join's Block field): a
	// join of another session of a rank is a new process of it, whose
	// calls start again at generation 1 (restart).
	sessions []uint32
	subtree  []int // hosts under each member: 1 for a host, a child switch's join World
	streams  []int // sparse: the longest stream of a block each child switch sends (its join's StreamPackets)
	joined   int
	left     int
	hosts    int // hosts under this switch in the job
	// multicast: every member joined with wire.OptMulticast; group is the
	// one the job holds of the pool (Config.Multicast), once admitted.
	multicast bool
	group     netip.AddrPort

	// A child switch in a tree (Config.Parent): upAsked once it has joined
	// the job at its parent, upAcked once the parent acked. A sparse job's
	// join there asks for its block size and says its longest stream, and
	// names the job's session here (upSession), as a host's names its own.
	upAsked, upAcked       bool
	upBlockElems, upStream int
	upSession              uint32

	// building: every rank joined and the handler is being built (build).
	// Set at admission: the rest.
	building bool
	admitted bool
	ackSent  bool
	ack      wire.JoinAckBody
	handler  jobHandler
	quota    *hpu.Quota
	// charge is what the job holds of the memory budget: its pending
	// state, then its footprint. streamBytes is what a sparse job's stored
	// streams reserved as they grew (released with the charge).
	charge      int64
	streamBytes atomic.Int64
	// live is what the packet path reads without a lock: nil until admitted.
	live atomic.Pointer[liveJob]

	closing atomic.Bool // set when the job ends, before its teardown waits for its packets in flight
	// per is each reader's counts of the job's packets (by inPacket.rd),
	// which the packet path writes; the rest of the job it only reads.
	per []readerCounts
}

// readerCounts is one reader's share of a job's per-packet counts, on a
// cache line of its own: with a group of readers on several CPUs, each
// writes its own line a packet instead of all writing one line that every
// reader's CPU took in turn (docs/PERFORMANCE.md).
type readerCounts struct {
	inflight   atomic.Int64 // packets submitted to the HPU and not yet done (see enter)
	lastActive atomic.Int64 // unix ns of the last packet
	rx, tx     atomic.Int64
	_          [32]byte
}

// jobTally is what a reader counts of its batch's packets for their job,
// added to the job's readerCounts once for each run of packets of one job
// (flush, at the latest when the reader submits the batch) instead of
// with atomic writes a packet: each locked instruction waits for the
// CPU's stores to drain (two of them were 5% of BenchmarkGenPath in six
// pairs). The reader alone uses its tally. A run's packets count in
// flight from its first (enter); the cores give the counts back a run at
// a time too (heldRefs).
type jobTally struct {
	c       *readerCounts // the job's counts of this reader
	n, last int64         // packets, and the arrival of the last (unix ns)
}

// enter counts a packet of j from reader rd at now in flight, unless j
// has ended. A run's first packet enters the job (job.enter) for the
// whole run: that count is the run's hold, which its packets take over
// at flush, and it keeps the job's teardown waiting until then. The
// run's later packets check closing too, so that none enters after the
// run has seen it.
func (t *jobTally) enter(j *job, rd int, now int64) bool {
	c := &j.per[rd]
	if c != t.c {
		t.flush()
		if !j.enter(rd) {
			return false
		}
		t.c = c
	} else if j.closing.Load() {
		return false
	}
	t.n++
	t.last = now
	return true
}

// flush adds what t counted to its job: the run's packets in flight (its
// hold becomes one of them), received and the last arrival.
func (t *jobTally) flush() {
	if t.c == nil {
		return
	}
	if t.n > 1 { // a run counts from its first packet (enter): n >= 1
		t.c.inflight.Add(t.n - 1)
	}
	t.c.rx.Add(t.n)
	t.c.lastActive.Store(t.last)
	t.c, t.n = nil, 0
}

// readerCountsBytes is what a job's counts hold per reader.
const readerCountsBytes = int64(unsafe.Sizeof(readerCounts{}))

// inflight is how many of j's packets are submitted and not yet done.
func (j *job) inflight() int64 {
	n := int64(0)
	for i := range j.per {
		n += j.per[i].inflight.Load()
	}
	return n
}

// packets is how many data packets j took in and sent out.
func (j *job) packets() (rx, tx int64) {
	for i := range j.per {
		rx += j.per[i].rx.Load()
		tx += j.per[i].tx.Load()
	}
	return rx, tx
}

// lastActive is when j last took a packet, in unix ns.
func (j *job) lastActive() int64 {
	t := int64(0)
	for i := range j.per {
		t = max(t, j.per[i].lastActive.Load())
	}
	return t
}

// touch records activity of j at now (unix ns), as reader 0's.
func (j *job) touch(now int64) { j.per[0].lastActive.Store(now) }

// world is the number of members the job takes.
func (j *job) world() int { return int(j.spec.World) }

// liveJob is the immutable part of an admitted job that readers, cores and
// the writer use concurrently.
type liveJob struct {
	handler jobHandler
	sparse  bool             // takes Sparse packets, not Data
	expire  hpu.Handler      // bounded-time jobs: the handler's deadline tick
	down    hpu.Handler      // sparse jobs at a non-root switch: the parent's stream
	addrs   []netip.AddrPort // member addresses by rank, as admitted
	group   netip.AddrPort   // where results go instead of to each member, when valid (multicast.go)
}

// enter counts a packet of j from reader rd in flight, unless j has
// ended. The count comes before the check, and endLocked sets closing
// before its teardown waits for the readers' counts to sum to 0, so
// either the teardown reads this packet's count or this sees closing: a
// packet looked up in the table just before its job ended never runs on
// the closed handler. (A reader's count the teardown has read as 0 stays
// 0 but for packets that then see closing and take theirs back.)
func (j *job) enter(rd int) bool {
	c := &j.per[rd]
	c.inflight.Add(1)
	if j.closing.Load() {
		c.inflight.Add(-1)
		return false
	}
	return true
}

// jobHandler is what the daemon holds of a job's handler, dense or sparse:
// the HPU runs it, the daemon reads its completed-block count and closes it.
type jobHandler interface {
	hpu.Handler
	Close()
	completed() int64
	latencyNs() int64 // summed over completed blocks
	// install sets what the packet path needs of this kind of job in
	// live, as job j is admitted. The caller holds the table lock.
	install(s *Switch, j *job, live *liveJob)
}

// handlerPlan is the kind-specific half of an admission plan: the
// handler's configuration, which builds the handler.
type handlerPlan interface {
	build() (jobHandler, error)
}

type denseJob struct{ *handlers.Dense }

func (d denseJob) completed() int64 { return d.Stats.Completed.Load() }
func (d denseJob) latencyNs() int64 { return d.Stats.LatencyNs.Load() }

// install: a bounded-time job's blocks are released by the expirer.
func (d denseJob) install(s *Switch, _ *job, live *liveJob) {
	if d.Config().Deadline <= 0 {
		return
	}
	live.expire = hpu.HandlerFunc(d.Expire)
	s.boundedJobs.Add(1)
	select {
	case s.boundedWake <- struct{}{}:
	default:
	}
}

// handlerOf is h, or none when its constructor failed (err): the switch
// frees a handler it holds, and a failed one holds nothing.
func handlerOf[H jobHandler](h H, err error) (jobHandler, error) {
	if err != nil {
		return nil, err
	}
	return h, nil
}

type densePlan struct{ cfg *handlers.DenseConfig }

func (p densePlan) build() (jobHandler, error) {
	d, err := handlers.NewDense(*p.cfg)
	return handlerOf(denseJob{d}, err)
}

type sparseJob struct{ *handlers.Sparse }

func (s sparseJob) completed() int64 { return s.Stats.Completed.Load() }
func (s sparseJob) latencyNs() int64 { return s.Stats.LatencyNs.Load() }

// install: the parent's stream comes down through the handler's Down,
// and a join at the parent carries the handler's block size and stream
// bound (tree.go).
func (s sparseJob) install(_ *Switch, j *job, live *liveJob) {
	live.sparse, live.down = true, s.Down()
	cfg := s.Config()
	j.upBlockElems, j.upStream = cfg.BlockElems, cfg.StreamBound()
}

type sparsePlan struct{ cfg *handlers.SparseConfig }

func (p sparsePlan) build() (jobHandler, error) {
	sp, err := handlers.NewSparse(*p.cfg)
	return handlerOf(sparseJob{sp}, err)
}

// jobTable maps job ids to jobs. The packet path reads a copy-on-write
// snapshot with one atomic load; joins, leaves and the reaper take mu.
type jobTable struct {
	mu   sync.Mutex
	snap atomic.Pointer[map[uint32]*job]
}

func newJobTable() *jobTable {
	t := &jobTable{}
	m := map[uint32]*job{}
	t.snap.Store(&m)
	return t
}

func (t *jobTable) get(id uint32) *job { return (*t.snap.Load())[id] }

// jobLookup is a reader's last look-up in the job table: a batch's
// packets are mostly of one job, and the snapshot changes only when a job
// comes or goes, so a packet of the job before it in the same snapshot
// takes it from here instead of hashing the id into the map (2% of
// BenchmarkGenPath's time). Holding the snapshot keeps its map from being
// freed, so no later snapshot can have its address; it also keeps the
// job it found, gone from the table or not, until the reader's next
// packet: one job a reader at most. The reader alone uses its lookup.
type jobLookup struct {
	snap *map[uint32]*job
	id   uint32
	j    *job
}

// get is t.get(id) through l.
func (l *jobLookup) get(t *jobTable, id uint32) *job {
	snap := t.snap.Load()
	if snap != l.snap || id != l.id {
		l.snap, l.id, l.j = snap, id, (*snap)[id]
	}
	return l.j
}

func (t *jobTable) all() map[uint32]*job { return *t.snap.Load() }

// update replaces the snapshot; the caller holds mu.
func (t *jobTable) update(f func(m map[uint32]*job)) {
	old := *t.snap.Load()
	m := make(map[uint32]*job, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	f(m)
	t.snap.Store(&m)
}

// joinError is a refusal sent back to a host. reason is its label in
// flare_join_refusals_total: the code's name unless refuseFor names a
// finer one.
type joinError struct {
	code   wire.ErrorCode
	reason string
	msg    string
}

func (e *joinError) Error() string { return e.msg }

func refuse(code wire.ErrorCode, format string, args ...any) *joinError {
	return &joinError{code: code, reason: code.String(), msg: fmt.Sprintf(format, args...)}
}

// refuseFor is refuse with a refusal reason of refusalReasons.
func refuseFor(reason string, code wire.ErrorCode, format string, args ...any) *joinError {
	e := refuse(code, format, args...)
	e.reason = reason
	return e
}

// join records a member. It returns the job when the member is in (the
// caller answers with the ack if the job is admitted), or a refusal.
func (s *Switch) join(from netip.AddrPort, h *wire.Header, body *wire.JoinBody, rank, hosts, stream int) (*job, *joinError) {
	if err := s.checkJoin(h, body); err != nil {
		return nil, err
	}
	s.resolveShape(h.DType, body)
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	if err := s.grantJoin(from, h, body); err != nil {
		return nil, err
	}
	j := s.jobs.get(h.Job)
	if j != nil && s.restart(j, from, h, rank) {
		j = nil // ended: this join starts the job anew
	}
	if j == nil {
		var jerr *joinError
		if j, jerr = s.newPending(from, h, body); jerr != nil {
			return nil, jerr
		}
	}
	if h.Token != j.token {
		s.drops.add(dropToken)
		return nil, nil // a wrong token gets no answer: it may be a probe
	}
	if spec := jobSpec(body); spec != j.spec || h.DType != j.dtype || h.Op != j.op {
		return nil, refuse(wire.CodeJobMismatch, "job %d: rank %d joined with %s/%s, %d elements, world %d; the job has %s/%s, %d elements, world %d",
			h.Job, h.Child, h.DType, h.Op, body.Elements, body.World, j.dtype, j.op, j.spec.Elements, j.spec.World)
	}
	j.touch(time.Now().UnixNano())
	multicast := body.Options&wire.OptMulticast != 0
	if j.pend != nil {
		return s.joinPending(j, from, rank, pendingMember{addr: from, hosts: hosts, stream: stream, multicast: multicast, session: h.Block})
	}
	switch cur := j.members[rank]; {
	case j.group.IsValid() && !multicast: // the admitted session's join again, without the option
		return nil, refuse(wire.CodeJobMismatch, "job %d: rank %d joined without multicast, and the job's results go to group %v: join with it (hostlib Options.Multicast)", h.Job, rank, j.group)
	case cur == from:
	case cur.IsValid():
		return nil, refuse(wire.CodeJobMismatch, "job %d: rank %d already joined from %s", h.Job, rank, cur)
	default: // the session that left joins again: no host does (a session leaves as it closes)
		return nil, refuse(wire.CodeJobMismatch, "job %d: rank %d left the job, which runs on without it: a session that left cannot join again (a new session can)", h.Job, rank)
	}
	return j, nil
}

// restart ends admitted job j when a join with its token names a session
// of rank other than the one admitted, from the rank's own address or
// after the rank left: that session's process is gone (it left, or its
// host restarted on the same address), and the new one's calls start
// again at generation 1, where the job's blocks hold the earlier calls'
// results, which its packets would be answered with as if it had lost
// them. The job ends as if the rank had aborted (its other members, and
// the parent, hear it at once), and the caller starts the job anew with
// this join. It reports whether it ended j. The caller holds the table
// lock.
func (s *Switch) restart(j *job, from netip.AddrPort, h *wire.Header, rank int) bool {
	if j.pend != nil || h.Token != j.token || rank >= len(j.members) || h.Block == j.sessions[rank] {
		return false
	}
	if cur := j.members[rank]; cur.IsValid() && cur != from {
		return false // another address while the rank is in: refused as already joined
	}
	text := fmt.Sprintf("rank %d joined again in a new session from %v: its earlier session is gone", rank, from)
	s.abortParent(j, 0, uint16(rank), wire.CodeAborted, text)
	members := s.endAbortedLocked(j, uint16(rank), text, fmt.Sprintf("rank %d restarted", rank))
	s.notifyAborted(j, members, from, 0, uint16(rank), text)
	s.log.Warn("job ended: a rank joined again in a new session", "job", j.id, "rank", rank, "from", from)
	return true
}

// jobSpec is what of a join every member of the job must agree on: all of
// it but what each member says of itself, its timeout, (a child switch)
// its stream bound, and whether it takes results on a multicast group.
func jobSpec(body *wire.JoinBody) wire.JoinBody {
	spec := *body
	spec.TimeoutMillis, spec.StreamPackets = 0, 0
	spec.Options &^= wire.OptMulticast
	return spec
}

// resolveShape fills in what the join left to the switch and rounds what
// it asked the way admission will, so that joins agree when they cut the
// same blocks: a host asking for the default and a child switch sending
// what it resolved (joinParent) describe the same job. Dense: elements per
// packet (0 = a full packet); sparse: indices per block. The join was
// checked.
func (s *Switch) resolveShape(dt wire.DType, b *wire.JoinBody) {
	if b.Options&wire.OptSparse != 0 {
		b.BlockElems = uint32(sparseBlockElems(int(b.Elements), int(b.BlockElems)))
	} else if b.PacketElems == 0 {
		b.PacketElems = uint32(s.cfg.PacketBytes / dt.Size())
	}
}

func (s *Switch) checkJoin(h *wire.Header, b *wire.JoinBody) *joinError {
	switch {
	case b.World < 1 || int(b.World) > maxChildren:
		return refuse(wire.CodeBadRequest, "job %d: world size %d: must be in 1..%d", h.Job, b.World, maxChildren)
	case int(h.Child) >= int(b.World):
		return refuse(wire.CodeBadRequest, "job %d: rank %d: must be below the world size %d", h.Job, h.Child, b.World)
	case b.Elements < 1 || b.Elements > maxElements:
		return refuse(wire.CodeBadRequest, "job %d: %d elements: must be in 1..%d", h.Job, b.Elements, uint64(maxElements))
	case b.Options&wire.OptSparse == 0 && b.Storage != wire.StorageDense:
		return refuse(wire.CodeBadRequest, "job %d: storage %v is for sparse jobs", h.Job, b.Storage)
	case b.Options&wire.OptSparse != 0 && b.Storage == wire.StorageDense:
		return refuse(wire.CodeBadRequest, "job %d: a sparse job needs hash or array storage", h.Job)
	case b.Options&wire.OptSparse != 0 && h.Op != wire.OpSum && h.Op != wire.OpMin && h.Op != wire.OpMax:
		return refuse(wire.CodeBadRequest, "job %d: sparse jobs reduce with sum, min or max, not %v", h.Job, h.Op)
	case b.Options&wire.OptBounded != 0 && (b.Options&(wire.OptSparse|wire.OptReproducible) != 0 || (b.Algo != wire.AlgoAuto && b.Algo != wire.AlgoSingle)):
		return refuse(wire.CodeBadRequest, "job %d: bounded time works with the dense single-buffer design only (not sparse, tree, multi or reproducible)", h.Job)
	case b.Options&wire.OptSparse != 0 && b.Algo == wire.AlgoTree:
		return refuse(wire.CodeBadRequest, "job %d: sparse jobs use single or multi buffers, not tree", h.Job)
	case b.Algo == wire.AlgoMulti && (b.Buffers < 2 || b.Buffers > proto.MaxBuffers):
		return refuse(wire.CodeBadRequest, "job %d: multi with %d buffers: must be in 2..%d", h.Job, b.Buffers, proto.MaxBuffers)
	}
	if err := checkShapeFields(h, b); err != nil {
		return err
	}
	if pe := int(b.PacketElems); b.Options&wire.OptSparse == 0 && pe*h.DType.Size() > s.cfg.PacketBytes {
		return refuse(wire.CodeBadRequest, "job %d: %d elements per packet of %s = %d bytes: the switch's packets carry at most %d",
			h.Job, pe, h.DType, pe*h.DType.Size(), s.cfg.PacketBytes)
	}
	if _, err := elem.KernelFor(h.DType, h.Op); err != nil {
		return refuse(wire.CodeBadRequest, "job %d: %v", h.Job, err)
	}
	if !s.joinLimit.allow(time.Now()) {
		return refuseFor(refusalJoinRate, wire.CodeTooManyJobs, "job %d: too many joins per second (%s %d); retry later", h.Job, s.cfg.setting("JoinRate"), s.cfg.JoinRate)
	}
	return nil
}

// checkShapeFields refuses a join that puts a value in a field that is not
// its kind's: each of PacketElems (dense), BlockElems (sparse) and
// StreamPackets (a child switch's sparse join) carries one thing only.
func checkShapeFields(h *wire.Header, b *wire.JoinBody) *joinError {
	sparse := b.Options&wire.OptSparse != 0
	switch {
	case sparse && b.PacketElems != 0:
		return refuse(wire.CodeBadRequest, "job %d: packet elems %d in a sparse join: must be 0 (the switch sets the pairs per packet; ask for indices per block in block elems)", h.Job, b.PacketElems)
	case !sparse && b.BlockElems != 0:
		return refuse(wire.CodeBadRequest, "job %d: block elems %d in a dense join: must be 0 (a dense block is one packet; ask for its size in packet elems)", h.Job, b.BlockElems)
	case b.StreamPackets != 0 && (!sparse || h.Flags&wire.FlagFromSwitch == 0):
		return refuse(wire.CodeBadRequest, "job %d: stream packets %d: must be 0 but in a child switch's (flag from-switch) sparse join", h.Job, b.StreamPackets)
	}
	return nil
}

// leave removes a member; the job ends when every member has left.
func (s *Switch) leave(from netip.AddrPort, h *wire.Header) {
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	j := s.jobs.get(h.Job)
	member, isMember := s.memberIndex(h)
	switch {
	case j == nil: // a stray, or the second copy of the leave that ended the job
		s.drops.add(dropUnknownJob)
		return
	case !isMember:
		s.drops.add(dropNotMember)
		return
	case h.Token != j.token:
		s.drops.add(dropToken)
		return
	case j.pend != nil:
		s.leavePending(j, int(member), from)
		return
	case int(member) >= len(j.members) || j.members[member] != from:
		s.drops.add(dropNotMember)
		return
	}
	j.members[member] = netip.AddrPort{}
	j.left++
	if j.left == j.joined {
		s.endLocked(j, "left")
	}
}

// endLocked removes the job from the table (its packets are dropped from
// now on) and frees its memory once its queued packets have run. A job
// still being built is freed by build, which finds it closing.
func (s *Switch) endLocked(j *job, why string) {
	j.closing.Store(true)
	s.jobs.update(func(m map[uint32]*job) { delete(m, j.id) })
	if j.pend != nil {
		s.unpend(j)
	}
	if j.handler != nil {
		s.completedEnded.Add(j.handler.completed())
		s.latencyEnded.Add(j.handler.latencyNs())
	}
	if live := j.live.Load(); live != nil {
		if live.expire != nil {
			s.boundedJobs.Add(-1)
		}
		s.links.unref(live.addrs...)
		s.links.unref(live.group)
		if s.hasParent() && j.upAsked {
			s.leaveParent(j)
		}
	}
	level := slog.LevelInfo
	if !j.admitted {
		level = slog.LevelDebug // pending jobs come and go with every stray join
	}
	rx, tx := j.packets()
	s.log.Log(context.Background(), level, "job ended", "job", j.id, "why", why, "rx_packets", rx, "tx_packets", tx)
	if j.building {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for j.inflight() > 0 {
			time.Sleep(time.Millisecond)
		}
		s.free(j.handler, j.quota, j)
	}()
}

// free closes a job's handler, releases its quota and gives its memory
// back to the budget. A large job's memory is returned to the system at
// once, so that the budget the next job is admitted against is what the
// process really has free, not garbage the collector has yet to find.
func (s *Switch) free(h jobHandler, q *hpu.Quota, j *job) {
	if h != nil {
		h.Close()
	}
	if q != nil {
		q.Release()
	}
	s.jobs.mu.Lock()
	n := j.charge + j.streamBytes.Swap(0)
	j.charge = 0
	s.groups.give(j.group)
	j.group = netip.AddrPort{}
	j.handler, j.quota = nil, nil
	s.jobs.mu.Unlock()
	j.live.Store(nil)
	if n >= freeOSMemoryAt {
		debug.FreeOSMemory()
	}
	s.budget.release(n)
}

// freeOSMemoryAt is the size of an ended job from which free returns its
// memory to the system before the budget takes it back.
const freeOSMemoryAt = 64 << 20

// reap ends jobs idle for longer than JobIdle, and pending jobs whose
// ranks have not all joined within JoinTimeout of the first.
func (s *Switch) reap(now time.Time) {
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	for _, j := range s.jobs.all() {
		switch {
		case j.pend != nil && now.Sub(time.Unix(0, j.created)) > s.cfg.JoinTimeout:
			s.evictions.add(evictJoinTimeout)
			s.endLocked(j, "join-timeout")
		case now.Sub(time.Unix(0, j.lastActive())) > s.cfg.JobIdle:
			s.endLocked(j, "idle")
		}
	}
}

// rateLimit is a token bucket refilled at rate per second.
type rateLimit struct {
	mu     sync.Mutex
	rate   float64
	tokens float64
	last   time.Time
}

func (r *rateLimit) allow(now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tokens = min(r.rate, r.tokens+now.Sub(r.last).Seconds()*r.rate)
	r.last = now
	if r.tokens < 1 {
		return false
	}
	r.tokens--
	return true
}
