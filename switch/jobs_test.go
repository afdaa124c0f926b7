package swtch

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/flare-net/flare/wire"
)

// A reader's job look-up gives what the table holds now: a job that came,
// went, or came back as a new job under the same id, and never the job of
// a snapshot it last looked in.
func TestJobLookup(t *testing.T) {
	tbl := newJobTable()
	var l jobLookup
	if j := l.get(tbl, 1); j != nil {
		t.Fatalf("an empty table gave %p", j)
	}
	a, b := &job{}, &job{}
	tbl.update(func(m map[uint32]*job) { m[1] = a })
	for range 2 { // the look-up, then the same from the lookup's entry
		if j := l.get(tbl, 1); j != a {
			t.Fatalf("job 1 added: got %p, want %p", j, a)
		}
	}
	if j := l.get(tbl, 2); j != nil {
		t.Fatalf("job 2, never added: got %p", j)
	}
	if j := l.get(tbl, 1); j != a {
		t.Fatalf("job 1 after a look-up of 2: got %p, want %p", j, a)
	}
	tbl.update(func(m map[uint32]*job) { m[1] = b })
	if j := l.get(tbl, 1); j != b {
		t.Fatalf("job 1 replaced: got %p, want the new %p", j, b)
	}
	tbl.update(func(m map[uint32]*job) { delete(m, 1) })
	if j := l.get(tbl, 1); j != nil {
		t.Fatalf("job 1 removed: got %p", j)
	}
}

// Every join check refuses its case with a bad request that names the
// field and what it may be, and leaves nothing behind: no job, no memory
// reserved.
func TestJoinChecks(t *testing.T) {
	dense := wire.JoinBody{World: 2, Algo: wire.AlgoSingle, Elements: fzElements}
	sparse := wire.JoinBody{World: 2, Options: wire.OptSparse, Storage: wire.StorageHash, Elements: fzSparseElems}
	for _, tc := range []struct {
		name string
		base wire.JoinBody
		mut  func(*wire.Header, *wire.JoinBody)
		want string
	}{
		{"world 0", dense, func(_ *wire.Header, b *wire.JoinBody) { b.World = 0 }, "world size 0: must be in 1.."},
		{"rank past the world", dense, func(h *wire.Header, _ *wire.JoinBody) { h.Child = 2 }, "rank 2: must be below the world size 2"},
		{"no elements", dense, func(_ *wire.Header, b *wire.JoinBody) { b.Elements = 0 }, "0 elements: must be in 1.."},
		{"elements past the bound", dense, func(_ *wire.Header, b *wire.JoinBody) { b.Elements = maxElements + 1 }, fmt.Sprintf("%d elements: must be in 1..%d", uint64(maxElements)+1, uint64(maxElements))},
		{"dense with hash storage", dense, func(_ *wire.Header, b *wire.JoinBody) { b.Storage = wire.StorageHash }, "is for sparse jobs"},
		{"sparse with dense storage", sparse, func(_ *wire.Header, b *wire.JoinBody) { b.Storage = wire.StorageDense }, "a sparse job needs hash or array storage"},
		{"sparse prod", sparse, func(h *wire.Header, _ *wire.JoinBody) { h.Op = wire.OpProd }, "sparse jobs reduce with sum, min or max, not prod"},
		{"bounded tree", dense, func(_ *wire.Header, b *wire.JoinBody) {
			b.Options, b.Algo, b.DeadlineMillis = wire.OptBounded, wire.AlgoTree, 5
		}, "bounded time works with the dense single-buffer design only"},
		{"bounded sparse", sparse, func(_ *wire.Header, b *wire.JoinBody) { b.Options, b.DeadlineMillis = b.Options|wire.OptBounded, 5 }, "bounded time works with the dense single-buffer design only"},
		{"sparse tree", sparse, func(_ *wire.Header, b *wire.JoinBody) { b.Algo = wire.AlgoTree }, "sparse jobs use single or multi buffers, not tree"},
		{"multi with one buffer", dense, func(_ *wire.Header, b *wire.JoinBody) { b.Algo, b.Buffers = wire.AlgoMulti, 1 }, "multi with 1 buffers: must be in 2.."},
		{"packet past the switch's", dense, func(_ *wire.Header, b *wire.JoinBody) { b.PacketElems = fzPacketBytes/4 + 1 }, "the switch's packets carry at most"},
		{"xor on floats", dense, func(h *wire.Header, _ *wire.JoinBody) { h.Op = wire.OpXor }, "bitwise operators are defined on integer dtypes only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newJobFixture(t, nil)
			h := wire.Header{Job: 6, Token: 6, DType: wire.Float32, Op: wire.OpSum}
			b := tc.base
			tc.mut(&h, &b)
			fx.deliver(fzRank0, wire.AppendJoin(nil, &h, &b))
			fx.refused(6, wire.CodeBadRequest, tc.want)
		})
	}
}

