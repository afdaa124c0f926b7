package swtch

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/flare-net/flare/wire"
)

// A switch with a parent takes its job's results, join-acks and errors
// from the parent's address alone: the same packets from a member (its
// address and the job's token known) or a stranger are dropped as
// unexpected, before the processing unit, and the job goes on; and even
// from the parent, a packet of the wrong kind for the job (a spill to a
// dense job, data) is dropped there too.
func TestParentPacketsFromParentOnly(t *testing.T) {
	const id, token = 6, 6
	parent := fzParent
	fx := newJobFixture(t, func(c *Config) { c.Parent = parent.String() })
	fx.deliver(fzRank0, testJoin(id, token, 0, 1, 0))
	fx.waitAdmitted(id)
	fx.drain() // the join up to the parent
	h := wire.Header{Job: id, Token: token, DType: wire.Float32, Op: wire.OpSum}
	result := func(typ wire.Type) []byte {
		r := h
		r.Type, r.Generation, r.Count = typ, 1, fzPacketElems
		if typ == wire.TypeSpill {
			return wire.AppendPacket(nil, &r, make([]byte, fzPacketElems*wire.PairSize(wire.Float32)))
		}
		return wire.AppendPacket(nil, &r, make([]byte, 4*fzPacketElems))
	}
	unexpected := func() int64 { return fx.s.drops.snapshot()[dropUnexpected] }
	for _, from := range []netip.AddrPort{fzRank0, fzStranger} {
		for name, pkt := range map[string][]byte{
			"result":   result(wire.TypeResult),
			"join-ack": wire.AppendJoinAck(nil, &h, &wire.JoinAckBody{Window: 4, Algo: wire.AlgoSingle, PacketElems: fzPacketElems, Blocks: 5, QuotaBuffers: 4}),
			"timeout":  wire.AppendError(nil, &h, wire.CodeTimeout, "forged"),
			"aborted":  wire.AppendError(nil, &h, wire.CodeAborted, "forged"),
		} {
			before := unexpected()
			if ip := fx.deliver(from, pkt); ip != nil {
				t.Errorf("a %s for the job from %v, not the parent, was taken for the processing unit", name, from)
				fx.run(ip)
			}
			if unexpected() != before+1 {
				t.Errorf("a %s from %v: not counted unexpected", name, from)
			}
		}
	}
	if j := fx.s.jobs.get(id); j == nil || j.closing.Load() {
		t.Fatalf("job %d ended after packets that only its parent may send came from others", id)
	}
	for name, pkt := range map[string][]byte{"spill to a dense job": result(wire.TypeSpill), "data": testData(id, token, 0, 1, 0, 0)} {
		before := unexpected()
		if ip := fx.deliver(parent, pkt); ip != nil {
			t.Errorf("the parent's %s was taken for the processing unit", name)
			fx.run(ip)
		}
		if unexpected() != before+1 {
			t.Errorf("the parent's %s: not counted unexpected", name)
		}
	}
	// The parent's result is taken.
	if ip := fx.deliver(parent, result(wire.TypeResult)); ip == nil {
		t.Fatal("the parent's result was not taken")
	} else {
		fx.run(ip)
	}
}

