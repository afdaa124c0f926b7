package swtch

import (
	"net/netip"
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
	parent := netip.MustParseAddrPort("10.0.0.9:7470")
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