// A member that joins with another shape than the job's (its length, its
// dtype or op, the job's options) is refused by name, and the job goes
// on with the members that agree.
func TestJoinMismatch(t *testing.T) {
	body := wire.JoinBody{World: 2, Algo: wire.AlgoSingle, Elements: fzElements}
	for _, tc := range []struct {
		name string
		mut  func(*wire.Header, *wire.JoinBody)
		want string
	}{
		{"elements", func(_ *wire.Header, b *wire.JoinBody) { b.Elements++ }, "rank 1 joined with float32/sum, 38 elements, world 2; the job has float32/sum, 37 elements, world 2"},
		{"dtype", func(h *wire.Header, _ *wire.JoinBody) { h.DType = wire.Int32 }, "rank 1 joined with int32/sum"},
		{"op", func(h *wire.Header, _ *wire.JoinBody) { h.Op = wire.OpMax }, "rank 1 joined with float32/max"},
		{"options", func(_ *wire.Header, b *wire.JoinBody) { b.Options = wire.OptReproducible }, "rank 1 joined with"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newJobFixture(t, nil)
			h := wire.Header{Job: 6, Token: 6, DType: wire.Float32, Op: wire.OpSum}
			fx.deliver(fzRank0, wire.AppendJoin(nil, &h, &body))
			h1, b1 := h, body
			h1.Child = 1
			tc.mut(&h1, &b1)
			fx.deliver(fzRank1, wire.AppendJoin(nil, &h1, &b1))
			r := fx.replies()
			if len(r.errors) != 1 || r.errors[0].Code != wire.CodeJobMismatch || !strings.Contains(r.errors[0].Message(), tc.want) || len(r.acks) != 0 {
				t.Fatalf("got %v and %d acks, want one job-mismatch saying %q", r.errors, len(r.acks), tc.want)
			}
			h1, b1 = h, body
			h1.Child = 1
			fx.deliver(fzRank1, wire.AppendJoin(nil, &h1, &b1))
			if r := fx.replies(); r.acks[6] != 2 {
				t.Fatalf("rank 1 joined again with the job's shape: %d acks (%v), want both members'", r.acks[6], r.errors)
			}
		})
	}
}

// What a member says of itself in its join, its own timeout, need not
// match the others': members with different timeouts make one job.
func TestJoinOwnTimeouts(t *testing.T) {
	fx := newJobFixture(t, nil)
	for rank, from := range []netip.AddrPort{fzRank0, fzRank1} {
		h := wire.Header{Job: fzJob, Token: fzToken, Child: uint16(rank), DType: wire.Float32, Op: wire.OpSum}
		b := wire.JoinBody{World: 2, Algo: wire.AlgoSingle, Elements: fzElements, TimeoutMillis: uint32(1000 + 4000*rank)}
		fx.deliver(from, wire.AppendJoin(nil, &h, &b))
	}
	if r := fx.replies(); r.acks[fzJob] != 2 || len(r.errors) != 0 {
		t.Fatalf("ranks with timeouts of 1 s and 5 s: %d acks, %v; want both acked", r.acks[fzJob], r.errors)
	}
}