// A child switch's join goes up with the hosts under it as its world and
// the blocks cut here; the parent's answers are its job's alone (the
// token), an ack that cuts other blocks ends the job here with the
// reason passed down, the window acked to the hosts is the smaller of the
// two, and a job that ends here tells the parent.
func TestParentAnswers(t *testing.T) {
	const id, token = 6, 6
	parent := fzParent
	start := func(t *testing.T) *jobFixture {
		fx := newJobFixture(t, func(c *Config) { c.Parent = parent.String(); c.ChildIndex = 2 })
		fx.deliver(fzRank0, testJoin(id, token, 0, 2, 0))
		fx.deliver(fzRank1, testJoin(id, token, 1, 2, 0))
		fx.waitAdmitted(id)
		return fx
	}
	fx := start(t)
	joins, _ := fx.up(2)
	if len(joins) != 1 || joins[0].World != 2 || joins[0].PacketElems != fzPacketElems {
		t.Fatalf("joins up %+v, want one with world 2 (the hosts here) and %d elements a packet", joins, fzPacketElems)
	}
	h := wire.Header{Type: wire.TypeJoinAck, Job: id, Token: token + 1, Child: 2, DType: wire.Float32, Op: wire.OpSum}
	ack := wire.JoinAckBody{Window: 1, Algo: wire.AlgoSingle, PacketElems: fzPacketElems, Blocks: 5, QuotaBuffers: 2}
	fx.deliver(parent, wire.AppendJoinAck(nil, &h, &ack))
	fx.deliver(parent, wire.AppendError(nil, &h, wire.CodeTimeout, "another job's"))
	if r := fx.replies(); len(r.acks) != 0 || len(r.errors) != 0 {
		t.Fatalf("the parent's ack and error with another token reached the hosts: %+v", r)
	}
	if j := fx.s.jobs.get(id); j == nil || j.closing.Load() {
		t.Fatal("an error with another token ended the job")
	}
	h.Token = token
	fx.deliver(parent, wire.AppendJoinAck(nil, &h, &ack))
	var acked []uint32
	for _, p := range fx.sent() {
		var b wire.JoinAckBody
		if p.hdr.Type == wire.TypeJoinAck && b.Unmarshal(p.payload) == nil {
			acked = append(acked, b.Window)
		}
	}
	if len(acked) != 2 || acked[0] != 1 || acked[1] != 1 {
		t.Errorf("windows acked to the hosts %v, want 1 for each (the parent's, smaller than this switch's)", acked)
	}
	fx.end(id)
	if _, leaves := fx.up(2); leaves != parentLeaveCopies {
		t.Errorf("%d leaves up when the job ended here, want %d", leaves, parentLeaveCopies)
	}

	fx = start(t)
	fx.up(2)
	ack.PacketElems = fzPacketElems * 2
	fx.deliver(parent, wire.AppendJoinAck(nil, &h, &ack))
	r := fx.replies()
	if len(r.errors) != 2 || len(r.acks) != 0 {
		t.Fatalf("after an ack cutting other blocks: %d errors and %d acks to the hosts, want an error to each", len(r.errors), len(r.acks))
	}
	for _, e := range r.errors {
		if e.Code != wire.CodeJobMismatch || !strings.Contains(e.Message(), "parent cut the job into different blocks") {
			t.Errorf("error %v %q, want a job mismatch saying the parent cut other blocks", e.Code, e.Message())
		}
	}
	waitTeardowns(t, fx.s)
	if n := fx.s.budget.reserved.Load(); n != 0 || fx.s.jobs.get(id) != nil {
		t.Errorf("after the parent's mismatch: %d bytes reserved, the job still in the table: %v", n, fx.s.jobs.get(id) != nil)
	}
}

