package swtch

import (
	"math"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/flare-net/flare/handlers"
	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/proto"
	"github.com/flare-net/flare/wire"
)

// Admission. Once every rank of a job has joined, startAdmission resolves
// its shape and reserves what it will hold, under the table lock and
// without allocating: the L1 quota, and the job's host memory, computed by
// the handlers' Footprint formulas, against the memory budget. A job that
// does not fit, or whose counts would overflow a field of the protocol,
// is refused there with the numbers. The handler itself (its block table
// and stored results, up to the whole budget) is then built by build, in
// a goroutine of its own: the reader goes on serving the other jobs while
// it allocates, and the members are acked when it is ready.

// plan is an admitted job's shape and what admission reserved for it.
type plan struct {
	handler handlerPlan // the handler's configuration, dense or sparse
	quota   *hpu.Quota
	ack     wire.JoinAckBody
	window  int
	log     []any // the admission's log fields
}

// startAdmission plans job j, whose members are all in, reserves its
// memory and starts building its handler. The caller holds the table lock.
func (s *Switch) startAdmission(j *job) *joinError {
	if s.hasParent() && j.spec.Options&wire.OptBounded != 0 {
		return refuse(wire.CodeBadRequest, "job %d: this switch has a parent (%s): bounded time needs one switch (a parent cannot tell a released partial from a late one); run the job on one switch", j.id, s.cfg.setting("Parent"))
	}
	if s.hasParent() && j.hosts > math.MaxUint16 {
		return refuseFor(refusalOverflow, wire.CodeBadRequest, "job %d: %d hosts under this switch: its join at the parent carries them in a 16-bit world field, at most %d", j.id, j.hosts, math.MaxUint16)
	}
	var p *plan
	var jerr *joinError
	if j.spec.Options&wire.OptSparse != 0 {
		p, jerr = s.planSparse(j)
	} else {
		p, jerr = s.planDense(j)
	}
	if jerr != nil {
		return jerr
	}
	if jerr := s.capGranted(j, p); jerr != nil {
		p.quota.Release() // the budget's charge goes back when the caller ends the job
		return jerr
	}
	if j.multicast { // (a child switch never asks: its members are hosts, or unicast)
		var ok bool
		if j.group, ok = s.groups.take(); ok { // none left: the job runs unicast
			p.ack.Group = j.group
			p.log = append(p.log, "group", j.group)
		}
	}
	j.building = true
	s.admitting.Add(1)
	go s.build(j, p, j.charge >= bigBuild)
	return nil
}

// bigBuild is the footprint from which builds take turns (Switch.bigBuilds):
// allocating and zeroing a large handler keeps a CPU busy for a while, and
// one at a time leaves the others to the packet path. Smaller jobs are
// built at once, beside a large one.
const bigBuild = 64 << 20

// planDense resolves a dense job's design, window and quota. Sizing (a
// first-order Little's-law estimate until the model decides it): hosts
// stagger within window-sized groups and a host cannot run more than one
// group ahead of the slowest, so at most 2W blocks are open at once, each
// holding M buffers at its peak (1 for single, B for multi, P for tree).
func (s *Switch) planDense(j *job) (*plan, *joinError) {
	esize := j.dtype.Size()
	pe := int(j.spec.PacketElems)
	if pe == 0 {
		pe = s.cfg.PacketBytes / esize
	}
	elements := int(j.spec.Elements)
	nblocks := (elements + pe - 1) / pe
	if uint64(nblocks) > math.MaxUint32 {
		return nil, refuseFor(refusalOverflow, wire.CodeBadRequest, "job %d: %d elements in packets of %d make %d blocks: a block id and the join-ack's block count hold at most %d; send more elements per packet",
			j.id, elements, pe, nblocks, uint32(math.MaxUint32))
	}
	algo, b := j.spec.Algo, int(j.spec.Buffers)
	if algo == wire.AlgoAuto {
		algo, b = proto.Choose(elements*esize, j.spec.Options&wire.OptReproducible != 0)
	}
	bounded := j.spec.Options&wire.OptBounded != 0
	if bounded {
		algo, b = wire.AlgoSingle, 0 // its buffer is the partial aggregate at any moment
	}
	cfg := &handlers.DenseConfig{Job: j.id, Token: j.token, Algo: algo, Buffers: b, Children: j.world(),
		DType: j.dtype, Op: j.op, Elements: elements, PacketElems: pe, KeepResults: true, Readers: s.cfg.Readers, SteerRun: s.cfg.SteerRun,
		Deadline: int64(j.spec.DeadlineMillis) * int64(time.Millisecond)}
	if s.hasParent() {
		cfg.Uplink = &handlers.Uplink{Child: uint16(s.cfg.ChildIndex)}
	}
	w, q, jerr := s.reserve(j, nblocks, s.windowTarget(j.world(), pe*esize, cfg.MinBuffers()), cfg.MinBuffers(), func(bufs int) handlers.Footprint { return cfg.Footprint(bufs) })
	if jerr != nil {
		return nil, jerr
	}
	cfg.Quota = q
	return &plan{handler: densePlan{cfg}, quota: q, window: w,
		ack: wire.JoinAckBody{Window: uint32(w), Algo: algo, Buffers: uint8(b), PacketElems: uint32(pe), Blocks: uint32(nblocks), QuotaBuffers: uint32(q.Limit())},
		log: []any{"algo", algo, "buffers", b, "window", w, "quota_buffers", q.Limit(), "blocks", nblocks}}, nil
}

