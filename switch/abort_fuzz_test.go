package swtch

import (
	"net/netip"
	"testing"

	"github.com/flare-net/flare/wire"
)

// checkAbort checks what became of an Abort that decoded (FuzzHandle): one
// from a member of a job, with its token and a valid body, ends the job
// and tells each other member abortNoticeCopies times who aborted; any
// other is dropped under one reason, leaves the job as it was and is not
// answered.
func (fx *handleFixture) checkAbort(t *testing.T, from netip.AddrPort, h *wire.Header, before jobSnapshot, dropped string, out []sent) {
	t.Helper()
	after := fx.jobState(h.Job)
	valid := before.token == h.Token && before.member(h.Child, from)
	if dropped != "" {
		switch {
		case len(out) > 0:
			t.Fatalf("a dropped abort (%q) made the switch send %d packets", dropped, len(out))
		case after.members == nil && before.members != nil:
			t.Fatalf("a dropped abort (%q) ended job %d", dropped, h.Job)
		case valid && dropped != wire.ReasonBody:
			t.Fatalf("a member's abort was dropped as %q", dropped)
		}
		return
	}
	if !valid {
		t.Fatalf("an abort of job %d rank %d from %v, not that member, counted no drop", h.Job, h.Child, from)
	}
	if after.members != nil {
		t.Fatalf("a member's abort left job %d in the table", h.Job)
	}
	others := 0
	for r, m := range before.members {
		if r != int(h.Child) && m.IsValid() {
			others++
		}
	}
	if len(out) != others*abortNoticeCopies {
		t.Fatalf("an abort made the switch send %d packets; want %d to each of %d other members", len(out), abortNoticeCopies, others)
	}
	for _, o := range out {
		var rh wire.Header
		var e wire.ErrorBody
		payload, _ := rh.Unmarshal(o.pkt) // drain checked it decodes
		if rh.Type != wire.TypeError || e.Unmarshal(payload) != nil || e.Code != wire.CodeAborted || rh.Child != h.Child ||
			o.to == from || !before.member(uint16(memberRank(before, o.to)), o.to) {
			t.Fatalf("an abort by rank %d made the switch send %v (code %v, child %d) to %v", h.Child, rh.Type, e.Code, rh.Child, o.to)
		}
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
