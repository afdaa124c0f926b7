package swtch

import (
	"context"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/flare-net/flare/wire"
)

// Trees of switches. A switch with a parent (Config.Parent) is a child in
// a tree: once every member of a job has joined here and the job is
// admitted, it joins the same job (id, token, shape) at its parent as child
// Config.ChildIndex, with FlagFromSwitch on the join and the number of
// hosts under it in the join's World. It acks its own members only when
// the parent has acked it, with the smaller of the two windows, so no host
// sends before the whole path up is admitted. Its handler sends every
// finished block up (handlers.Uplink) and keeps it; the parent's results
// come back as Result packets, which the handler stores over the partial
// and multicasts to this switch's members.
//
// A switch with Config.Children > 0 takes only joins from child switches
// and counts Children members per job, whatever World the joins carry.
//
// Loss between switches is recovered by the hosts' retransmissions: a host
// whose result is overdue sends its block again; the switch that finished
// the block answers with the parent's result if it has it, and otherwise
// sends its stored partial up again (FlagRetransmit), where the parent's
// contributor bitmap keeps it from counting twice.

// parentJoinEvery is how often a switch repeats its join at its parent
// until the parent answers (hosts repeat theirs at the same pace).
const parentJoinEvery = 100 * time.Millisecond

// parentLeaveCopies is how many leaves a switch sends up when a job ends
// here: a leave is not acknowledged, and a lost one leaves the job to the
// parent's idle reaper.
const parentLeaveCopies = 2

// hasParent reports whether this switch is a child in a tree.
func (s *Switch) hasParent() bool { return s.parent.IsValid() }

// joinParent sends job j's join to the parent. The caller holds the table
// lock, as endLocked does when it sends the job's leave up: no join of a
// job that ended here reaches the parent after the leave (it would hold a
// pending job there until its join timeout).
func (s *Switch) joinParent(j *job) {
	body := j.spec
	body.World = uint16(min(j.hosts, 1<<16-1))
	body.TimeoutMillis = 0
	if j.upBlockElems > 0 {
		// A sparse join asks for the indices per block resolved here, and
		// says the longest stream of a block this switch sends up, which
		// sizes the parent's view of it.
		body.BlockElems, body.StreamPackets = uint32(j.upBlockElems), uint32(j.upStream)
	} else {
		body.PacketElems = j.ack.PacketElems // resolved here, so every level cuts the same blocks
	}
	if j.upSession == 0 {
		j.upSession = rand.Uint32() | 1 // this switch's session of the job, the same in every resend
	}
	h := wire.Header{Version: wire.Version, Type: wire.TypeJoin, Flags: wire.FlagFromSwitch, Job: j.id, Token: j.token,
		Block: j.upSession, Child: uint16(s.cfg.ChildIndex), DType: j.dtype, Op: j.op}
	s.send(s.parent, func(b []byte) []byte { return wire.AppendJoin(b, &h, &body) })
}

// leaveParent tells the parent that job j ended here. The caller holds the
// table lock.
func (s *Switch) leaveParent(j *job) {
	h := wire.Header{Version: wire.Version, Type: wire.TypeLeave, Job: j.id, Token: j.token, Child: uint16(s.cfg.ChildIndex)}
	for range parentLeaveCopies {
		s.send(s.parent, func(b []byte) []byte { return wire.AppendPacket(b, &h, nil) })
	}
}

// uplinker repeats the joins of admitted jobs the parent has not acked yet.
func (s *Switch) uplinker(ctx context.Context) {
	t := time.NewTicker(parentJoinEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.jobs.mu.Lock()
		for _, j := range s.jobs.all() {
			if j.upAsked && !j.upAcked { // asked once admitted (announce)
				s.joinParent(j)
			}
		}
		s.jobs.mu.Unlock()
	}
}

