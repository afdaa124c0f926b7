package swtch

import (
	"container/list"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/flare-net/flare/wire"
)

// Pending jobs. A job exists from its first join; until every rank has
// joined it is pending, and anyone who can reach the port can create one
// with a single datagram, so pending jobs are held to their own limits
// (docs/SECURITY.md, "Pending joins"):
//
//   - at most Config.MaxPending at once, and at most
//     Config.MaxPendingPerSource created by one source address (IP, any
//     port);
//   - when a new job would pass either limit, or the job table is full,
//     the oldest pending job (of that source, for the per-source limit)
//     makes room: a pending job never keeps a new one out, and a source
//     that floods only churns its own;
//   - a pending job whose ranks have not all joined within
//     Config.JoinTimeout of its first join ends;
//   - its state is one small entry per rank joined so far, charged to the
//     memory budget, so that a job of world 65,535 with one rank joined
//     costs one entry, and pending state in all stays below about
//     JoinRate × JoinTimeout entries.
//
// An honest job that is evicted or times out loses nothing but time: its
// ranks repeat their joins (every 100 ms, hostlib) and re-create it.

// pendingMember is a rank that joined a pending job.
type pendingMember struct {
	addr      netip.AddrPort
	hosts     int    // hosts under the member: 1, or a child switch's join World
	stream    int    // sparse, a child switch: its longest stream of a block
	multicast bool   // joined with wire.OptMulticast
	session   uint32 // the join's session id (its Block field)
}

// Budget charges of pending state: a job (its struct, its map, its slots
// in the table and the pending list) and each rank joined (a map entry).
// Upper bounds, checked by TestPendingCharges.
const (
	pendingJobBytes    = 2048
	pendingMemberBytes = 192
)

// pendingJobCharge is what a pending job is charged: pendingJobBytes and
// its counts for each of the switch's readers.
func (s *Switch) pendingJobCharge() int64 {
	return pendingJobBytes + int64(s.readers())*readerCountsBytes
}

// readers is how many readers the switch has (one before Run's sockets).
func (s *Switch) readers() int { return max(1, len(s.conns)) }

// Eviction reasons, the why label of flare_pending_evictions_total.
const (
	evictSourceLimit = "source-limit"
	evictPendingCap  = "pending-limit"
	evictTableFull   = "table-full"
	evictJoinTimeout = "join-timeout"
)

var evictionReasons = []string{evictSourceLimit, evictPendingCap, evictTableFull, evictJoinTimeout}

// pendingJobs is the pending jobs in creation order and per source; under
// the table lock.
type pendingJobs struct {
	order    list.List // *job, oldest first
	bySource map[netip.Addr]int
	n        atomic.Int64 // order.Len(), for the metrics
}

// newPending creates a pending job for a join of an unknown id, making
// room as the limits say, or refuses. The caller holds the table lock.
func (s *Switch) newPending(from netip.AddrPort, h *wire.Header, body *wire.JoinBody) (*job, *joinError) {
	p := &s.pending
	src := from.Addr()
	if p.bySource[src] >= s.cfg.MaxPendingPerSource {
		s.evictOldest(func(j *job) bool { return j.source == src }, evictSourceLimit)
	}
	if p.order.Len() >= s.cfg.MaxPending {
		s.evictOldest(nil, evictPendingCap)
	}
	if len(s.jobs.all()) >= s.cfg.MaxJobs && !s.evictOldest(nil, evictTableFull) {
		return nil, refuse(wire.CodeTooManyJobs, "job %d: the switch runs %d jobs, its limit (%s)", h.Job, s.cfg.MaxJobs, s.cfg.setting("MaxJobs"))
	}
	charge := s.pendingJobCharge()
	if !s.budget.reserve(charge) {
		return nil, s.refuseMemory(h.Job, "a pending job", charge)
	}
	now := time.Now().UnixNano()
	j := &job{id: h.Job, token: h.Token, spec: jobSpec(body), dtype: h.DType, op: h.Op, pend: map[int]pendingMember{},
		source: src, created: now, charge: charge, per: make([]readerCounts, s.readers())}
	j.touch(now)
	j.pendEl = p.order.PushBack(j)
	if p.bySource == nil {
		p.bySource = map[netip.Addr]int{}
	}
	p.bySource[src]++
	p.n.Store(int64(p.order.Len()))
	s.jobs.update(func(m map[uint32]*job) { m[h.Job] = j })
	s.log.Debug("job created", "job", j.id, "world", body.World, "dtype", h.DType, "op", h.Op, "elements", body.Elements, "from", from)
	return j, nil
}

