package swtch

import (
	"log/slog"
	"net/netip"
	"testing"
	"time"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/wire"
)

// jobFixture is a Switch built by New whose unit does not run: datagrams
// go through handle() as the reader hands them over, and accepted packets
// run on a virtual task in the test goroutine when the test says so.
type jobFixture struct {
	t      *testing.T
	s      *Switch
	vu     *hpu.VirtualUnit
	clock  int64
	noWait bool // deliver does not wait for the admissions a join starts
	// upSessions are the session ids of each job's joins up (up).
	upSessions map[uint32]uint32
}

func newJobFixture(t *testing.T, mut func(*Config)) *jobFixture {
	t.Helper()
	cfg := Config{Listen: "127.0.0.1:0", Admin: "off", PacketBytes: fzPacketBytes,
		HPU: hpu.Config{Clusters: 1, CoresPerCluster: 1, L1Bytes: hpu.MinL1Bytes}, Logger: slog.New(slog.DiscardHandler)}
	if mut != nil {
		mut(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &jobFixture{t: t, s: s, vu: newFixtureUnit(t, s)}
}

// deliver hands one datagram to handle. It returns the packet when handle
// accepted it for the processing unit (run it with run), else nil.
func (fx *jobFixture) deliver(from netip.AddrPort, pkt []byte) *inPacket {
	s := fx.s
	ip := s.slot()
	n := copy(ip.buf, pkt)
	d := conn.Datagram{Buf: ip.buf, N: n, Addr: from}
	fx.clock += int64(time.Millisecond)
	accepted := s.handle(&d, ip, fx.clock)
	s.readerIn[ip.rd].tally.flush() // as the reader does once a batch
	if accepted {
		return ip
	}
	s.inFree[ip.rd].put(ip)
	if !fx.noWait {
		s.settle() // a join that completed a job: its handler is built
	}
	return nil
}

// run executes an accepted packet's handler and gives it back, as a core.
func (fx *jobFixture) run(ip *inPacket) {
	runOnUnit(fx.t, fx.vu, &ip.pkt, fx.clock)
}

// drain returns what the switch queued for the writer.
func (fx *jobFixture) drain() []*outPacket {
	var out []*outPacket
	for {
		select {
		case op := <-fx.s.outs[0]:
			out = append(out, op)
		default:
			return out
		}
	}
}

// waitAdmitted waits until job id is admitted (its handler built).
func (fx *jobFixture) waitAdmitted(id uint32) {
	fx.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if j := fx.s.jobs.get(id); j != nil && j.live.Load() != nil {
			return
		}
	}
	fx.t.Fatalf("job %d was not admitted within 20 s", id)
}

// waitTeardowns waits for the teardowns of the jobs that ended on s, for
// at most 20 s: a teardown that waits for packets never given back fails
// the test rather than hanging the binary until its timeout.
func waitTeardowns(t *testing.T, s *Switch) {
	t.Helper()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the ended jobs' teardowns did not finish within 20 s: a job's packets in flight were never all given back")
	}
}

func (fx *jobFixture) end(id uint32) {
	s := fx.s
	s.jobs.mu.Lock()
	if j := s.jobs.get(id); j != nil {
		s.endLocked(j, "test")
	}
	s.jobs.mu.Unlock()
}

func testJoin(job uint32, token uint64, rank, world int, opts wire.JoinOptions) []byte {
	h := wire.Header{Job: job, Token: token, Child: uint16(rank), DType: wire.Float32, Op: wire.OpSum}
	b := wire.JoinBody{World: uint16(world), Algo: wire.AlgoSingle, Options: opts, Elements: fzElements, PacketElems: fzPacketElems}
	if opts&wire.OptBounded != 0 {
		b.DeadlineMillis = 5
	}
	return wire.AppendJoin(nil, &h, &b)
}

