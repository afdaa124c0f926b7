package swtch

import (
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flare-net/flare/wire"
)

// Aborts, NCCL's ncclCommAbort on the wire. A host whose call fails (its
// timeout, a cancelled context, Close during a call) sends the switch an
// Abort: the job, the token, its rank in Child (and again in Block, the
// rank that aborted), and an ErrorBody with the cause and its reason. The
// switch checks it as it checks a Leave (the token, and that the source
// address is the member's), ends the job at once (endLocked: the buffers
// return once the job's queued packets have run) and sends every other
// member an Error with CodeAborted, the aborting rank in Child and "rank
// R: reason" as its text, so that each of them fails within a round trip
// instead of at its own timeout. The job id is free to be joined again
// right after.
//
// In a tree the news travels both ways: a child switch that ends a job
// for an Abort sends one up to its parent (flag from-switch, its index in
// Child, the aborting rank in Block), and a parent's CodeAborted Error is
// passed down to the child switch's members with the aborting rank kept.
//
// An Abort and its notices are not acknowledged. The host sends its Abort
// a few times; the switch sends each notice twice and remembers the
// aborted job for a while (abortMemory, at most maxAborted jobs), so that
// a member that lost both notices learns of the abort from the answer to
// its next packet (a retransmission comes within a second), not from an
// unknown-job answer, and not at its timeout.

// Sizes of the abort path.
const (
	// abortNoticeCopies is how many times each member is told.
	abortNoticeCopies = 2
	// abortUpCopies is how many Aborts a child switch sends its parent.
	abortUpCopies = 2
	// abortMemory is how long an aborted job's notice answers its members'
	// packets.
	abortMemory = 30 * time.Second
	// maxAborted bounds the aborted jobs remembered; the oldest goes first.
	maxAborted = 64
	// abortReplies bounds the answers from that memory per second, all
	// jobs together: only members of an aborted job, from their own
	// addresses and with its token, get one.
	abortReplies = 200
)

// abortLog remembers recently aborted jobs, to answer their members'
// stragglers with the notice they may have missed.
type abortLog struct {
	n     atomic.Int32 // entries, read without the lock on the packet path
	mu    sync.Mutex
	jobs  map[uint32]*abortedJob
	order []uint32 // job ids, oldest first
	limit rateLimit
}

// abortedJob is what the switch keeps of an aborted job.
type abortedJob struct {
	token   uint64
	rank    uint16 // the rank that aborted
	text    string // the notice's text
	members []netip.AddrPort
	until   time.Time
}

// abort handles an Abort from a member: the job ends and every other
// member is told who aborted it and why.
func (s *Switch) abort(from netip.AddrPort, h *wire.Header, payload []byte) {
	var body wire.ErrorBody
	if err := body.Unmarshal(payload); err != nil {
		s.drops.addWire(err)
		return
	}
	// A child switch forwards a host's Abort with the host's rank in Block.
	fromSwitch := h.Flags&wire.FlagFromSwitch != 0 && s.cfg.Children > 0
	if fromSwitch && h.Block > 1<<16-1 {
		s.drops.add(dropUnexpected)
		return
	}
	member, isMember := s.memberIndex(h)
	s.jobs.mu.Lock()
	j := s.jobs.get(h.Job)
	switch {
	case j == nil: // a stray, or a later copy of the Abort that ended the job
		s.jobs.mu.Unlock()
		s.drops.add(dropUnknownJob)
		return
	case !isMember:
		s.jobs.mu.Unlock()
		s.drops.add(dropNotMember)
		return
	case h.Token != j.token:
		s.jobs.mu.Unlock()
		s.drops.add(dropToken)
		return
	case j.memberAddr(int(member)) != from:
		s.jobs.mu.Unlock()
		s.drops.add(dropNotMember)
		return
	}
	// Only a member's Abort gets this far: what a dropped one costs does
	// not grow with the job's world.
	rank, who := h.Child, fmt.Sprintf("rank %d", h.Child)
	if fromSwitch {
		rank, who = uint16(h.Block), fmt.Sprintf("child switch %d", h.Child)
	}
	text := who + ": " + string(body.Text)
	s.abortParent(j, h.Generation, rank, body.Code, text)
	members := s.endAbortedLocked(j, rank, text, "aborted by "+who)
	s.jobs.mu.Unlock()
	s.log.Warn("job aborted by a member", "job", h.Job, "by", who, "from", from, "generation", h.Generation,
		"cause", body.Code, "reason", string(body.Text))
	s.notifyAborted(j, members, from, h.Generation, rank, text)
}