// evictOldest ends the oldest pending job that match accepts (any, when
// nil) and reports whether there was one.
func (s *Switch) evictOldest(match func(*job) bool, why string) bool {
	for e := s.pending.order.Front(); e != nil; e = e.Next() {
		if j := e.Value.(*job); match == nil || match(j) {
			s.evictions.add(why)
			s.endLocked(j, why)
			return true
		}
	}
	return false
}

// unpend takes j off the pending list, when every rank has joined or it
// ends. Its charge stays with it. The caller holds the table lock.
func (s *Switch) unpend(j *job) {
	p := &s.pending
	p.order.Remove(j.pendEl)
	if p.bySource[j.source]--; p.bySource[j.source] <= 0 {
		delete(p.bySource, j.source)
	}
	p.n.Store(int64(p.order.Len()))
	j.pendEl = nil
}

// joinPending records rank's join of pending job j and starts the job's
// admission once every rank is in. It returns j while the job waits for
// ranks, and no job once its admission has started (the build acks). The
// caller holds the table lock.
func (s *Switch) joinPending(j *job, from netip.AddrPort, rank int, m pendingMember) (*job, *joinError) {
	if _, ok := j.pend[rank]; !ok { // (a known rank joining from a new address is a restarted host)
		if !s.budget.reserve(pendingMemberBytes) {
			return nil, s.refuseMemory(j.id, "a pending join", pendingMemberBytes)
		}
		j.charge += pendingMemberBytes
	}
	j.pend[rank] = m
	if len(j.pend) < j.world() {
		return j, nil
	}
	s.fixMembers(j)
	if err := s.startAdmission(j); err != nil {
		// Every rank hears why, not only the one whose join completed
		// the job (the caller answers that one): the others would
		// otherwise wait for their join timeout.
		s.tellMembers(j, from, err.code, err.msg)
		s.endLocked(j, "refused")
		return nil, err
	}
	// The build acks every member once the handler is ready (announce);
	// the caller must not ack this rank too, or it would be acked twice
	// whenever the build finishes first.
	return nil, nil
}

// memberAddrs is a copy of the addresses of j's members that have joined
// and not left, for a pending job as for an admitted one: as many as
// joined, whatever the job's world. The caller holds the table lock.
func (j *job) memberAddrs() []netip.AddrPort {
	if j.pend == nil {
		return slices.DeleteFunc(slices.Clone(j.members), func(a netip.AddrPort) bool { return !a.IsValid() })
	}
	addrs := make([]netip.AddrPort, 0, len(j.pend))
	for _, m := range j.pend {
		addrs = append(addrs, m.addr)
	}
	return addrs
}

// memberAddr is the address of j's member rank, or the zero address when
// that rank has not joined, has left, or is beyond the world. The caller
// holds the table lock.
func (j *job) memberAddr(rank int) netip.AddrPort {
	if j.pend != nil {
		return j.pend[rank].addr
	}
	if rank < 0 || rank >= len(j.members) {
		return netip.AddrPort{}
	}
	return j.members[rank]
}

// leavePending removes a rank of a pending job; the job ends with its
// last rank.
func (s *Switch) leavePending(j *job, rank int, from netip.AddrPort) {
	if m, ok := j.pend[rank]; !ok || m.addr != from {
		s.drops.add(dropNotMember)
		return
	}
	delete(j.pend, rank)
	if len(j.pend) == 0 {
		s.endLocked(j, "left")
	}
}

// fixMembers turns a pending job whose ranks have all joined into one with
// its members by rank. The pending charge stays until admission replaces
// it with the job's footprint.
func (s *Switch) fixMembers(j *job) {
	n := j.world()
	j.members, j.subtree, j.streams, j.sessions = make([]netip.AddrPort, n), make([]int, n), make([]int, n), make([]uint32, n)
	j.multicast = true
	for r, m := range j.pend {
		j.members[r], j.subtree[r], j.streams[r], j.sessions[r] = m.addr, m.hosts, m.stream, m.session
		j.hosts += m.hosts
		j.multicast = j.multicast && m.multicast
	}
	j.joined = n
	s.unpend(j)
	j.pend = nil
}

// memberBytes is the host memory of an admitted job's member tables, per
// member: its address (twice: the job's and the live copy), its hosts and
// stream counts, its session id, and its link counters.
const memberBytes = 2*int64(unsafe.Sizeof(netip.AddrPort{})) + 2*int64(unsafe.Sizeof(int(0))) + int64(unsafe.Sizeof(uint32(0))) +
	int64(unsafe.Sizeof(link{})) + 64
