package swtch

import (
	"fmt"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/handlers"
	"github.com/flare-net/flare/wire"
)

// shapeJoin is a join of world ranks with any shape.
func shapeJoin(job uint32, rank, world int, dt wire.DType, elements uint64, pe uint32) []byte {
	h := wire.Header{Job: job, Token: uint64(job), Child: uint16(rank), DType: dt, Op: wire.OpSum}
	return wire.AppendJoin(nil, &h, &wire.JoinBody{World: uint16(world), Algo: wire.AlgoSingle, Elements: elements, PacketElems: pe})
}

// replies decodes what the switch queued, by type: acks by job, and the
// errors' codes and texts.
type replies struct {
	acks   map[uint32]int
	errors []wire.ErrorBody
	to     []netip.AddrPort
}

func (fx *jobFixture) replies() replies {
	r := replies{acks: map[uint32]int{}}
	for _, p := range fx.sent() {
		switch p.hdr.Type {
		case wire.TypeJoinAck:
			r.acks[p.hdr.Job]++
		case wire.TypeError:
			var e wire.ErrorBody
			if err := e.Unmarshal(p.payload); err != nil {
				fx.t.Fatal(err)
			}
			r.errors = append(r.errors, e)
		}
		r.to = append(r.to, p.to)
	}
	return r
}

// sent drains what the switch queued and decodes each packet (drainSent).
func (fx *jobFixture) sent() []sentPacket { return drainSent(fx.t, fx.s) }

// acks drains what the switch queued, which must be join-acks, and
// decodes their bodies.
func (fx *jobFixture) acks() []wire.JoinAckBody {
	fx.t.Helper()
	var acks []wire.JoinAckBody
	for _, p := range fx.sent() {
		var a wire.JoinAckBody
		if p.hdr.Type != wire.TypeJoinAck || a.Unmarshal(p.payload) != nil {
			fx.t.Fatalf("the switch sent %v %v %q, want join-acks", p.hdr.Type, p.code, p.text)
		}
		acks = append(acks, a)
	}
	return acks
}

// TestHugeShapesRefused checks that a join whose job would hold more host
// memory than the switch allows is refused with the numbers before
// anything is allocated (one 64-byte join used to make the switch
// allocate 64 GiB of stored results and die), and that shapes whose
// counts would overflow a field are refused by name.
func TestHugeShapesRefused(t *testing.T) {
	for _, tc := range []struct {
		name        string
		dt          wire.DType
		elements    uint64
		pe          uint32
		code        wire.ErrorCode
		want        []string
		reason      string
		maxHeapGrow uint64
	}{
		{"results", wire.Float64, maxElements, 0, wire.CodeRefusedMemory,
			[]string{"job 9 needs " + map[bool]string{true: "64 GiB", false: "2 GiB"}[maxElements == 1<<32] + " of result storage", "the switch allows 1 GiB for all jobs (Config.MaxMemory)"}, refusalHostMemory, 1 << 20},
		{"block-table", wire.Float64, 1 << 26, 1, wire.CodeRefusedMemory,
			[]string{"job 9 needs " + sizeText(denseTable(wire.Float64, 1<<26, 1).Blocks) + " of block table", "the switch allows 1 GiB"}, refusalHostMemory, 1 << 20},
		{"block-count", wire.Int8, 1 << 32, 1, wire.CodeBadRequest,
			[]string{"4294967296 blocks", "block count hold at most 4294967295"}, refusalOverflow, 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.elements > maxElements {
				t.Skipf("%d elements are over this platform's bound of %d: the shape cannot reach the check", tc.elements, maxElements)
			}
			fx := newJobFixture(t, func(c *Config) { c.MaxMemory = 1 << 30 })
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			fx.deliver(fzRank0, shapeJoin(9, 0, 1, tc.dt, tc.elements, tc.pe))
			runtime.ReadMemStats(&after)
			r := fx.replies()
			if len(r.errors) != 1 || r.errors[0].Code != tc.code {
				t.Fatalf("the join got %d errors (%v) and %d acks, want one %v", len(r.errors), r.errors, len(r.acks), tc.code)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.errors[0].Message(), w) {
					t.Errorf("refusal %q does not say %q", r.errors[0].Message(), w)
				}
			}
			if n := fx.s.refusals.get(tc.reason); n != 1 {
				t.Errorf("refusals %q = %d, want 1", tc.reason, n)
			}
			if grow := after.TotalAlloc - before.TotalAlloc; grow > tc.maxHeapGrow {
				t.Errorf("refusing the join allocated %d bytes", grow)
			}
			waitTeardowns(t, fx.s) // the refused job's teardown
			if n := fx.s.budget.reserved.Load(); n != 0 || fx.s.jobs.get(9) != nil {
				t.Errorf("after the refusal: %d bytes reserved, job in table %v", n, fx.s.jobs.get(9) != nil)
			}
		})
	}
}

