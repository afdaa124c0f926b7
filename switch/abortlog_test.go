package swtch

import (
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/flare-net/flare/wire"
)

// The aborted jobs remembered are bounded: at most maxAborted, the oldest
// forgotten first, an expired one forgotten at the next abort, and a job
// aborted again is one entry. find answers only a member, with the job's
// token, before the entry expires.
func TestAbortLogBounds(t *testing.T) {
	var a abortLog
	m := netip.MustParseAddrPort("10.0.0.1:5000")
	now := time.Now()
	entry := func(token uint64, until time.Time) *abortedJob {
		return &abortedJob{token: token, members: []netip.AddrPort{m}, until: until}
	}
	for id := range uint32(maxAborted + 5) {
		a.remember(id, entry(uint64(id), now.Add(time.Hour)))
	}
	if len(a.jobs) != maxAborted || len(a.order) != maxAborted || a.n.Load() != maxAborted {
		t.Fatalf("%d jobs, %d in order, n = %d after %d aborts; want %d each", len(a.jobs), len(a.order), a.n.Load(), maxAborted+5, maxAborted)
	}
	for id := range uint32(5) {
		if a.find(id, uint64(id), m, now) != nil {
			t.Fatalf("job %d, among the oldest, still remembered", id)
		}
	}
	if a.find(5, 5, m, now) == nil || a.find(maxAborted+4, maxAborted+4, m, now) == nil {
		t.Fatal("the newest jobs forgotten")
	}
	// Aborted again: one entry, the newest, so the next abort forgets
	// another job, not this one.
	a.remember(5, entry(55, now.Add(time.Hour)))
	a.remember(1000, entry(1000, now.Add(time.Hour)))
	if len(a.order) != maxAborted || a.find(5, 55, m, now) == nil || a.find(5, 5, m, now) != nil || a.find(6, 6, m, now) != nil {
		t.Fatalf("job 5 aborted again: %d in order, found with its new token %v, job 6 (now the oldest) kept %v",
			len(a.order), a.find(5, 55, m, now) != nil, a.find(6, 6, m, now) != nil)
	}

	var b abortLog
	b.remember(1, entry(1, now.Add(-time.Second))) // expired when it comes: gone at once
	if len(b.jobs) != 0 || b.n.Load() != 0 {
		t.Fatalf("an expired abort kept: %d jobs, n = %d", len(b.jobs), b.n.Load())
	}
	b.remember(2, entry(2, now.Add(time.Hour)))
	if e := b.find(2, 2, m, now); e == nil {
		t.Fatal("a member's abort not found")
	}
	for _, c := range []struct {
		name  string
		token uint64
		from  netip.AddrPort
		at    time.Time
	}{
		{"another token", 3, m, now},
		{"another address", 2, netip.MustParseAddrPort("10.0.0.1:5001"), now},
		{"after it expired", 2, m, now.Add(time.Hour)},
	} {
		if b.find(2, c.token, c.from, c.at) != nil {
			t.Errorf("found for %s", c.name)
		}
	}
}

// An Abort of a pending job costs the switch what its joined ranks hold,
// not its world: one of world 65535 that a stranger names without the
// token allocates (next to) nothing, and its own rank's Abort leaves one
// address in the aborted jobs remembered.
func TestAbortOfAHugePendingJob(t *testing.T) {
	fx := newHandleFixture(t, fuzzVariants[0])
	defer fx.close(t)
	const job, token = 1234, 0x77
	h := wire.Header{Job: job, Token: token, DType: wire.Float32, Op: wire.OpSum}
	fx.feed(t, fuzzRecord{from: fzStranger, pkt: wire.AppendJoin(nil, &h, &wire.JoinBody{World: 65535, Elements: 1 << 20})})
	if j := fx.s.jobs.get(job); j == nil || j.pend == nil {
		t.Fatal("the join of world 65535 left no pending job")
	}
	abort := func(tok uint64) []byte {
		a := h
		a.Token, a.Generation = tok, 1
		return wire.AppendAbort(nil, &a, wire.CodeTimeout, "gave up")
	}
	var wrong wire.Header
	body, err := wrong.Unmarshal(abort(token + 1))
	if err != nil {
		t.Fatal(err)
	}
	drops := fx.dropCounts(nil)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const n = 20
	for range n {
		fx.s.abort(fzRank0, &wrong, body) // as handle calls it (feed's own checks copy the job's members)
	}
	runtime.ReadMemStats(&after)
	for i, c := range fx.dropCounts(nil) {
		want := int64(0)
		if fx.s.drops.reasons[i] == "token" {
			want = n
		}
		if c-drops[i] != want {
			t.Fatalf("%d wrong-token Aborts counted %d drops as %q", n, c-drops[i], fx.s.drops.reasons[i])
		}
	}
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 64<<10 {
		t.Errorf("a wrong-token Abort of a pending job of world 65535 allocated %d bytes", per)
	}
	fx.feed(t, fuzzRecord{from: fzStranger, pkt: abort(token)})
	if fx.s.jobs.get(job) != nil {
		t.Fatal("the pending job's own rank aborted it, and it is still in the table")
	}
	e := fx.s.aborts.find(job, token, fzStranger, time.Now())
	if e == nil || len(e.members) != 1 {
		n := -1
		if e != nil {
			n = len(e.members)
		}
		t.Fatalf("the abort remembered %d addresses (-1: none for the rank that aborted); want the one joined rank's", n)
	}
}