// parentAborted passes a parent's CodeAborted Error down: the job ends
// here too and every member hears it, with the aborting rank kept.
func (s *Switch) parentAborted(h *wire.Header, text string) {
	s.jobs.mu.Lock()
	j := s.jobs.get(h.Job)
	if j == nil || h.Token != j.token {
		s.jobs.mu.Unlock()
		return
	}
	text = "parent switch " + s.parent.String() + ": " + text
	members := s.endAbortedLocked(j, h.Child, text, "parent: aborted")
	s.jobs.mu.Unlock()
	s.log.Warn("parent switch aborted the job", "job", j.id, "parent", s.parent, "error", text)
	s.notifyAborted(j, members, netip.AddrPort{}, h.Generation, h.Child, text)
}

// endAbortedLocked ends job j and remembers the abort for its members
// (j.memberAddrs), whom it returns to be told (notifyAborted). The caller
// holds the table lock. The abort is
// remembered before the job leaves the table: another reader that takes
// a member's data packet and finds no job (the table is read without the
// lock) then finds the abort, and answers with it rather than with
// unknown-job, which would reach the member first and fail its call with
// the wrong reason.
func (s *Switch) endAbortedLocked(j *job, rank uint16, text, why string) []netip.AddrPort {
	members := j.memberAddrs()
	s.aborts.remember(j.id, &abortedJob{token: j.token, rank: rank, text: text, members: members, until: time.Now().Add(abortMemory)})
	s.endLocked(j, why)
	return members
}

// notifyAborted sends every member address but skip (the one that
// aborted, or none) the job's CodeAborted Error.
func (s *Switch) notifyAborted(j *job, members []netip.AddrPort, skip netip.AddrPort, gen uint32, rank uint16, text string) {
	reply := wire.Header{Version: wire.Version, Type: wire.TypeError, Job: j.id, Token: j.token, Generation: gen, Child: rank}
	for _, addr := range members {
		if addr == skip {
			continue
		}
		for range abortNoticeCopies {
			s.send(addr, func(b []byte) []byte { return wire.AppendError(b, &reply, wire.CodeAborted, text) })
		}
	}
}

// abortParent sends the parent the Abort of job j, if this switch joined
// the job there. The caller holds the table lock (the parent hears it
// before the leaves endLocked sends).
func (s *Switch) abortParent(j *job, gen uint32, rank uint16, code wire.ErrorCode, text string) {
	if !s.hasParent() || !j.upAsked {
		return
	}
	h := wire.Header{Version: wire.Version, Type: wire.TypeAbort, Flags: wire.FlagFromSwitch, Job: j.id, Token: j.token,
		Generation: gen, Block: uint32(rank), Child: uint16(s.cfg.ChildIndex)}
	for range abortUpCopies {
		s.send(s.parent, func(b []byte) []byte { return wire.AppendAbort(b, &h, code, text) })
	}
}

// answerAborted answers a packet of a job that is not in the table with
// the job's abort notice, if the job was aborted lately and the packet is
// from one of its members with its token. It reports whether it did; the
// caller answers unknown-job otherwise.
func (s *Switch) answerAborted(from netip.AddrPort, h *wire.Header) bool {
	a := &s.aborts
	if a.n.Load() == 0 {
		return false
	}
	e := a.find(h.Job, h.Token, from, time.Now())
	if e == nil {
		return false
	}
	if a.limit.allow(time.Now()) {
		reply := wire.Header{Version: wire.Version, Type: wire.TypeError, Job: h.Job, Token: h.Token, Generation: h.Generation,
			Block: h.Block, Child: e.rank}
		s.send(from, func(b []byte) []byte { return wire.AppendError(b, &reply, wire.CodeAborted, e.text) })
	}
	return true
}

// find is job id's remembered abort, if it has not expired by now and
// from is one of its members with its token; nil otherwise.
func (a *abortLog) find(id uint32, token uint64, from netip.AddrPort, now time.Time) *abortedJob {
	a.mu.Lock()
	defer a.mu.Unlock()
	e := a.jobs[id]
	if e == nil || e.token != token || !now.Before(e.until) || !slices.Contains(e.members, from) {
		return nil
	}
	return e
}

// remember records an aborted job, replacing an older abort of the same
// id, and forgets expired ones and the oldest beyond maxAborted.
func (a *abortLog) remember(id uint32, e *abortedJob) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	if a.jobs == nil {
		a.jobs = make(map[uint32]*abortedJob)
		a.limit.rate, a.limit.tokens, a.limit.last = abortReplies, abortReplies, now
	}
	if _, ok := a.jobs[id]; ok {
		a.order = slices.DeleteFunc(a.order, func(x uint32) bool { return x == id })
	}
	a.jobs[id] = e
	a.order = append(a.order, id)
	for len(a.order) > 0 && (len(a.order) > maxAborted || !now.Before(a.jobs[a.order[0]].until)) {
		delete(a.jobs, a.order[0])
		a.order = a.order[1:]
	}
	a.n.Store(int32(len(a.jobs)))
}