// An admitted job is charged to the memory budget what its handler's
// formula gives for the quota it was granted, plus its member tables, and
// nothing more: the budget holds exactly that while the job runs.
func TestAdmissionCharge(t *testing.T) {
	fx := newJobFixture(t, nil)
	fx.deliver(fzRank0, testJoin(fzJob, fzToken, 0, 2, 0))
	fx.deliver(fzRank1, testJoin(fzJob, fzToken, 1, 2, 0))
	fx.waitAdmitted(fzJob)
	j := fx.s.jobs.get(fzJob)
	cfg := j.handler.(denseJob).Config()
	want := jobFootprint{Footprint: cfg.Footprint(j.quota.Limit()), Members: 2 * memberBytes}.total()
	if j.charge != want || fx.s.budget.reserved.Load() != want {
		t.Errorf("the job is charged %d bytes, the budget holds %d; want the handler's footprint and two members' tables, %d", j.charge, fx.s.budget.reserved.Load(), want)
	}
}

// A bounded-time job that leaves the design to the switch runs the
// single-buffer design, whose one buffer is the partial aggregate the
// deadline releases, whatever its size would choose otherwise (the tree
// design for a vector this small).
func TestAdmissionBoundedSingle(t *testing.T) {
	fx := newJobFixture(t, nil)
	h := wire.Header{Job: fzJob, Token: fzToken, DType: wire.Float32, Op: wire.OpSum}
	fx.deliver(fzRank0, wire.AppendJoin(nil, &h, &wire.JoinBody{World: 1, Options: wire.OptBounded, DeadlineMillis: 5, Elements: fzElements}))
	acks := fx.acks()
	if len(acks) != 1 {
		t.Fatalf("%d join-acks, want one", len(acks))
	}
	if ack := acks[0]; ack.Algo != wire.AlgoSingle || ack.Buffers != 0 {
		t.Errorf("a bounded job of %d elements runs %v with %d buffers, want single", fzElements, ack.Algo, ack.Buffers)
	}
}

// TestRefusalNamesSetting checks that a refusal names the limit's
// setting as Config.SettingName spells it (the daemon's flag), and as the
// Config field without it (TestHugeShapesRefused).
func TestRefusalNamesSetting(t *testing.T) {
	fx := newJobFixture(t, func(c *Config) {
		c.MaxMemory = 1 << 30
		c.SettingName = func(field string) string {
			if field == "MaxMemory" {
				return "--max-memory"
			}
			return ""
		}
	})
	fx.deliver(fzRank0, shapeJoin(9, 0, 1, wire.Float64, maxElements, 0))
	r := fx.replies()
	if len(r.errors) != 1 {
		t.Fatalf("the join got %d errors (%v), want one", len(r.errors), r.errors)
	}
	for _, w := range []string{"for all jobs (--max-memory)", "or a larger --max-memory"} {
		if msg := r.errors[0].Message(); !strings.Contains(msg, w) {
			t.Errorf("refusal %q does not say %q", msg, w)
		}
	}
	waitTeardowns(t, fx.s)
}