func testData(job uint32, token uint64, rank int, gen, block uint32, flags wire.Flags) []byte {
	n := fzPacketElems
	if int(block) == (fzElements-1)/fzPacketElems {
		n = fzElements - int(block)*fzPacketElems
	}
	h := wire.Header{Type: wire.TypeData, Flags: flags, Job: job, Token: token, Child: uint16(rank), Generation: gen, Block: block,
		DType: wire.Float32, Op: wire.OpSum, Count: uint32(n)}
	return wire.AppendPacket(nil, &h, make([]byte, 4*n))
}

// TestLookedUpPacketAfterTeardown reproduces the ordering bug of the
// packet path and the expirer: both looked the job up in the table and
// only then counted the packet in flight, so the teardown of a job ended
// in between (which waits for the count to reach 0, then closes the
// handler and releases its quota) could run first and the packet then ran
// on the closed handler, concurrently with Close (a double free of a
// buffer in Quota.Free). A packet of a job whose teardown has begun must
// be refused.
func TestLookedUpPacketAfterTeardown(t *testing.T) {
	const id, token = 7, 0x1234
	for _, tc := range []struct {
		name string
		opts wire.JoinOptions
		step func(fx *jobFixture, j *job) // what the reader or expirer does after its lookup
	}{
		{"reader", 0, func(fx *jobFixture, j *job) {
			ip := fx.s.slot()
			pkt := testData(id, token, 0, 1, 0, 0)
			d := conn.Datagram{Buf: ip.buf, N: copy(ip.buf, pkt), Addr: fzRank0}
			payload, err := ip.pkt.Hdr.Unmarshal(d.Buf[:d.N])
			if err != nil {
				fx.t.Fatal(err)
			}
			if fx.s.accept(j, &d, ip, payload, false, fx.clock) {
				fx.t.Errorf("a data packet looked up before its job ended was accepted after the teardown closed the handler")
				fx.run(ip)
			}
		}},
		{"expirer", wire.OptBounded, func(fx *jobFixture, j *job) {
			fx.s.tick(j, time.Now())
			if n := j.inflight(); n != 0 {
				fx.t.Errorf("the expirer submitted a deadline tick to a job after its teardown closed the handler (%d in flight)", n)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newJobFixture(t, nil)
			fx.deliver(fzRank0, testJoin(id, token, 0, 2, tc.opts))
			fx.deliver(fzRank1, testJoin(id, token, 1, 2, tc.opts))
			j := fx.s.jobs.get(id) // the lookup
			if j == nil || j.live.Load() == nil {
				t.Fatal("the job was not admitted")
			}
			fx.end(id)
			waitTeardowns(t, fx.s) // the teardown has closed the handler and released the quota
			tc.step(fx, j)
		})
	}
}

// A reader counts a run of one job's packets in flight once, at its first
// packet (jobTally.enter), and the rest at the flush before it submits.
// When the job ends in the middle of the run, the packets already taken
// keep its teardown waiting until they are done, and the run's later
// packets are refused, not counted.
func TestRunHoldsItsJob(t *testing.T) {
	const id, token = 7, 0x1234
	fx := newJobFixture(t, nil)
	fx.deliver(fzRank0, testJoin(id, token, 0, 2, 0))
	fx.deliver(fzRank1, testJoin(id, token, 1, 2, 0))
	j := fx.s.jobs.get(id)
	if j == nil || j.live.Load() == nil {
		t.Fatal("the job was not admitted")
	}
	accept := func(rank int, from netip.AddrPort) (*inPacket, bool) { // the reader's steps after the lookup
		ip := fx.s.slot()
		pkt := testData(id, token, rank, 1, 0, 0)
		d := conn.Datagram{Buf: ip.buf, N: copy(ip.buf, pkt), Addr: from}
		payload, err := ip.pkt.Hdr.Unmarshal(d.Buf[:d.N])
		if err != nil {
			t.Fatal(err)
		}
		return ip, fx.s.accept(j, &d, ip, payload, false, fx.clock)
	}
	first, ok := accept(0, fzRank0) // the run's first packet: not flushed yet
	if !ok {
		t.Fatal("the run's first packet was refused")
	}
	if n := j.inflight(); n != 1 {
		t.Fatalf("%d in flight after the run's first packet, want 1 (the run's hold)", n)
	}
	reserved := fx.s.budget.reserved.Load()
	fx.end(id) // its teardown waits for the count to reach 0
	if later, ok := accept(1, fzRank1); ok {
		t.Errorf("a packet of the run, looked up before its job ended, was accepted after")
		fx.s.inFree[later.rd].put(later)
	}
	fx.s.readerIn[first.rd].tally.flush()
	if n := j.inflight(); n != 1 {
		t.Fatalf("%d in flight after the flush, want 1: the first packet alone", n)
	}
	if n := fx.s.budget.reserved.Load(); n != reserved || n == 0 {
		t.Fatalf("the job's memory went back (%d of %d bytes reserved) while its packet was in flight", n, reserved)
	}
	fx.run(first) // runs on the open handler; done and Flush give its count back
	waitTeardowns(t, fx.s)
	if n := j.inflight(); n != 0 {
		t.Errorf("%d in flight after the packet ran", n)
	}
	if n := fx.s.budget.reserved.Load(); n != 0 {
		t.Errorf("%d bytes still reserved after the teardown", n)
	}
}

// TestEmitFindsThePacketsJob reproduces the egress finding the job by id:
// a packet of job 7 that runs after job 7 ended and another job 7 (same
// token) was created must send its results to the members of the job it
// came with, not to the new job's, and a resend (FlagRetransmit) must not
// dereference the new job's missing member list while it is pending.
func TestEmitFindsThePacketsJob(t *testing.T) {
	const id, token = 7, 0x1234
	other0 := netip.MustParseAddrPort("10.0.1.1:6000")
	other1 := netip.MustParseAddrPort("10.0.1.2:6000")
	fx := newJobFixture(t, nil)
	fx.deliver(fzRank0, testJoin(id, token, 0, 2, 0))
	fx.deliver(fzRank1, testJoin(id, token, 1, 2, 0))
	old := fx.s.jobs.get(id).live.Load()
	for rank, from := range []netip.AddrPort{fzRank0, fzRank1} {
		fx.run(fx.deliver(from, testData(id, token, rank, 1, 0, 0)))
	}
	fx.drain()
	resend := fx.deliver(fzRank0, testData(id, token, 0, 1, 0, wire.FlagRetransmit))
	b0 := fx.deliver(fzRank0, testData(id, token, 0, 1, 1, 0))
	b1 := fx.deliver(fzRank1, testData(id, token, 1, 1, 1, 0))
	if resend == nil || b0 == nil || b1 == nil {
		t.Fatal("the job's packets were not accepted")
	}
	fx.end(id)
	fx.deliver(other0, testJoin(id, token, 0, 2, 0)) // a new job 7, pending

	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("the old job's resend, run while a new job of its id is pending: panic: %v", r)
			}
		}()
		fx.run(resend)
	}()
	for _, op := range fx.drain() {
		if op.to != fzRank0 {
			t.Errorf("the old job's resend went to %v (multicast %v), want its rank 0 at %v", op.to, op.job != nil, fzRank0)
		}
	}

	fx.deliver(other1, testJoin(id, token, 1, 2, 0)) // the new job 7 is admitted
	fx.drain()                                       // its acks
	fx.run(b0)
	fx.run(b1)
	out := fx.drain()
	if len(out) != 1 {
		t.Fatalf("the old job's last block sent %d packets, want 1 result", len(out))
	}
	if out[0].job != old || out[0].to.IsValid() {
		addrs := []netip.AddrPort(nil)
		if out[0].job != nil {
			addrs = out[0].job.addrs
		}
		t.Errorf("the old job's result goes to %v (unicast %v), want its own members %v", addrs, out[0].to, old.addrs)
	}
	waitTeardowns(t, fx.s)
}