// A middle switch (child switches below it, a host of its own, a parent
// above) joins up with the hosts under it all, its children's worlds and
// its own host, whatever world the first join carried, and with the
// packet size it chose, so every level cuts the same blocks; once the
// parent acks, its own host is acked with its own rank, not its member
// index.
func TestParentMiddleSwitch(t *testing.T) {
	const id, token = 6, 6
	parent := fzParent
	fx := newJobFixture(t, func(c *Config) { c.Parent, c.ChildIndex, c.Children, c.LocalHosts = parent.String(), 1, 2, 1 })
	join := func(child uint16, world uint16, fromSwitch bool) []byte {
		h := wire.Header{Type: wire.TypeJoin, Job: id, Token: token, Child: child, DType: wire.Float32, Op: wire.OpSum}
		if fromSwitch {
			h.Flags = wire.FlagFromSwitch
		}
		return wire.AppendJoin(nil, &h, &wire.JoinBody{World: world, Algo: wire.AlgoSingle, Elements: fzElements}) // packet size: the switch's
	}
	fx.deliver(fzRank0, join(0, 3, true))
	fx.deliver(fzRank1, join(1, 4, true))
	fx.deliver(fzStranger, join(0, 1, false)) // the host of its own, rank 0 here
	fx.waitAdmitted(id)
	joins, _ := fx.up(1)
	pe := uint32(fzPacketBytes / 4)
	if len(joins) != 1 {
		t.Fatalf("%d joins up, want 1", len(joins))
	}
	if up := joins[0]; up.World != 8 || up.PacketElems != pe {
		t.Errorf("the join up says world %d and %d elements a packet, want 8 (3 + 4 under the child switches, and the host here) and %d (cut here: the hosts left it to the switch)",
			up.World, up.PacketElems, pe)
	}
	h := wire.Header{Type: wire.TypeJoinAck, Job: id, Token: token, Child: 1, DType: wire.Float32, Op: wire.OpSum}
	ack := wire.JoinAckBody{Window: 4, Algo: wire.AlgoSingle, PacketElems: pe, Blocks: (fzElements + pe - 1) / pe, QuotaBuffers: 8}
	fx.deliver(parent, wire.AppendJoinAck(nil, &h, &ack))
	acked := map[netip.AddrPort]uint16{}
	for _, p := range fx.sent() {
		if p.hdr.Type == wire.TypeJoinAck {
			acked[p.to] = p.hdr.Child
		}
	}
	if len(acked) != 3 || acked[fzRank0] != 0 || acked[fzRank1] != 1 || acked[fzStranger] != 0 {
		t.Errorf("acks by member, with their child fields: %v; want the child switches 0 and 1, and the host its rank 0", acked)
	}

	// An operator ends the job (DELETE /v1/jobs): each member is told, by
	// the child field it joined with.
	s := fx.s
	s.jobs.mu.Lock()
	ended := s.endGranted(s.jobs.get(id), "unregistered")
	s.jobs.mu.Unlock()
	ended.tell(s, "ended")
	told := map[netip.AddrPort]uint16{}
	for _, p := range fx.sent() {
		if p.hdr.Type == wire.TypeError {
			told[p.to] = p.hdr.Child
		}
	}
	if len(told) != 3 || told[fzRank0] != 0 || told[fzRank1] != 1 || told[fzStranger] != 0 {
		t.Errorf("the job's end told by member, with their child fields: %v; want the child switches 0 and 1, and the host its rank 0", told)
	}
}

// fzParent is the parent switch of the fixtures that have one.
var fzParent = netip.MustParseAddrPort("10.0.0.9:7470")

// up drains what the switch sent and returns what went to its parent:
// the joins, each checked to come from a switch of index child, and how
// many leaves.
func (fx *jobFixture) up(child uint16) (joins []wire.JoinBody, leaves int) {
	fx.t.Helper()
	for _, p := range fx.sent() {
		if p.to != fzParent {
			continue
		}
		switch p.hdr.Type {
		case wire.TypeJoin:
			var b wire.JoinBody
			if err := b.Unmarshal(p.payload); err != nil {
				fx.t.Fatal(err)
			}
			if p.hdr.Flags&wire.FlagFromSwitch == 0 || p.hdr.Child != child {
				fx.t.Errorf("the join up has flags %v and child %d, want from-switch and %d", p.hdr.Flags, p.hdr.Child, child)
			}
			if was := fx.upSessions[p.hdr.Job]; p.hdr.Block == 0 || was != 0 && p.hdr.Block != was {
				fx.t.Errorf("the join up of job %d names session %#x after %#x: want one, not 0, in every resend", p.hdr.Job, p.hdr.Block, was)
			}
			if fx.upSessions == nil {
				fx.upSessions = map[uint32]uint32{}
			}
			fx.upSessions[p.hdr.Job] = p.hdr.Block
			joins = append(joins, b)
		case wire.TypeLeave:
			leaves++
		}
	}
	return joins, leaves
}

// rankHere gives every member back the child field it joined with: a
// host's rank, a child switch's index, whatever the switch's place.
func TestRankHereInvertsMemberIndex(t *testing.T) {
	for _, c := range []struct{ children, localHosts int }{{0, 0}, {3, 0}, {2, 3}} {
		s := &Switch{cfg: Config{Children: c.children, LocalHosts: c.localHosts}}
		senders := []wire.Header{{Child: 0}, {Child: 1}, {Child: 2}, {Child: 1, Flags: wire.FlagFromSwitch}}
		for _, h := range senders {
			m, ok := s.memberIndex(&h)
			if !ok {
				continue // a host rank beyond LocalHosts
			}
			if got := s.rankHere(int(m)); got != h.Child {
				t.Errorf("children %d, local hosts %d: child %d (flags %v) is member %d, addressed as %d",
					c.children, c.localHosts, h.Child, h.Flags, m, got)
			}
		}
	}
}