// TestBudgetAccounting checks that admitted jobs reserve their footprint
// against the budget, that a job that does not fit the rest is refused
// while one that does is admitted, and that everything comes back when
// the jobs end.
func TestBudgetAccounting(t *testing.T) {
	fx := newJobFixture(t, func(c *Config) { c.MaxMemory, c.HPU.L1Bytes = 100<<20, 1<<20 })
	s := fx.s
	fx.deliver(fzRank0, shapeJoin(1, 0, 1, wire.Int8, 20<<20, 0)) // 40 MiB of results, 18 MiB of blocks of 64
	if r := fx.replies(); r.acks[1] != 1 {
		t.Fatalf("job 1 was not admitted: %v", r.errors)
	}
	used := s.budget.reserved.Load()
	if f := denseTable(wire.Int8, 20<<20, 64); used < f.Results+f.Blocks || used > f.Results+f.Blocks+1<<20 {
		want := f.Results + f.Blocks
		t.Errorf("job 1 reserved %d bytes, want its results and block table, %d, and a little", used, want)
	}
	fx.deliver(fzRank1, shapeJoin(2, 0, 1, wire.Int8, 20<<20, 0))
	r := fx.replies()
	if len(r.errors) != 1 || !strings.Contains(r.errors[0].Message(), "retry when they end") {
		t.Fatalf("job 2 (as large, %d bytes free) got %v, want a refusal for now", s.budget.free(), r.errors)
	}
	fx.deliver(fzRank1, shapeJoin(3, 0, 1, wire.Int8, 1<<20, 0))
	if r := fx.replies(); r.acks[3] != 1 {
		t.Fatalf("job 3 (2 MiB) was not admitted: %v", r.errors)
	}
	fx.end(1)
	fx.end(3)
	waitTeardowns(t, s)
	if n := s.budget.reserved.Load(); n != 0 {
		t.Errorf("%d bytes still reserved after every job ended", n)
	}
}

// TestAdmissionOffTheReader checks that building a large job's handler
// does not hold the reader: while it is being built (its turn held here),
// another job joins, is admitted, and its packets are accepted and run;
// the large job is acked once its handler is ready.
func TestAdmissionOffTheReader(t *testing.T) {
	fx := newJobFixture(t, func(c *Config) { c.MaxMemory, c.HPU.L1Bytes = 256<<20, 1<<20 })
	s := fx.s
	s.bigBuilds <- struct{}{} // a big build in progress: the next waits
	big := netip.MustParseAddrPort("10.0.2.1:7000")
	ip := s.slot()
	pkt := shapeJoin(1, 0, 1, wire.Int8, 64<<20, 0) // 128 MiB of results
	d := conn.Datagram{Buf: ip.buf, N: copy(ip.buf, pkt), Addr: big}
	start := time.Now()
	s.handle(&d, ip, start.UnixNano())
	s.readerIn[ip.rd].tally.flush() // as the reader does before it submits
	held := time.Since(start)
	s.inFree[ip.rd].put(ip)
	t.Logf("the join of a job of 128 MiB held the reader %v", held)
	if j := s.jobs.get(1); j == nil || !j.building {
		t.Fatal("the large job is not being built")
	}

	fx.noWait = true // the large job's build waits for its turn
	fx.deliver(fzRank0, testJoin(2, 2, 0, 1, 0))
	fx.waitAdmitted(2)
	for len(fx.s.outs[0]) == 0 { // the ack follows the admission
		runtime.Gosched()
	}
	if r := fx.replies(); r.acks[2] != 1 || r.acks[1] != 0 {
		t.Fatalf("while the large job builds: acks %v, want job 2's alone", r.acks)
	}
	p := fx.deliver(fzRank0, testData(2, 2, 0, 1, 0, 0))
	if p == nil {
		t.Fatal("job 2's data was not accepted while job 1 builds")
	}
	fx.run(p)
	if n := len(fx.drain()); n != 1 {
		t.Errorf("job 2's block sent %d results, want 1", n)
	}

	<-s.bigBuilds
	s.settle()
	fx.noWait = false
	if r := fx.replies(); r.acks[1] != 1 {
		t.Errorf("the large job was not acked once built: %v", r.acks)
	}
	// A build whose job ended meanwhile frees what it reserved, and is
	// never acked. (Job 1 ends first: the budget has room for one of them.)
	fx.end(1)
	waitTeardowns(t, s)
	s.bigBuilds <- struct{}{}
	fx.noWait = true
	fx.deliver(big, shapeJoin(3, 0, 1, wire.Int8, 64<<20, 0))
	if j := s.jobs.get(3); j == nil || !j.building {
		t.Fatalf("the second large job is not being built: %v", fx.replies().errors)
	}
	fx.end(3)
	<-s.bigBuilds
	s.settle()
	fx.end(2)
	waitTeardowns(t, s)
	if n, m := s.budget.reserved.Load(), s.unit.Memory(); n != 0 || m.Free() != m.Total() || len(fx.replies().acks) != 0 {
		t.Errorf("after the jobs ended: %d bytes reserved, %d of %d buffers free, acks %v", n, m.Free(), m.Total(), fx.replies().acks)
	}
}