// A rank of an admitted job is held by the address it joined from: a join
// of that rank from another address is refused by name (a host cannot
// take over a running rank, even with the token); the same join again,
// its ack lost, is acked once more, to that member alone; and a rank that
// left and joined again counts as a member until it leaves again.
func TestJoinAdmittedRank(t *testing.T) {
	fx := newJobFixture(t, nil)
	fx.deliver(fzRank0, testJoin(fzJob, fzToken, 0, 2, 0))
	fx.deliver(fzRank1, testJoin(fzJob, fzToken, 1, 2, 0))
	fx.waitAdmitted(fzJob)
	if r := fx.replies(); r.acks[fzJob] != 2 {
		t.Fatalf("both joined: %d acks (%v)", r.acks[fzJob], r.errors)
	}
	fx.deliver(fzStranger, testJoin(fzJob, fzToken, 0, 2, 0))
	r := fx.replies()
	if len(r.errors) != 1 || r.errors[0].Code != wire.CodeJobMismatch || !strings.Contains(r.errors[0].Message(), "rank 0 already joined from 10.0.0.1:5000") || len(r.acks) != 0 {
		t.Fatalf("rank 0 joined again from another address: %v and %d acks, want one job mismatch naming rank 0's address", r.errors, len(r.acks))
	}
	if j := fx.s.jobs.get(fzJob); j == nil || j.members[0] != fzRank0 || j.live.Load().addrs[0] != fzRank0 {
		t.Fatal("the refused join moved rank 0")
	}
	fx.deliver(fzRank0, testJoin(fzJob, fzToken, 0, 2, 0))
	if r := fx.replies(); r.acks[fzJob] != 1 || len(r.to) != 1 || r.to[0] != fzRank0 {
		t.Fatalf("rank 0's join again from its own address: %d acks to %v, want one, to rank 0", r.acks[fzJob], r.to)
	}
	fx.deliver(fzRank0, leavePacket(0, fzToken))
	fx.deliver(fzRank0, testJoin(fzJob, fzToken, 0, 2, 0))
	fx.deliver(fzRank0, leavePacket(0, fzToken))
	if fx.s.jobs.get(fzJob) == nil {
		t.Fatal("rank 0 left, joined again and left: the job ended with rank 1 still in it")
	}
	fx.deliver(fzRank1, leavePacket(1, fzToken))
	if fx.s.jobs.get(fzJob) != nil {
		t.Fatal("every member left: the job is still in the table")
	}
	waitTeardowns(t, fx.s)
	if n := fx.s.budget.reserved.Load(); n != 0 {
		t.Errorf("the job ended: %d bytes still reserved", n)
	}
}

// A switch with a parent refuses a bounded-time job: the parent could not
// tell a partial block released below from a late one.
func TestJoinBoundedUnderParent(t *testing.T) {
	fx := newJobFixture(t, func(c *Config) { c.Parent = fzParent.String() })
	fx.deliver(fzRank0, testJoin(6, 6, 0, 1, wire.OptBounded))
	fx.refused(6, wire.CodeBadRequest, "bounded time needs one switch")
}

// refused checks that the switch answered with one refusal of code
// saying want, and holds nothing for job: no entry, no memory reserved.
func (fx *jobFixture) refused(job uint32, code wire.ErrorCode, want string) {
	fx.t.Helper()
	r := fx.replies()
	if len(r.errors) != 1 || r.errors[0].Code != code || !strings.Contains(r.errors[0].Message(), want) || len(r.acks) != 0 {
		fx.t.Fatalf("got %v and %d acks, want one %v saying %q", r.errors, len(r.acks), code, want)
	}
	waitTeardowns(fx.t, fx.s) // a refused admission's teardown
	if n, m := fx.s.budget.reserved.Load(), fx.s.unit.Memory(); n != 0 || m.Free() != m.Total() || fx.s.jobs.get(job) != nil {
		fx.t.Errorf("after the refusal: %d bytes reserved, %d of %d buffers free, job %d in the table: %v", n, m.Free(), m.Total(), job, fx.s.jobs.get(job) != nil)
	}
}
