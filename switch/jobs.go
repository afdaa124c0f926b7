package swtch

import (
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flare-net/flare/handlers"
	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/wire"
)

// job is one allreduce job: its members, its handler and its memory.
type job struct {
	id      uint32
	token   uint64
	spec    wire.JoinBody // what every member must agree on (World, Algo, Buffers, Options, Elements, PacketElems)
	dtype   wire.DType
	op      wire.Op
	members []netip.AddrPort // by rank; zero until joined
	subtree []int            // hosts under each member: 1 for a host, a child switch's join World
	streams []int            // sparse: the longest stream of a block each child switch sends (its join's TimeoutMillis)
	joined  int
	left    int
	hosts   int // hosts under this switch in the job, set at admission

	// A child switch in a tree (Config.Parent): upAsked once it has joined
	// the job at its parent, upAcked once the parent acked.
	upAsked, upAcked bool

	// Set at admission, under the table lock.
	admitted bool
	ackSent  bool
	ack      wire.JoinAckBody
	handler  jobHandler
	quota    *hpu.Quota
	// live is what the packet path reads without a lock: nil until admitted.
	live atomic.Pointer[liveJob]

	lastActive atomic.Int64 // unix ns of the last packet
	inflight   atomic.Int64 // packets submitted to the HPU and not yet done (see enter)
	closing    atomic.Bool  // set when the job ends, before its teardown waits for inflight
	rx, tx     atomic.Int64
}

// liveJob is the immutable part of an admitted job that readers, cores and
// the writer use concurrently.
type liveJob struct {
	handler jobHandler
	sparse  bool             // takes Sparse packets, not Data
	expire  hpu.Handler      // bounded-time jobs: the handler's deadline tick
	down    hpu.Handler      // sparse jobs at a non-root switch: the parent's stream
	addrs   []netip.AddrPort // member addresses by rank, as admitted
}