// TestHalfJoinedFlood reproduces 4,000 half-joined jobs (world 1024, only
// rank 0 joins, all from one address) filling the job table, so that a
// normal job was refused too-many-jobs until they idled out: pending jobs
// are held to their own limits, and a normal job, from another address or
// from the flooder's own, is admitted at once.
func TestHalfJoinedFlood(t *testing.T) {
	fx := newJobFixture(t, func(c *Config) { c.JoinRate = 1e6 })
	s := fx.s
	flooder := netip.MustParseAddrPort("10.0.9.9:4000")
	for i := range 4000 {
		fx.deliver(flooder, shapeJoin(uint32(1000+i), 0, 1024, wire.Float32, 1<<20, 0))
	}
	if r := fx.replies(); len(r.errors) != 0 {
		t.Fatalf("the flood's joins were answered with %d errors, the first %q", len(r.errors), r.errors[0].Message())
	}
	if n := s.pending.order.Len(); n != s.cfg.MaxPendingPerSource {
		t.Errorf("%d pending jobs after the flood, want the per-source limit %d", n, s.cfg.MaxPendingPerSource)
	}
	if n := s.evictions.get(evictSourceLimit); n != 4000-int64(s.cfg.MaxPendingPerSource) {
		t.Errorf("%d evictions for the source limit, want %d", n, 4000-s.cfg.MaxPendingPerSource)
	}
	for i, from := range []netip.AddrPort{fzRank0, netip.AddrPortFrom(flooder.Addr(), 4001)} {
		id := uint32(10 + i)
		fx.deliver(from, testJoin(id, uint64(id), 0, 2, 0))
		fx.deliver(fzRank1, testJoin(id, uint64(id), 1, 2, 0))
		if r := fx.replies(); r.acks[id] != 2 {
			t.Errorf("a normal job from %v after the flood: %d acks (errors %v), want 2", from, r.acks[id], r.errors)
		}
	}
	// The evicted jobs' memory comes back in their teardowns, which run
	// in goroutines of their own: what is still reserved once they are
	// done is what the switch holds.
	s.settle()
	waitTeardowns(t, s)
	if n := s.budget.reserved.Load(); n > int64(s.cfg.MaxPendingPerSource)*(s.pendingJobCharge()+pendingMemberBytes)+4<<20 {
		t.Errorf("%d bytes reserved: more than the pending limit's worth and the two jobs", n)
	}
}