// windowTarget is the window a job of world members, blocks of blockBytes
// and m buffers a block starts from: Config.Window where set; otherwise
// DefaultWindowFor, held to DefaultWindowShare of the L1 but at least
// DefaultWindow.
func (s *Switch) windowTarget(world, blockBytes, m int) int {
	w := s.cfg.windowFor(world, blockBytes)
	if s.cfg.Window == 0 {
		share := s.unit.Memory().Total() / (DefaultWindowShare * 2 * max(1, m))
		w = max(DefaultWindow, min(share, w))
	}
	return w
}

// reserve sizes the window and reserves the job's quota and host memory:
// at most 2W of its nblocks blocks are open at once, each holding m
// buffers. W starts at target (windowTarget) and halves until that fits
// the free L1; a job for which W = 1 does not fit, or whose footprint
// (given the quota's size) does not fit the budget, is refused with the
// numbers. The job's charge becomes its footprint.
func (s *Switch) reserve(j *job, nblocks, target, m int, footprint func(bufs int) handlers.Footprint) (int, *hpu.Quota, *joinError) {
	need := func(w int) int { return min(nblocks, 2*w) * m }
	free := s.unit.Memory().Free()
	w := min(target, nblocks)
	for w > 1 && need(w) > free {
		w = max(1, min(w/2, free/(2*m)))
	}
	f := jobFootprint{Footprint: footprint(need(w)), Members: int64(j.world()) * memberBytes}
	q, err := s.unit.Memory().Reserve(need(w))
	if err != nil {
		return 0, nil, refuse(wire.CodeRefusedMemory, "job %d %v", j.id, err)
	}
	// The pending charge is replaced by the footprint.
	s.budget.release(j.charge)
	j.charge = 0
	if !s.budget.reserve(f.total()) {
		q.Release()
		return 0, nil, s.refuseFootprint(j.id, f)
	}
	j.charge = f.total()
	return w, q, nil
}

// build makes job j's handler off the reader and the table lock, then
// admits the job and acks its members; or, when the job ended meanwhile,
// frees what its admission reserved. A big one waits for its turn.
func (s *Switch) build(j *job, p *plan, big bool) {
	defer s.admitting.Done()
	if big {
		s.bigBuilds <- struct{}{}
		defer func() { <-s.bigBuilds }()
	}
	h, err := p.handler.build()
	s.jobs.mu.Lock()
	if err == nil && !j.closing.Load() {
		j.building = false
		s.install(j, h, p)
		s.jobs.mu.Unlock()
		s.announce(j, netip.AddrPort{})
		return
	}
	if err != nil { // a shape the plan let through and the handler refuses: a bug, told to the members
		s.log.Error("job refused by its handler", "job", j.id, "error", err)
		s.tellMembers(j, netip.AddrPort{}, wire.CodeInternal, "job "+strconv.FormatUint(uint64(j.id), 10)+": "+err.Error())
		s.endLocked(j, "refused") // still building: the freeing is left to us
	}
	j.building = false
	s.jobs.mu.Unlock()
	s.free(h, p.quota, j)
}

// install admits job j with handler h. The caller holds the table lock.
func (s *Switch) install(j *job, h jobHandler, p *plan) {
	j.handler, j.quota, j.admitted, j.ack = h, p.quota, true, p.ack
	live := &liveJob{handler: h, addrs: slices.Clone(j.members), group: j.group}
	h.install(s, j, live)
	j.live.Store(live)
	s.links.ref(linkChild, j.members...)
	s.links.ref(linkGroup, j.group)
	s.log.Info("job admitted", append([]any{"job", j.id, "world", len(j.members), "host_memory", j.charge}, p.log...)...)
}

// announce acks job j's members once it is admitted: every member the
// first time, later (a join resent because the ack was lost) only the one
// asking, from. A child switch joins its parent first and tells its
// members once the parent has acked (parentAck).
func (s *Switch) announce(j *job, from netip.AddrPort) {
	s.jobs.mu.Lock()
	if !j.admitted || j.closing.Load() {
		s.jobs.mu.Unlock()
		return // pending or being built: the ack comes when it is admitted
	}
	if s.hasParent() && !j.upAcked {
		if !j.upAsked {
			j.upAsked = true
			s.joinParent(j)
		}
		s.jobs.mu.Unlock()
		return
	}
	members := slices.Clone(j.members)
	first := !j.ackSent
	j.ackSent = true
	s.jobs.mu.Unlock()
	for rank, addr := range members {
		if addr.IsValid() && (first || addr == from) {
			s.ackMember(j, rank, addr)
		}
	}
}

// tellMembers sends an Error to every member of j but except. The caller holds the
// table lock.
func (s *Switch) tellMembers(j *job, except netip.AddrPort, code wire.ErrorCode, msg string) {
	for m, addr := range j.members {
		if !addr.IsValid() || addr == except {
			continue
		}
		reply := wire.Header{Version: wire.Version, Type: wire.TypeError, Job: j.id, Token: j.token, Child: s.rankHere(m)}
		s.send(addr, func(b []byte) []byte { return wire.AppendError(b, &reply, code, msg) })
	}
}

// settle waits until no admission is building a handler.
func (s *Switch) settle() { s.admitting.Wait() }