// enter counts a packet of j in flight, unless j has ended. The count
// comes before the check, and endLocked sets closing before its teardown
// waits for the count to reach 0, so either the teardown waits for this
// packet or this sees closing: a packet looked up in the table just before
// its job ended never runs on the closed handler.
func (j *job) enter() bool {
	j.inflight.Add(1)
	if j.closing.Load() {
		j.inflight.Add(-1)
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
}

type denseJob struct{ *handlers.Dense }

func (d denseJob) completed() int64 { return d.Stats.Completed.Load() }
func (d denseJob) latencyNs() int64 { return d.Stats.LatencyNs.Load() }

type sparseJob struct{ *handlers.Sparse }

func (s sparseJob) completed() int64 { return s.Stats.Completed.Load() }
func (s sparseJob) latencyNs() int64 { return s.Stats.LatencyNs.Load() }

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

// joinError is a refusal sent back to a host.
type joinError struct {
	code wire.ErrorCode
	msg  string
}

func (e *joinError) Error() string { return e.msg }

func refuse(code wire.ErrorCode, format string, args ...any) *joinError {
	return &joinError{code: code, msg: fmt.Sprintf(format, args...)}
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
	j := s.jobs.get(h.Job)
	if j == nil {
		if len(s.jobs.all()) >= s.cfg.MaxJobs {
			return nil, refuse(wire.CodeTooManyJobs, "job %d: the switch runs %d jobs, its limit (--max-jobs)", h.Job, s.cfg.MaxJobs)
		}
		j = &job{id: h.Job, token: h.Token, spec: *body, dtype: h.DType, op: h.Op, members: make([]netip.AddrPort, body.World), subtree: make([]int, body.World), streams: make([]int, body.World)}
		j.spec.TimeoutMillis = 0
		j.lastActive.Store(time.Now().UnixNano())
		s.jobs.update(func(m map[uint32]*job) { m[h.Job] = j })
		s.log.Info("job created", "job", j.id, "world", body.World, "dtype", h.DType, "op", h.Op, "elements", body.Elements)
	}
	if h.Token != j.token {
		s.drops.add(dropToken)
		return nil, nil // a wrong token gets no answer: it may be a probe
	}
	spec := *body
	spec.TimeoutMillis = 0
	if spec != j.spec || h.DType != j.dtype || h.Op != j.op {
		return nil, refuse(wire.CodeJobMismatch, "job %d: rank %d joined with %s/%s, %d elements, world %d; the job has %s/%s, %d elements, world %d",
			h.Job, h.Child, h.DType, h.Op, body.Elements, body.World, j.dtype, j.op, j.spec.Elements, j.spec.World)
	}
	switch cur := j.members[rank]; {
	case cur == from:
	case cur.IsValid() && j.admitted:
		return nil, refuse(wire.CodeJobMismatch, "job %d: rank %d already joined from %s", h.Job, rank, cur)
	case cur.IsValid():
		j.members[rank] = from // a restarted host before admission
	default:
		j.members[rank] = from
		j.joined++
	}
	j.subtree[rank], j.streams[rank] = hosts, stream
	j.lastActive.Store(time.Now().UnixNano())
	if !j.admitted && j.joined == len(j.members) {
		if err := s.admit(j); err != nil {
			s.endLocked(j, "refused")
			return nil, err
		}
		for _, n := range j.subtree {
			j.hosts += n
		}
		s.links.ref(linkChild, j.members...)
	}
	return j, nil
}

// resolveShape fills in what the join left to the switch and rounds what
// it asked the way admission will, so that joins agree when they cut the
// same blocks: a host asking for the default and a child switch sending
// what it resolved (joinParent) describe the same job. Dense: elements per
// packet (0 = a full packet); sparse: indices per block. The join was
// checked.
func (s *Switch) resolveShape(dt wire.DType, b *wire.JoinBody) {
	if b.Options&wire.OptSparse != 0 {
		b.PacketElems = uint32(sparseBlockElems(int(b.Elements), int(b.PacketElems)))
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
	case b.Elements < 1 || b.Elements > 1<<32:
		return refuse(wire.CodeBadRequest, "job %d: %d elements: must be in 1..%d", h.Job, b.Elements, uint64(1)<<32)
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
	case b.Algo == wire.AlgoMulti && (b.Buffers < 2 || b.Buffers > handlers.MaxBuffers):
		return refuse(wire.CodeBadRequest, "job %d: multi with %d buffers: must be in 2..%d", h.Job, b.Buffers, handlers.MaxBuffers)
	}
	if pe := int(b.PacketElems); b.Options&wire.OptSparse == 0 && pe*h.DType.Size() > s.cfg.PacketBytes {
		return refuse(wire.CodeBadRequest, "job %d: %d elements per packet of %s = %d bytes: the switch's packets carry at most %d",
			h.Job, pe, h.DType, pe*h.DType.Size(), s.cfg.PacketBytes)
	}
	if _, err := handlers.KernelFor(h.DType, h.Op); err != nil {
		return refuse(wire.CodeBadRequest, "job %d: %v", h.Job, err)
	}
	if !s.joinLimit.allow(time.Now()) {
		return refuse(wire.CodeTooManyJobs, "job %d: too many joins per second (--join-rate %d); retry later", h.Job, s.cfg.JoinRate)
	}
	return nil
}

// admit resolves the design, sizes the window and the quota, and builds the
// handler. It runs under the table lock once every rank has joined.
//
// Sizing (a first-order Little's-law estimate until the model decides it):
// hosts stagger within window-sized groups and a host cannot run more than
// one group ahead of the slowest, so at most 2W blocks are open at once,
// each holding M buffers at its peak (1 for single, B for multi, P for
// tree). The window starts at the configured target and shrinks until
// 2W·M buffers fit in the free memory; a job whose W = 1 does not fit is
// refused with the numbers.
func (s *Switch) admit(j *job) *joinError {
	if s.hasParent() && j.spec.Options&wire.OptBounded != 0 {
		return refuse(wire.CodeBadRequest, "job %d: this switch has a parent (--parent): bounded time needs one switch (a parent cannot tell a released partial from a late one); run the job on one switch", j.id)
	}
	if j.spec.Options&wire.OptSparse != 0 {
		return s.admitSparse(j)
	}
	esize := j.dtype.Size()
	pe := int(j.spec.PacketElems)
	if pe == 0 {
		pe = s.cfg.PacketBytes / esize
	}
	elements := int(j.spec.Elements)
	nblocks := (elements + pe - 1) / pe
	algo, b := j.spec.Algo, int(j.spec.Buffers)
	if algo == wire.AlgoAuto {
		algo, b = handlers.Choose(elements*esize, j.spec.Options&wire.OptReproducible != 0)
	}
	bounded := j.spec.Options&wire.OptBounded != 0
	if bounded {
		algo, b = wire.AlgoSingle, 0 // its buffer is the partial aggregate at any moment
	}
	dcfg := handlers.DenseConfig{Job: j.id, Token: j.token, Algo: algo, Buffers: b, Children: len(j.members),
		DType: j.dtype, Op: j.op, Elements: elements, PacketElems: pe, KeepResults: true,
		Deadline: int64(j.spec.DeadlineMillis) * int64(time.Millisecond)}
	if s.hasParent() {
		dcfg.Uplink = &handlers.Uplink{Child: uint16(s.cfg.ChildIndex)}
	}
	m := dcfg.MinBuffers()
	w, q, jerr := s.reserve(j, nblocks, m)
	if jerr != nil {
		return jerr
	}
	dcfg.Quota = q
	d, err := handlers.NewDense(dcfg)
	if err != nil {
		q.Release()
		return refuse(wire.CodeBadRequest, "job %d: %v", j.id, err)
	}
	j.handler, j.quota, j.admitted = denseJob{d}, q, true
	live := &liveJob{handler: j.handler, addrs: append([]netip.AddrPort(nil), j.members...)}
	if bounded {
		live.expire = hpu.HandlerFunc(d.Expire)
		s.boundedJobs.Add(1)
		select {
		case s.boundedWake <- struct{}{}:
		default:
		}
	}
	j.live.Store(live)
	j.ack = wire.JoinAckBody{Window: uint32(w), Algo: algo, Buffers: uint8(b), PacketElems: uint32(pe),
		Blocks: uint32(nblocks), QuotaBuffers: uint32(q.Limit())}
	s.log.Info("job admitted", "job", j.id, "world", len(j.members), "algo", algo, "buffers", b,
		"window", w, "quota_buffers", q.Limit(), "blocks", nblocks)
	return nil
}

// reserve sizes the window and reserves the job's quota: at most 2W of its
// nblocks blocks are open at once, each holding m buffers. W starts at the
// configured target and halves until that fits the free memory; a job for
// which W = 1 does not fit is refused with the numbers.
func (s *Switch) reserve(j *job, nblocks, m int) (int, *hpu.Quota, *joinError) {
	need := func(w int) int { return min(nblocks, 2*w) * m }
	free := s.unit.Memory().Free()
	w := min(s.cfg.Window, nblocks)
	for w > 1 && need(w) > free {
		w = max(1, min(w/2, free/(2*m)))
	}
	q, err := s.unit.Memory().Reserve(need(w))
	if err != nil {
		return 0, nil, refuse(wire.CodeRefusedMemory, "job %d %v", j.id, err)
	}
	return w, q, nil
}

// leave removes a member; the job ends when every member has left.
func (s *Switch) leave(from netip.AddrPort, h *wire.Header) {
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	j := s.jobs.get(h.Job)
	switch {
	case j == nil: // a stray, or the second copy of the leave that ended the job
		s.drops.add(dropUnknownJob)
		return
	case !s.memberIndex(h):
		s.drops.add(dropNotMember)
		return
	case h.Token != j.token:
		s.drops.add(dropToken)
		return
	case int(h.Child) >= len(j.members) || j.members[h.Child] != from:
		s.drops.add(dropNotMember)
		return
	}
	j.members[h.Child] = netip.AddrPort{}
	j.left++
	if j.left == j.joined {
		s.endLocked(j, "left")
	}
}

// endLocked removes the job from the table (its packets are dropped from
// now on) and frees its memory once its queued packets have run.
func (s *Switch) endLocked(j *job, why string) {
	j.closing.Store(true)
	s.jobs.update(func(m map[uint32]*job) { delete(m, j.id) })
	if j.handler != nil {
		s.completedEnded.Add(j.handler.completed())
		s.latencyEnded.Add(j.handler.latencyNs())
	}
	if live := j.live.Load(); live != nil {
		if live.expire != nil {
			s.boundedJobs.Add(-1)
		}
		s.links.unref(live.addrs...)
		if s.hasParent() && j.upAsked {
			s.leaveParent(j)
		}
	}
	s.log.Info("job ended", "job", j.id, "why", why, "rx_packets", j.rx.Load(), "tx_packets", j.tx.Load())
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for j.inflight.Load() > 0 {
			time.Sleep(time.Millisecond)
		}
		if j.handler != nil {
			j.handler.Close()
		}
		if j.quota != nil {
			j.quota.Release()
		}
	}()
}

// reap ends jobs idle for longer than JobIdle.
func (s *Switch) reap(now time.Time) {
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	for _, j := range s.jobs.all() {
		if now.Sub(time.Unix(0, j.lastActive.Load())) > s.cfg.JobIdle {
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