// TestPendingLimits checks the other limits of pending jobs: the total
// (MaxPending) and a full table evict the oldest pending job, a table
// full of admitted jobs refuses, and the join timeout ends a pending job.
func TestPendingLimits(t *testing.T) {
	fx := newJobFixture(t, func(c *Config) { c.MaxJobs, c.MaxPending, c.MaxPendingPerSource, c.JoinRate = 4, 3, 3, 1e6 })
	s := fx.s
	src := func(i int) netip.AddrPort { return netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, 0, byte(i)}), 1) }
	for i := range 4 { // from 4 sources: the 4th evicts the 1st (MaxPending 3)
		fx.deliver(src(i), testJoin(uint32(i+1), uint64(i+1), 0, 2, 0))
	}
	if s.jobs.get(1) != nil || s.pending.order.Len() != 3 || s.evictions.get(evictPendingCap) != 1 {
		t.Errorf("MaxPending 3: job 1 still there %v, %d pending, %d evictions", s.jobs.get(1) != nil, s.pending.order.Len(), s.evictions.get(evictPendingCap))
	}
	// Admitted jobs fill the table: 2, 3 and 4 complete, a 5th is admitted
	// (the table has room), a 6th finds it full of admitted jobs.
	for i := 1; i < 4; i++ {
		fx.deliver(src(9), testJoin(uint32(i+1), uint64(i+1), 1, 2, 0))
	}
	fx.deliver(src(9), testJoin(5, 5, 0, 1, 0))
	fx.deliver(src(9), testJoin(6, 6, 0, 1, 0))
	r := fx.replies()
	if r.acks[5] != 1 || len(r.errors) != 1 || r.errors[0].Code != wire.CodeTooManyJobs {
		t.Fatalf("with 4 admitted of --max-jobs 4: acks %v, errors %v; want job 5 acked and job 6 refused too-many-jobs", r.acks, r.errors)
	}
	fx.end(5)
	fx.deliver(src(7), testJoin(7, 7, 0, 2, 0)) // pending, in the last slot
	fx.deliver(src(8), testJoin(8, 8, 0, 2, 0)) // the table is full: job 7 makes room
	if s.jobs.get(7) != nil || s.jobs.get(8) == nil || s.evictions.get(evictTableFull) != 1 {
		t.Errorf("a full table with a pending job: job 7 there %v, job 8 there %v, %d table-full evictions", s.jobs.get(7) != nil, s.jobs.get(8) != nil, s.evictions.get(evictTableFull))
	}
	s.reap(time.Now().Add(s.cfg.JoinTimeout + time.Second))
	if s.jobs.get(8) != nil || s.pending.order.Len() != 0 || s.evictions.get(evictJoinTimeout) != 1 {
		t.Errorf("after the join timeout: job 8 there %v, %d pending", s.jobs.get(8) != nil, s.pending.order.Len())
	}
	for id := uint32(2); id <= 4; id++ {
		if s.jobs.get(id) == nil {
			t.Errorf("admitted job %d ended with the pending ones", id)
		}
	}
}

// An admitted job that no packet has touched for JobIdle ends and gives
// back what it reserved; one touched within it stays.
func TestIdleJobEnds(t *testing.T) {
	fx := newJobFixture(t, nil)
	s := fx.s
	fx.deliver(fzRank0, testJoin(5, 5, 0, 1, 0))
	fx.waitAdmitted(5)
	start := time.Now()
	s.reap(start.Add(s.cfg.JobIdle / 2))
	if s.jobs.get(5) == nil {
		t.Fatal("the job ended at half its idle time")
	}
	s.reap(start.Add(s.cfg.JobIdle + time.Second))
	waitTeardowns(t, s)
	if s.jobs.get(5) != nil || s.budget.reserved.Load() != 0 {
		t.Fatalf("after JobIdle with no packet: the job is there %v, %d bytes reserved", s.jobs.get(5) != nil, s.budget.reserved.Load())
	}
}

