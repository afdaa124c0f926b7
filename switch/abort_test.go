package swtch_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/hostlib"
	"github.com/flare-net/flare/internal/inproctest"
	swtch "github.com/flare-net/flare/switch"
	"github.com/flare-net/flare/wire"
)

// abortJob is the job id the abort tests use, and join again after the
// abort.
const abortJob = 11

// newAbortSwitch runs a switch on loopback with its admin port, whose L1
// holds 512 buffers: a job of abortElements takes most of them, so a
// quota that was not given back would shrink the next job's window.
func newAbortSwitch(t *testing.T) *swtch.Switch {
	t.Helper()
	cfg := swtch.Config{Admin: "127.0.0.1:0"}
	cfg.HPU.Clusters, cfg.HPU.CoresPerCluster, cfg.HPU.L1Bytes = 2, 2, 256<<10
	return startSwitch(t, cfg)
}

// abortElements is the vector of the abort tests: 256 blocks of 256
// float32, so a call does not complete before a rank that holds back.
const abortElements = 1 << 16

// joinAbortRanks joins world ranks of abortJob with the given call
// timeout.
func joinAbortRanks(t *testing.T, sw *swtch.Switch, world int, timeout time.Duration) []*hostlib.Session {
	t.Helper()
	return inproctest.JoinAll(t, world, func(r int) hostlib.Options {
		return hostlib.Options{Switch: sw.Addr().String(), Job: abortJob, Token: 0xab0e7, Rank: r, World: world,
			DType: wire.Float32, Op: wire.OpSum, Elements: abortElements, Timeout: timeout}
	})
}

// verifiedAllReduce runs one call on every session, rank r contributing
// r+1 everywhere plus the element's index, and checks every result.
func verifiedAllReduce(t *testing.T, ss []*hostlib.Session) {
	t.Helper()
	bufs := make([][]float32, len(ss))
	for r := range bufs {
		bufs[r] = make([]float32, abortElements)
		for i := range bufs[r] {
			bufs[r][i] = float32(r + 1 + i%1000)
		}
	}
	allreduceAll(t, ss, bufs)
	n := len(ss)
	for r, b := range bufs {
		for i, v := range b {
			if want := float32(n*(n+1)/2 + n*(i%1000)); v != want {
				t.Fatalf("rank %d element %d = %v, want %v", r, i, v, want)
			}
		}
	}
}

// metric scrapes the switch's admin port for the value of name (with its
// labels, if it has any: scrapeAll's key).
func metric(t *testing.T, sw *swtch.Switch, name string) float64 {
	t.Helper()
	v, ok := scrapeAll(t, sw)[name]
	if !ok {
		t.Fatalf("metric %s not exported", name)
	}
	return v
}

