package swtch

import (
	"net/netip"
	"testing"

	"github.com/flare-net/flare/wire"
)

// checkAbort checks what became of an Abort that decoded (FuzzHandle): one
// from a member of a job, with its token and a valid body, ends the job
// and tells each other member abortNoticeCopies times who aborted (a host's
// rank, or the rank a child switch's Abort names in Block) and, at a
// middle switch whose job joined its parent, sends the parent the Abort
// and the job's leaves; any other is dropped under one reason, leaves the
// job as it was and is not answered.
func (fx *handleFixture) checkAbort(t *testing.T, from netip.AddrPort, h *wire.Header, before jobSnapshot, dropped string, out []sent) {
	t.Helper()
	after := fx.jobState(h.Job)
	m, ok := fx.v.member(h)
	valid := before.token == h.Token && ok && before.member(m, from)
	rank, badRank := h.Child, false
	if fx.v.middle && h.Flags&wire.FlagFromSwitch != 0 {
		rank, badRank = uint16(h.Block), h.Block > 1<<16-1
	}
	if dropped != "" {
		switch {
		case len(out) > 0:
			t.Fatalf("a dropped abort (%q) made the switch send %d packets", dropped, len(out))
		case after.members == nil && before.members != nil:
			t.Fatalf("a dropped abort (%q) ended job %d", dropped, h.Job)
		case valid && dropped != wire.ReasonBody && !(badRank && dropped == dropUnexpected):
			t.Fatalf("a member's abort was dropped as %q", dropped)
		}
		return
	}
	if !valid || badRank {
		t.Fatalf("an abort of job %d child %d (flags %v, block %d) from %v, not that member, counted no drop", h.Job, h.Child, h.Flags, h.Block, from)
	}
	if after.members != nil {
		t.Fatalf("a member's abort left job %d in the table", h.Job)
	}
	others := 0
	for r, a := range before.members {
		if r != m && a.IsValid() {
			others++
		}
	}
	var notices, up, leaves int
	for _, o := range out {
		var e wire.ErrorBody
		switch rh := o.hdr; {
		case o.to == fzParent && fx.v.middle && rh.Type == wire.TypeAbort:
			if rh.Flags&wire.FlagFromSwitch == 0 || rh.Block != uint32(rank) {
				t.Fatalf("an abort by rank %d went up with flags %v and rank %d", rank, rh.Flags, rh.Block)
			}
			up++
		case o.to == fzParent && fx.v.middle && rh.Type == wire.TypeLeave:
			leaves++
		case rh.Type != wire.TypeError || e.Unmarshal(o.payload) != nil || e.Code != wire.CodeAborted || rh.Child != rank ||
			o.to == from || memberRank(before, o.to) < 0:
			t.Fatalf("an abort by rank %d made the switch send %v (code %v, child %d) to %v", rank, rh.Type, e.Code, rh.Child, o.to)
		default:
			notices++
		}
	}
	switch {
	case notices != others*abortNoticeCopies:
		t.Fatalf("an abort made the switch send %d notices; want %d to each of %d other members", notices, abortNoticeCopies, others)
	case before.upAsked && (up != abortUpCopies || leaves != parentLeaveCopies) || !before.upAsked && up+leaves > 0:
		t.Fatalf("an abort of a job that joined its parent (%v) sent %d aborts and %d leaves up", before.upAsked, up, leaves)
	}
}

// memberRank is a's rank in j, or -1.
func memberRank(j jobSnapshot, a netip.AddrPort) int {
	for r, m := range j.members {
		if m == a {
			return r
		}
	}
	return -1
}