// Joins beyond JoinRate a second are refused with too-many-jobs, naming
// the setting, and leave nothing behind.
func TestJoinRateLimited(t *testing.T) {
	fx := newJobFixture(t, func(c *Config) { c.JoinRate = 3 })
	for i := range 10 {
		fx.deliver(netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 3, 0, byte(i)}), 1), testJoin(uint32(100+i), 1, 0, 2, 0))
	}
	r := fx.replies()
	limited := 0
	for _, e := range r.errors {
		if e.Code == wire.CodeTooManyJobs && strings.Contains(e.Message(), "too many joins per second (Config.JoinRate 3)") {
			limited++
		}
	}
	if limited < 5 || fx.s.refusals.get(refusalJoinRate) != int64(limited) || fx.s.pending.order.Len() != 10-limited {
		t.Fatalf("10 joins at once with JoinRate 3: %d refused for the rate (%v), %d pending; want 5 or more refused (3 allowed at once, 3 more a second), the rest pending",
			limited, r.errors, fx.s.pending.order.Len())
	}
}

// TestPendingCharges checks that the budget's charges for pending state
// bound what it really holds: a job's entry and each rank's.
func TestPendingCharges(t *testing.T) {
	fx := newJobFixture(t, func(c *Config) { c.JoinRate, c.MaxJobs, c.MaxPending, c.MaxPendingPerSource = 1e6, 300, 300, 300 })
	s := fx.s
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	const jobs, ranks = 200, 5000
	heap()
	h0 := heap()
	for i := range jobs {
		fx.deliver(netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 2, 0, byte(i)}), 1), testJoin(uint32(1000+i), 1, 0, 2, 0))
	}
	h1 := heap()
	for r := 1; r <= ranks; r++ {
		fx.deliver(netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 3, byte(r >> 8), byte(r)}), 1), shapeJoin(1, r, 60000, wire.Float32, 1000, 0))
	}
	h2 := heap()
	perJob, perRank := (int64(h1)-int64(h0))/jobs, (int64(h2)-int64(h1))/ranks
	charge := s.pendingJobCharge()
	t.Logf("pending state: %d bytes per job (charged %d), %d per rank (charged %d)", perJob, charge, perRank, pendingMemberBytes)
	if perJob > charge || perRank > pendingMemberBytes {
		t.Errorf("pending state holds %d bytes per job and %d per rank, more than its charges %d and %d", perJob, perRank, charge, pendingMemberBytes)
	}
	if want := int64(jobs+1)*charge + int64(jobs+ranks)*pendingMemberBytes; s.budget.reserved.Load() != want {
		t.Errorf("%d bytes reserved, want %d", s.budget.reserved.Load(), want)
	}
	runtime.KeepAlive(s)
}