// waitIdle waits (up to limit) for the switch to hold no job and no
// buffer, and returns how long it took.
func waitIdle(t *testing.T, sw *swtch.Switch, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for metric(t, sw, "flare_buffers_in_use") != 0 || metric(t, sw, "flare_jobs_active") != 0 {
		if time.Since(start) > limit {
			t.Fatalf("after %v: %v buffers in use, %v jobs; want the job's buffers back within %v", time.Since(start),
				metric(t, sw, "flare_buffers_in_use"), metric(t, sw, "flare_jobs_active"), limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start)
}

// callResult is one rank's call: its error and when it returned.
type callResult struct {
	err error
	at  time.Time
}

// startCalls starts a call on each of ranks, each with its context, and
// returns a channel per rank that gets the result.
func startCalls(ss []*hostlib.Session, ranks []int, ctxs map[int]context.Context) map[int]chan callResult {
	out := make(map[int]chan callResult)
	for _, r := range ranks {
		ch := make(chan callResult, 1)
		out[r] = ch
		ctx := ctxs[r]
		if ctx == nil {
			ctx = context.Background()
		}
		go func() {
			err := hostlib.AllReduce(ctx, ss[r], make([]float32, abortElements))
			ch <- callResult{err, time.Now()}
		}()
	}
	return out
}

// waitSending waits until each of ranks has sent packets of its call.
func waitSending(t *testing.T, ss []*hostlib.Session, ranks []int, before []uint64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, r := range ranks {
		for ss[r].Stats().PacketsSent <= before[r] {
			if time.Now().After(deadline) {
				t.Fatalf("rank %d did not start its call", r)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// TestAbortCancelledCall: one rank's context is cancelled mid-call; the
// other ranks fail within about a round trip with an *AbortedError that
// names it, long before their 30 s timeout; the switch frees the job's
// buffers at once; and the job id joins and runs again, verified.
func TestAbortCancelledCall(t *testing.T) {
	sw := newAbortSwitch(t)
	ss := joinAbortRanks(t, sw, 4, 30*time.Second)
	window := ss[0].Window()
	verifiedAllReduce(t, ss)

	// Ranks 1, 2, 3 call; rank 0 holds back, so no block completes.
	before := make([]uint64, 4)
	for r, s := range ss {
		before[r] = s.Stats().PacketsSent
	}
	ctx1, cancel1 := context.WithCancel(context.Background())
	defer cancel1()
	calls := startCalls(ss, []int{1, 2, 3}, map[int]context.Context{1: ctx1})
	waitSending(t, ss, []int{1, 2, 3}, before)
	cancelled := time.Now()
	cancel1()
	if res := <-calls[1]; !errors.Is(res.err, context.Canceled) {
		t.Fatalf("rank 1: %v; want its cancellation", res.err)
	}
	for _, r := range []int{2, 3} {
		select {
		case res := <-calls[r]:
			took := res.at.Sub(cancelled)
			checkAborted(t, r, res.err, 1, "rank 1: allreduce generation 2 cancelled")
			t.Logf("rank %d failed %v after rank 1's cancel: %v", r, took.Round(10*time.Microsecond), res.err)
		case <-time.After(10 * time.Second):
			t.Fatalf("rank %d still in its call 10 s after rank 1 aborted (its timeout is 30 s)", r)
		}
	}
	// Rank 0 was not in the call: its next one fails at once too.
	start := time.Now()
	err := hostlib.AllReduce(context.Background(), ss[0], make([]float32, abortElements))
	checkAborted(t, 0, err, 1, "cancelled")
	t.Logf("rank 0's next call failed after %v", time.Since(start).Round(10*time.Microsecond))
	if st := ss[1].Stats(); st.Aborts != 1 {
		t.Errorf("rank 1 aborted %d times; want 1", st.Aborts)
	}
	t.Logf("switch idle %v after the cancel", (waitIdle(t, sw, 2*time.Second) + time.Since(cancelled)).Round(time.Millisecond))

	again := joinAbortRanks(t, sw, 4, 30*time.Second)
	if w := again[0].Window(); w != window {
		t.Errorf("job joined again with window %d, the first time %d: the aborted job's quota is not back", w, window)
	}
	verifiedAllReduce(t, again)
}

// TestAbortSilentRank: one rank stops sending, as a host killed with -9
// does. The first survivor to time out (rank 0, which started its call a
// second before the others) aborts for all, naming the silent rank; every
// survivor fails within its timeout plus a second with an error naming
// it, the late ones with rank 0's abort; the job's buffers are back within
// a second; and the job id joins and runs again, verified.
func TestAbortSilentRank(t *testing.T) {
	sw := newAbortSwitch(t)
	const timeout, stagger, silent = 2 * time.Second, time.Second, 3
	ss := joinAbortRanks(t, sw, 4, timeout)
	window := ss[0].Window()
	verifiedAllReduce(t, ss)

	starts := map[int]time.Time{0: time.Now()}
	calls := startCalls(ss, []int{0}, nil)
	time.Sleep(stagger)
	starts[1], starts[2] = time.Now(), time.Now()
	for r, ch := range startCalls(ss, []int{1, 2}, nil) {
		calls[r] = ch
	}
	var last time.Time
	for r := range 3 {
		select {
		case res := <-calls[r]:
			took := res.at.Sub(starts[r])
			if res.at.After(last) {
				last = res.at
			}
			var te *hostlib.TimeoutError
			if r == 0 {
				if !errors.As(res.err, &te) {
					t.Fatalf("rank 0: %v; want its timeout", res.err)
				}
			} else {
				checkAborted(t, r, res.err, 0, "timed out")
				t.Logf("rank %d failed %v after rank 0's timeout was due", r, res.at.Sub(starts[0].Add(timeout)).Round(10*time.Microsecond))
			}
			if msg := res.err.Error(); !strings.Contains(msg, fmt.Sprintf("for rank %d (", silent)) {
				t.Errorf("rank %d's error does not name rank %d: %v", r, silent, msg)
			}
			if took > timeout+time.Second {
				t.Errorf("rank %d failed %v after its call started, more than its timeout %v plus 1 s", r, took, timeout)
			}
			t.Logf("rank %d failed %v after its call started: %v", r, took.Round(time.Millisecond), res.err)
		case <-time.After(timeout + 10*time.Second):
			t.Fatalf("rank %d still in its call %v after it started", r, timeout+10*time.Second)
		}
	}
	idle := waitIdle(t, sw, time.Second)
	t.Logf("the switch was idle %v after the last survivor failed", (idle + time.Since(last)).Round(time.Millisecond))

	again := joinAbortRanks(t, sw, 4, 30*time.Second)
	if w := again[0].Window(); w != window {
		t.Errorf("job joined again with window %d, the first time %d: the aborted job's quota is not back", w, window)
	}
	verifiedAllReduce(t, again)
}

// checkAborted checks that err is an *AbortedError by rank, whose reason
// says want.
func checkAborted(t *testing.T, r int, err error, rank int, want string) {
	t.Helper()
	var ae *hostlib.AbortedError
	if !errors.As(err, &ae) || !errors.Is(err, hostlib.ErrAborted) {
		t.Fatalf("rank %d: %v; want an *AbortedError", r, err)
	}
	if ae.Rank != rank || !strings.Contains(ae.Reason, want) || ae.Job != abortJob {
		t.Errorf("rank %d: %+v; want job %d aborted by rank %d, saying %q", r, ae, abortJob, rank, want)
	}
}

// TestAbortTree: in a tree of switches (a root, two leaves of two hosts),
// a host that cancels its call at one leaf ends the job on every switch,
// and the hosts of the other leaf fail with an *AbortedError that names it
// and the path the news took.
func TestAbortTree(t *testing.T) {
	leaves := startTree(t, 2, netip.Prefix{}).Leaves
	ss := inproctest.JoinAll(t, 4, func(r int) hostlib.Options {
		return hostlib.Options{Switch: leaves[r/2].Addr().String(), Job: 5, Token: 77, Rank: r % 2, World: 2,
			DType: wire.Float32, Op: wire.OpSum, Elements: 1 << 14, Timeout: 30 * time.Second}
	})
	// Hosts 0 and 1 (leaf 0) and 2 (leaf 1, its rank 0) call; host 3
	// holds back; host 2 cancels.
	var mu sync.Mutex
	errs := map[int]error{}
	ctx2, cancel2 := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	before := ss[2].Stats().PacketsSent
	for _, r := range []int{0, 1, 2} {
		ctx := context.Background()
		if r == 2 {
			ctx = ctx2
		}
		wg.Go(func() {
			err := hostlib.AllReduce(ctx, ss[r], make([]float32, 1<<14))
			mu.Lock()
			errs[r] = err
			mu.Unlock()
		})
	}
	waitSending(t, ss, []int{2}, []uint64{0, 0, before})
	time.Sleep(20 * time.Millisecond) // leaf 0's hosts are sending too
	cancelled := time.Now()
	cancel2()
	wg.Wait()
	t.Logf("every host failed %v after the cancel", time.Since(cancelled).Round(10*time.Microsecond))
	if !errors.Is(errs[2], context.Canceled) {
		t.Errorf("host 2: %v; want its cancellation", errs[2])
	}
	for _, r := range []int{0, 1} {
		checkTreeAborted(t, r, errs[r])
	}
	// Host 3, at the leaf of the host that aborted, hears it directly.
	err := hostlib.AllReduce(context.Background(), ss[3], make([]float32, 1<<14))
	var ae *hostlib.AbortedError
	if !errors.As(err, &ae) || ae.Rank != 0 || !strings.HasPrefix(ae.Reason, "rank 0: allreduce generation 1 cancelled") {
		t.Errorf("host 3: %v; want an *AbortedError by rank 0 of its leaf", err)
	}
}

// checkTreeAborted checks a leaf 0 host's error in TestAbortTree.
func checkTreeAborted(t *testing.T, r int, err error) {
	t.Helper()
	var ae *hostlib.AbortedError
	if !errors.As(err, &ae) {
		t.Fatalf("host %d: %v; want an *AbortedError", r, err)
	}
	if ae.Rank != 0 || !strings.Contains(ae.Reason, "parent switch") || !strings.Contains(ae.Reason, "child switch 1: rank 0: allreduce generation 1 cancelled") {
		t.Errorf("host %d: %+v; want rank 0 named, by way of the parent and child switch 1", r, ae)
	}
}

// rawHost is a member played by a bare socket, to send what hostlib never
// would and to see every answer.
type rawHost struct {
	t    *testing.T
	conn conn.Conn
	sw   netip.AddrPort
	msgs []conn.Datagram
}

func newRawHost(t *testing.T, sw *swtch.Switch) *rawHost {
	t.Helper()
	c, err := conn.ListenUDP("127.0.0.1:0", conn.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	h := &rawHost{t: t, conn: c, sw: sw.Addr(), msgs: make([]conn.Datagram, c.BatchSize())}
	for i := range h.msgs {
		h.msgs[i].Buf = make([]byte, conn.DefaultMaxDatagram)
	}
	return h
}

func (h *rawHost) send(pkt []byte) {
	h.t.Helper()
	if _, err := h.conn.WriteBatch([]conn.Datagram{{Buf: pkt, N: len(pkt), Addr: h.sw}}); err != nil {
		h.t.Fatal(err)
	}
}

// next returns the next packet the host receives, or fails after 5 s.
func (h *rawHost) next() (wire.Header, wire.ErrorBody) {
	h.t.Helper()
	type got struct {
		n   int
		err error
	}
	ch := make(chan got, 1)
	go func() { n, err := h.conn.ReadBatch(h.msgs[:1]); ch <- got{n, err} }()
	select {
	case g := <-ch:
		if g.err != nil {
			h.t.Fatal(g.err)
		}
	case <-time.After(5 * time.Second):
		h.t.Fatal("no answer from the switch in 5 s")
	}
	var hdr wire.Header
	var body wire.ErrorBody
	payload, err := hdr.Unmarshal(h.msgs[0].Buf[:h.msgs[0].N])
	if err != nil {
		h.t.Fatal(err)
	}
	if hdr.Type == wire.TypeError {
		if err := body.Unmarshal(payload); err != nil {
			h.t.Fatal(err)
		}
	}
	return hdr, body
}

// quiet checks that the host receives nothing for 100 ms.
func (h *rawHost) quiet() {
	h.t.Helper()
	ch := make(chan int, 1)
	go func() { n, _ := h.conn.ReadBatch(h.msgs[:1]); ch <- n }()
	select {
	case n := <-ch:
		if n > 0 {
			var hdr wire.Header
			hdr.Unmarshal(h.msgs[0].Buf[:h.msgs[0].N])
			h.t.Fatalf("unexpected %v packet", hdr.Type)
		}
	case <-time.After(100 * time.Millisecond):
		h.conn.Close() // ends the read; the host is done listening
	}
}

// TestAbortChecks: the switch ends a job only for an Abort with the job's
// token from the member's own address, counting the others; tells every
// other member twice; answers a member's later packet of the aborted job
// with the abort, and a stranger's with unknown-job.
func TestAbortChecks(t *testing.T) {
	sw := newAbortSwitch(t)
	const job, token = 21, 0x5ec
	m0, m1, stranger := newRawHost(t, sw), newRawHost(t, sw), newRawHost(t, sw)
	base := wire.Header{Job: job, Token: token, DType: wire.Float32, Op: wire.OpSum}
	body := wire.JoinBody{World: 2, Elements: 1024}
	for r, m := range []*rawHost{m0, m1} {
		h := base
		h.Child = uint16(r)
		m.send(wire.AppendJoin(nil, &h, &body))
	}
	for _, m := range []*rawHost{m0, m1} {
		if h, _ := m.next(); h.Type != wire.TypeJoinAck {
			t.Fatalf("join answered with %v", h.Type)
		}
	}
	abort := func(child uint16, tok uint64) []byte {
		h := base
		h.Child, h.Block, h.Token, h.Generation = child, uint32(child), tok, 3
		return wire.AppendAbort(nil, &h, wire.CodeTimeout, "allreduce generation 3 timed out")
	}
	notMember := metricLabeled(t, sw, "flare_dropped_packets_total", `reason="not-member"`)
	tokenDrops := metricLabeled(t, sw, "flare_dropped_packets_total", `reason="token"`)
	stranger.send(abort(0, token)) // a stranger naming rank 0
	m0.send(abort(0, token+1))     // rank 0, wrong token
	m0.send(abort(1, token))       // rank 0 naming rank 1
	deadline := time.Now().Add(5 * time.Second)
	for metricLabeled(t, sw, "flare_dropped_packets_total", `reason="not-member"`) < notMember+2 ||
		metricLabeled(t, sw, "flare_dropped_packets_total", `reason="token"`) < tokenDrops+1 {
		if time.Now().After(deadline) {
			t.Fatal("the bad aborts were not counted")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := metric(t, sw, "flare_jobs_active"); n != 1 {
		t.Fatalf("%v jobs after bad aborts; want the job alive", n)
	}

	m0.send(abort(0, token))
	for range 2 {
		h, e := m1.next()
		if h.Type != wire.TypeError || e.Code != wire.CodeAborted || h.Child != 0 || h.Job != job || h.Token != token ||
			e.Message() != "rank 0: allreduce generation 3 timed out" {
			t.Fatalf("rank 1 heard %v %v child %d %q; want the abort by rank 0", h.Type, e.Code, h.Child, e.Message())
		}
	}
	waitIdle(t, sw, time.Second)

	data := base
	data.Type, data.Generation, data.Block, data.Child, data.Count = wire.TypeData, 3, 2, 1, 4
	m1.send(wire.AppendPacket(nil, &data, make([]byte, 16)))
	if h, e := m1.next(); e.Code != wire.CodeAborted || h.Child != 0 || h.Block != 2 || !strings.HasPrefix(e.Message(), "rank 0: ") {
		t.Errorf("rank 1's packet after the abort answered with %v %q; want the abort", e.Code, e.Message())
	}
	stranger.send(wire.AppendPacket(nil, &data, make([]byte, 16)))
	if _, e := stranger.next(); e.Code != wire.CodeUnknownJob {
		t.Errorf("a stranger's packet of the aborted job answered with %v %q; want unknown-job", e.Code, e.Message())
	}
	m0.quiet() // the one that aborted is not told
}

// metricLabeled is metric for the sample of name with labels.
func metricLabeled(t *testing.T, sw *swtch.Switch, name, labels string) float64 {
	t.Helper()
	return metric(t, sw, name+"{"+labels+"}")
}

// TestAbortCancelledJoin: a rank whose Join is cancelled before the job is
// admitted aborts it, and the ranks already waiting in Join fail at once,
// not at their join timeout.
func TestAbortCancelledJoin(t *testing.T) {
	sw := newAbortSwitch(t)
	opts := func(r int) hostlib.Options {
		return hostlib.Options{Switch: sw.Addr().String(), Job: abortJob, Token: 0xab0e7, Rank: r, World: 3,
			DType: wire.Float32, Op: wire.OpSum, Elements: 1000, JoinTimeout: 30 * time.Second}
	}
	// Both joins have reached the switch: two datagrams are in.
	joined := func() bool {
		return metric(t, sw, "flare_jobs_active") == 1 && metric(t, sw, "flare_rx_packets_total") >= 2
	}
	start, ae, err := cancelOneJoin(t, opts, joined)
	if ae.Generation != 0 || !strings.Contains(err.Error(), "join: job 11 aborted by rank 1 (rank 1: join cancelled)") {
		t.Fatalf("rank 0's join: %v; want it aborted by rank 1", err)
	}
	t.Logf("rank 0's join failed %v after rank 1's was cancelled: %v", time.Since(start).Round(10*time.Microsecond), err)
	waitIdle(t, sw, time.Second)
}

// cancelOneJoin has rank 0 (opts(0)) wait in Join while rank 1's Join
// (opts(1)) is cancelled once both joins have reached the switch (joined,
// polled) and 250 ms more have passed: the joins repeat every 100 ms, so
// by then both ranks' have been handled unless rank 1's goroutine ran
// that late. It checks that rank 1's Join ends with the cancellation and
// rank 0's with rank 1's abort within 10 s (far inside its 30 s join
// timeout), and returns when rank 1 was cancelled, the abort in rank 0's
// error, and that error.
func cancelOneJoin(t *testing.T, opts func(r int) hostlib.Options, joined func() bool) (time.Time, *hostlib.AbortedError, error) {
	t.Helper()
	o0, o1 := opts(0), opts(1)
	waiting := make(chan error, 1)
	go func() {
		s, err := hostlib.Join(context.Background(), o0)
		if s != nil {
			s.Close()
		}
		waiting <- err
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cancelled := make(chan error, 1)
	go func() { _, err := hostlib.Join(ctx, o1); cancelled <- err }()
	for deadline := time.Now().Add(10 * time.Second); !joined(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("both joins not at the switch after 10 s")
		}
	}
	time.Sleep(250 * time.Millisecond)
	start := time.Now()
	cancel()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Fatalf("rank 1's join: %v; want its cancellation", err)
	}
	select {
	case err := <-waiting:
		var ae *hostlib.AbortedError
		if !errors.As(err, &ae) || ae.Rank != 1 {
			t.Fatalf("rank 0's join: %v; want it aborted by rank 1", err)
		}
		return start, ae, err
	case <-time.After(10 * time.Second):
		t.Fatal("rank 0 still joining 10 s after rank 1's join was cancelled (its join timeout is 30 s)")
	}
	return start, nil, nil
}

// crossingConn is a host's conn that holds back the first abort notice it
// reads until its session has sent one more datagram: the join resend
// that, on a real network, crosses the notice on its way.
type crossingConn struct {
	conn.Conn
	held, wrote chan struct{} // closed once a notice is held, and at the first write after that
	holdOnce    sync.Once
	wroteOnce   sync.Once
}

func (c *crossingConn) ReadBatch(msgs []conn.Datagram) (int, error) {
	n, err := c.Conn.ReadBatch(msgs)
	for i := range msgs[:n] {
		var h wire.Header
		payload, perr := h.Unmarshal(msgs[i].Buf[:msgs[i].N])
		var e wire.ErrorBody
		if perr == nil && h.Type == wire.TypeError && e.Unmarshal(payload) == nil && e.Code == wire.CodeAborted {
			held := false
			c.holdOnce.Do(func() { close(c.held); held = true })
			if held {
				<-c.wrote
			}
			break
		}
	}
	return n, err
}

func (c *crossingConn) WriteBatch(msgs []conn.Datagram) (int, error) {
	n, err := c.Conn.WriteBatch(msgs)
	select {
	case <-c.held:
		c.wroteOnce.Do(func() { close(c.wrote) })
	default:
	}
	return n, err
}

// TestAbortCrossingJoin: rank 0's join resend crosses the abort notice
// (its conn holds the notice back until the resend is out), so the switch
// takes the resend after the abort and holds a new pending job with rank 0
// in it. Rank 0's Join still fails with the abort, and the rank says
// goodbye, so that the job it re-created ends at once rather than at the
// switch's join timeout.
func TestAbortCrossingJoin(t *testing.T) {
	sw := newAbortSwitch(t)
	var cc *crossingConn
	opts := func(r int) hostlib.Options {
		o := hostlib.Options{Switch: sw.Addr().String(), Job: abortJob, Token: 0xab0e7, Rank: r, World: 3,
			DType: wire.Float32, Op: wire.OpSum, Elements: 1000, JoinTimeout: 30 * time.Second}
		if r == 0 {
			c, err := conn.ListenUDP("127.0.0.1:0", conn.Config{})
			if err != nil {
				t.Fatal(err)
			}
			cc = &crossingConn{Conn: c, held: make(chan struct{}), wrote: make(chan struct{})}
			o.Conn = cc
		}
		return o
	}
	joined := func() bool {
		return metric(t, sw, "flare_jobs_active") == 1 && metric(t, sw, "flare_rx_packets_total") >= 2
	}
	cancelOneJoin(t, opts, joined)
	select {
	case <-cc.wrote:
	default:
		t.Fatal("rank 0 sent nothing while its abort notice was held")
	}
	waitIdle(t, sw, time.Second)
}