// fromParent handles the parent's answers to this switch's joins: an ack
// completes the job's admission here (its members are acked now), an error
// is passed down to the members and ends the job here.
func (s *Switch) fromParent(h *wire.Header, payload []byte) {
	switch h.Type {
	case wire.TypeJoinAck:
		var body wire.JoinAckBody
		if err := body.Unmarshal(payload); err != nil {
			s.drops.addWire(err)
			return
		}
		s.parentAck(h, &body)
	case wire.TypeError:
		var body wire.ErrorBody
		if err := body.Unmarshal(payload); err != nil {
			s.drops.addWire(err)
			return
		}
		if body.Code == wire.CodeWaiting {
			return // the parent waits for a sibling: the hosts' retransmissions go on
		}
		if body.Code == wire.CodeAborted {
			s.parentAborted(h, string(body.Text)) // keeps the aborting rank (abort.go)
			return
		}
		s.parentError(h, body.Code, string(body.Text))
	}
}

func (s *Switch) parentAck(h *wire.Header, body *wire.JoinAckBody) {
	s.jobs.mu.Lock()
	j := s.jobs.get(h.Job)
	if j == nil || h.Token != j.token || !j.admitted || j.upAcked {
		s.jobs.mu.Unlock()
		return // a repeated ack, or one for a job that ended here
	}
	if body.PacketElems != j.ack.PacketElems || body.Blocks != j.ack.Blocks {
		s.jobs.mu.Unlock()
		s.parentError(h, wire.CodeJobMismatch, "parent cut the job into different blocks")
		return
	}
	j.upAcked, j.ackSent = true, true
	j.ack.Window = min(j.ack.Window, body.Window)
	members := append([]netip.AddrPort(nil), j.members...)
	s.jobs.mu.Unlock()
	s.log.Info("job joined at parent", "job", j.id, "parent", s.parent, "child_index", s.cfg.ChildIndex,
		"parent_window", body.Window, "window", j.ack.Window, "parent_algo", body.Algo)
	for rank, addr := range members {
		if addr.IsValid() {
			s.ackMember(j, rank, addr)
		}
	}
}

// parentError passes the parent's refusal (or its news that the job is
// gone) to this switch's members and ends the job here, so the hosts see
// the reason and, after a restart above, join again.
func (s *Switch) parentError(h *wire.Header, code wire.ErrorCode, text string) {
	s.jobs.mu.Lock()
	j := s.jobs.get(h.Job)
	if j == nil || h.Token != j.token {
		s.jobs.mu.Unlock()
		return
	}
	s.tellMembers(j, netip.AddrPort{}, code, "parent switch "+s.parent.String()+": "+text)
	s.endLocked(j, "parent: "+code.String())
	s.jobs.mu.Unlock()
	s.log.Warn("parent switch refused or ended the job", "job", j.id, "parent", s.parent, "code", code, "error", text)
}

// memberIndex is the member index here of the sender of a packet with
// header h: its child field, except at a switch with LocalHosts, where
// a host's rank r (not from-switch) is member Children+r. ok is false for
// a host rank beyond LocalHosts. It only looks: a caller that wants the
// header to carry the index sets h.Child itself.
func (s *Switch) memberIndex(h *wire.Header) (index uint16, ok bool) {
	if s.cfg.LocalHosts == 0 || h.Flags&wire.FlagFromSwitch != 0 {
		return h.Child, true
	}
	if int(h.Child) >= s.cfg.LocalHosts {
		return 0, false
	}
	return h.Child + uint16(s.cfg.Children), true
}

// rankHere is the child field with which the switch addresses member m:
// m, but at a switch with LocalHosts, host member Children+r is its rank
// r (memberIndex's inverse).
func (s *Switch) rankHere(m int) uint16 {
	if s.cfg.LocalHosts > 0 && m >= s.cfg.Children {
		m -= s.cfg.Children
	}
	return uint16(m)
}

// ackMember sends the job's ack to member m.
func (s *Switch) ackMember(j *job, m int, addr netip.AddrPort) {
	reply := wire.Header{Version: wire.Version, Type: wire.TypeJoinAck, Job: j.id, Token: j.token, Child: s.rankHere(m), DType: j.dtype, Op: j.op}
	ack := j.ack
	s.send(addr, func(b []byte) []byte { return wire.AppendJoinAck(b, &reply, &ack) })
}