// A pending job, and a rank's pending join, are refused for memory when
// the budget has less free than their charge: the join is answered
// refused-memory naming what it needed and what is free, nothing is
// reserved for it, and the job already pending keeps its ranks.
func TestPendingRefusedForMemory(t *testing.T) {
	fx := newJobFixture(t, func(c *Config) { c.JoinRate, c.MaxMemory = 1e6, 1<<20 })
	s := fx.s
	charge := s.pendingJobCharge()
	s.budget.reserve(s.budget.free() - charge + 1) // room for all but one byte of a pending job
	held := s.budget.reserved.Load()
	fx.deliver(fzRank0, testJoin(7, 7, 0, 2, 0))
	r := fx.replies()
	want := fmt.Sprintf("job 7: a pending job needs %s of host memory; the switch allows 1 MiB for all jobs (Config.MaxMemory), %s of it free now",
		sizeText(charge), sizeText(charge-1))
	if len(r.errors) != 1 || r.errors[0].Code != wire.CodeRefusedMemory || r.errors[0].Message() != want || s.jobs.get(7) != nil ||
		s.budget.reserved.Load() != held {
		t.Fatalf("a pending job with %d bytes free of the %d it needs: errors %v, job there %v, %d reserved (was %d); want %q",
			charge-1, charge, r.errors, s.jobs.get(7) != nil, s.budget.reserved.Load(), held, want)
	}
	s.budget.release(held - (s.budget.limit - charge - pendingMemberBytes)) // room for the job and one rank
	fx.deliver(fzRank0, testJoin(7, 7, 0, 2, 0))
	held = s.budget.reserved.Load()
	fx.deliver(fzRank1, testJoin(7, 7, 1, 2, 0))
	r = fx.replies()
	want = fmt.Sprintf("job 7: a pending join needs %s of host memory; the switch allows 1 MiB for all jobs (Config.MaxMemory), 0 B of it free now",
		sizeText(pendingMemberBytes))
	if held != s.budget.limit || len(r.errors) != 1 || r.errors[0].Code != wire.CodeRefusedMemory || r.errors[0].Message() != want ||
		s.budget.reserved.Load() != held {
		t.Fatalf("rank 1's join with nothing free: errors %v, %d reserved (was %d of %d); want %q", r.errors, s.budget.reserved.Load(), held, s.budget.limit, want)
	}
	if j := s.jobs.get(7); j == nil || len(j.pend) != 1 {
		t.Errorf("the pending job after its rank's refusal: %v, want it waiting with rank 0", j)
	}
}

// TestAdmissionMetrics checks the budget, pending and refusal series.
func TestAdmissionMetrics(t *testing.T) {
	if maxElements < 1<<32 {
		t.Skipf("a job holds at most %d elements here: no block count can overflow", maxElements)
	}
	fx := newJobFixture(t, func(c *Config) { c.MaxMemory = 32 << 20 })
	fx.deliver(fzRank0, testJoin(1, 1, 0, 2, 0))                         // pending
	fx.deliver(fzRank0, shapeJoin(2, 0, 1, wire.Float64, 1<<30, 0))      // refused: host memory
	fx.deliver(fzRank0, shapeJoin(3, 0, 1, wire.Int8, 1<<32, 1))         // refused: field overflow
	fx.deliver(fzRank1, shapeJoin(4, 0, 1, wire.Float32, fzElements, 0)) // admitted
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(fx.s))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += fmt.Sprintf(",%s=%s", l.GetName(), l.GetValue())
			}
			switch {
			case m.GetGauge() != nil:
				got[name] = m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				got[name] = m.GetCounter().GetValue()
			}
		}
	}
	for name, want := range map[string]float64{
		"flare_memory_budget_bytes":                       32 << 20,
		"flare_jobs_pending":                              1,
		"flare_jobs_active":                               2,
		"flare_join_refusals_total,reason=host-memory":    1,
		"flare_join_refusals_total,reason=field-overflow": 1,
		"flare_join_refusals_total,reason=too-many-jobs":  0,
		"flare_pending_evictions_total,why=join-timeout":  0,
		"flare_pending_evictions_total,why=source-limit":  0,
		"flare_io_errors_total,dir=rx,errno=ENOBUFS":      0,
		"flare_io_errors_total,dir=tx,errno=ECONNREFUSED": 0,
	} {
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", name, v, ok, want)
		}
	}
	if v := got["flare_memory_reserved_bytes"]; v < pendingJobBytes+pendingMemberBytes || v > 1<<20 {
		t.Errorf("flare_memory_reserved_bytes = %v, want the pending job's and the small job's few KiB", v)
	}
}

// denseTable is the footprint of a single-buffer job's stored results and
// block table, as admission computes it (handlers.DenseConfig.Footprint).
func denseTable(dt wire.DType, elements, pe int) handlers.Footprint {
	c := handlers.DenseConfig{Algo: wire.AlgoSingle, Children: 1, DType: dt, Elements: elements, PacketElems: pe, KeepResults: true}
	return c.Footprint(0)
}
