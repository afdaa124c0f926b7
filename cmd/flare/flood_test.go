package main

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/flare-net/flare/hostlib"
	"github.com/flare-net/flare/internal/inproctest"
	"github.com/flare-net/flare/wire"
)

// TestFlood sends a million random and mutated datagrams at the daemon's
// data port while a job of 4 ranks runs allreduce after allreduce, and
// checks that the daemon keeps serving (every call completes, and its
// result is exact) and that every datagram of the flood is accounted for:
// counted under one reason in flare_dropped_packets_total, or answered
// with an Error (a join the switch refuses is answered, not dropped; a
// data packet of an unknown job is dropped, and a few times a second also
// answered, which the check leaves out).
//
// The accounting is exact. The daemon runs with --max-jobs 1 and the job
// lives through the whole flood, so no join of the flood can open a job
// of its own (a pending job takes a well-formed join silently, by design;
// an admitted one would make the flooder a member): each of its joins is
// refused with an Error or dropped. The flooder is never a member, so
// every other datagram, replays of the job's own packets included, is
// dropped. The sender is paced on the receive queues of the daemon's
// data-port sockets (one a reader) so that the kernel drops nothing; their
// drop counts in /proc/net/udp say whether it did, and if so the check
// becomes a bound.
//
// The job's ranks run in this process (hostlib), so that the job outlives
// the flood by construction; `flare allreduce --verify` then runs a fresh
// job on the same daemon after it.
func TestFlood(t *testing.T) {
	total := 1_000_000
	if testing.Short() || raceEnabled {
		total = 100_000 // the race-built daemon takes a third of the rate: a million would take 45 s
	}
	d := startDaemon(t, "--max-jobs", "1")
	sw, err := net.ResolveUDPAddr("udp4", d.data)
	if err != nil {
		t.Fatal(err)
	}
	const (
		job, token, world = 77, 0x466c617265, 4
		elems             = 256 << 10 // 1 MiB of float32 per rank: 1,024 packets per rank per call
	)
	ss := joinFloodJob(t, d.data, job, token, world, elems)

	fl, err := net.DialUDP("udp4", nil, sw)
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	_ = fl.SetReadBuffer(4 << 20)
	replies := readReplies(fl)

	before := scrape(t, d)
	flooding := make(chan struct{})
	var calls, callsInFlood atomic.Int64
	var g errgroup.Group
	g.Go(func() error { return allreduceLoop(ss, elems, flooding, &calls, &callsInFlood) })

	start := time.Now()
	gen := newFloodGen(rand.New(rand.NewPCG(1, 2)), job, token, world, elems)
	st := sendPaced(t, fl, d.data, gen, total)
	elapsed := time.Since(start)
	settle(t, d, replies, before, int64(st.sent))
	after := scrape(t, d)
	close(flooding)
	if err := g.Wait(); err != nil {
		t.Fatalf("the job's allreduce failed under the flood: %v", err)
	}
	var retrans uint64
	for _, s := range ss {
		retrans += s.Stats().Retransmits
	}

	drops, byReason := after.drops(before)
	refusals, unknown, byCode, bad := replies.counts()
	rx := after.get("flare_rx_packets_total") - before.get("flare_rx_packets_total")
	t.Logf("%d datagrams (%s) in %v (%.0f/s, %d bursts, burst %d..%d); daemon socket dropped %d, flooder socket %d",
		st.sent, gen.kinds(), elapsed.Round(time.Millisecond), float64(st.sent)/elapsed.Seconds(), st.bursts, st.minBurst, st.maxBurst, st.kernelDrops, st.replyDrops)
	t.Logf("daemon: rx +%.0f, dropped +%d (%s)", rx, drops, byReason)
	t.Logf("replies to the flooder: %s; the flood's joins are %d bytes", byCode, wire.HeaderLen+wire.JoinBodyLen)
	t.Logf("job: %d allreduce calls of %d MiB × %d ranks, exact, %d during the flood, %d retransmissions; %d refused-join log lines",
		calls.Load(), elems*4>>20, world, callsInFlood.Load(), retrans, strings.Count(d.log.String(), "join refused"))

	if bad != "" {
		t.Errorf("the flooder got a reply that is not an Error: %s", bad)
	}
	if n := after.get(`flare_dropped_packets_total{reason="send-error"}`) - before.get(`flare_dropped_packets_total{reason="send-error"}`); n != 0 {
		t.Errorf("%v replies failed to send", n)
	}
	// Each datagram is dropped, or it is a join and refused. An unknown
	// job's data packet is dropped and may also be answered, a few times a
	// second at most, so that the answers amplify nothing.
	if rate := float64(unknown) / elapsed.Seconds(); rate > 100 {
		t.Errorf("%d unknown-job answers in %v: %.0f/s is not rate-limited", unknown, elapsed, rate)
	}
	got, sent := drops+refusals, int64(st.sent)
	switch {
	case st.kernelDrops < 0: // no /proc/net/udp: what the kernel dropped is unknown
		if got > sent {
			t.Errorf("%d datagrams sent, %d counted as dropped + %d refused = %d", sent, drops, refusals, got)
		}
	case st.kernelDrops == 0 && st.replyDrops == 0:
		if got != sent {
			t.Errorf("%d datagrams delivered, %d counted as dropped + %d refused = %d", sent, drops, refusals, got)
		}
		if rx < float64(sent) {
			t.Errorf("rx grew by %.0f, less than the %d datagrams delivered", rx, sent)
		}
	default: // the kernel's drops may be the job's packets or the flood's
		if got > sent || got < sent-st.kernelDrops-st.replyDrops {
			t.Errorf("%d datagrams sent, %d lost in the kernel: %d dropped + %d refused = %d is out of bounds",
				sent, st.kernelDrops+st.replyDrops, drops, refusals, got)
		}
	}
	if callsInFlood.Load() < 2 {
		t.Errorf("only %d allreduce calls overlapped the flood", callsInFlood.Load())
	}

	// The daemon still admits and serves a new job.
	for _, s := range ss {
		s.Close()
	}
	waitMetric(t, d, "flare_jobs_active", 0)
	if _, err := allreduce(context.Background(), t, d, job+1, world, false, "--bytes", "1MiB"); err != nil {
		t.Fatalf("a job after the flood: %v", err)
	}
}

// joinFloodJob joins the job's ranks, float32 sum.
func joinFloodJob(t *testing.T, addr string, job uint32, token uint64, world, elems int) []*hostlib.Session {
	t.Helper()
	return inproctest.JoinAll(t, world, func(r int) hostlib.Options {
		return hostlib.Options{Switch: addr, Job: job, Token: token, Rank: r, World: world,
			DType: wire.Float32, Op: wire.OpSum, Elements: elems, Timeout: 30 * time.Second}
	})
}

// allreduceLoop runs allreduce calls on every rank, each checked element by
// element, until flooding is closed (and at least once after it).
func allreduceLoop(ss []*hostlib.Session, elems int, flooding <-chan struct{}, calls, inFlood *atomic.Int64) error {
	bufs := make([][]float32, len(ss))
	for r := range bufs {
		bufs[r] = make([]float32, elems)
	}
	for call := 0; ; call++ {
		done := false
		select {
		case <-flooding:
			done = true
		default:
		}
		for r, b := range bufs {
			for i := range b {
				b[i] = floodValue(r, i, call)
			}
		}
		var g errgroup.Group
		for r, s := range ss {
			g.Go(func() error { return hostlib.AllReduce(context.Background(), s, bufs[r]) })
		}
		if err := g.Wait(); err != nil {
			return fmt.Errorf("call %d: %w", call, err)
		}
		for r, b := range bufs {
			for i, v := range b {
				var want float32
				for q := range ss {
					want += floodValue(q, i, call)
				}
				if v != want {
					return fmt.Errorf("call %d rank %d element %d = %v, want %v", call, r, i, v, want)
				}
			}
		}
		calls.Add(1)
		if !done {
			inFlood.Add(1)
		} else {
			return nil
		}
	}
}

// floodValue is rank r's element i in call c: small integers, so float32
// sums are exact in any order.
func floodValue(r, i, c int) float32 { return float32((i*7+r*13+c)%1000 - 500) }

// floodGen makes the flood: datagrams built with the wire package (the
// running job's data, results, sparse and control packets with the right
// token and wrong ones, other jobs', joins with good and bad bodies,
// leaves), sent as they are (replayed), truncated, bit-flipped or
// extended, and pure random bytes.
type floodGen struct {
	rng  *rand.Rand
	real [][]byte
	n    [5]int // by kind: random, replayed, truncated, flipped, extended
}

var floodKinds = [5]string{"random", "replayed", "truncated", "bit-flipped", "extended"}

func newFloodGen(rng *rand.Rand, job uint32, token uint64, world, elems int) *floodGen {
	g := &floodGen{rng: rng}
	const pe = 256 // the switch's default: 1 KiB of float32 per packet
	nblocks := uint32((elems + pe - 1) / pe)
	payload := make([]byte, pe*4)
	for i := range payload {
		payload[i] = byte(rng.Uint32())
	}
	add := func(h wire.Header, p []byte) {
		h.Version = wire.Version
		g.real = append(g.real, wire.AppendPacket(nil, &h, p))
	}
	wrong := func() uint64 { return token ^ 1<<rng.IntN(64) }
	for i := 0; i < 64; i++ {
		h := wire.Header{Type: wire.TypeData, Job: job, Token: token, Generation: uint32(rng.IntN(64)), Block: uint32(rng.IntN(int(nblocks))),
			Child: uint16(rng.IntN(world + 2)), DType: wire.Float32, Op: wire.OpSum, Count: pe}
		if i%8 == 0 {
			h.Flags = wire.FlagRetransmit
		}
		add(h, payload) // the job's own packets, from a non-member
		h.Token = wrong()
		add(h, payload) // wrong token
		h.Job, h.Token = job+1+uint32(rng.IntN(1000)), token
		add(h, payload) // another job
		h.Job = rng.Uint32()
		add(h, payload)
	}
	for _, typ := range []wire.Type{wire.TypeResult, wire.TypeSparse, wire.TypeSpill} {
		h := wire.Header{Type: typ, Job: job, Token: token, Block: 3, DType: wire.Float32, Op: wire.OpSum, Count: 8}
		add(h, payload[:8*wire.PairSize(wire.Float32)])
	}
	ack := wire.JoinAckBody{Window: 64, Algo: wire.AlgoMulti, Buffers: 4, PacketElems: pe, Blocks: nblocks, QuotaBuffers: 512}
	add(wire.Header{Type: wire.TypeJoinAck, Job: job, Token: token}, ack.Append(nil))
	e := wire.ErrorBody{Code: wire.CodeTimeout, Text: []byte("allreduce timed out")}
	add(wire.Header{Type: wire.TypeError, Job: job, Token: token}, e.Append(nil))
	for i := 0; i < 16; i++ {
		h := wire.Header{Job: job, Token: token, Child: uint16(rng.IntN(world + 1)), DType: wire.Float32, Op: wire.OpSum}
		body := wire.JoinBody{World: uint16(world), Elements: uint64(elems), TimeoutMillis: 30000}
		g.real = append(g.real, wire.AppendJoin(nil, &h, &body)) // the job's join: refused, the rank is taken
		body.Elements++
		g.real = append(g.real, wire.AppendJoin(nil, &h, &body)) // another shape: refused
		h.Token = wrong()
		g.real = append(g.real, wire.AppendJoin(nil, &h, &body)) // wrong token: dropped
		h.Job, h.Token, body.World = job+1+uint32(i), rng.Uint64(), uint16(2+i)
		g.real = append(g.real, wire.AppendJoin(nil, &h, &body)) // a new job: refused, the switch is full
		bad := wire.AppendJoin(nil, &h, &body)
		bad[wire.HeaderLen+2+2*(i%2)] = 0x80 // an unknown algo or option bit
		g.real = append(g.real, bad)
		g.real = append(g.real, bad[:wire.HeaderLen+i]) // a body cut short
		lv := wire.Header{Type: wire.TypeLeave, Job: job, Token: token, Child: uint16(i % world)}
		add(lv, nil) // the job's leave, from a non-member
		lv.Token = wrong()
		add(lv, nil)
		lv.Job = job + 1 + uint32(i)
		add(lv, nil)
	}
	return g
}

// next returns the next datagram, in buf's storage.
func (g *floodGen) next(buf []byte) []byte {
	rng := g.rng
	k := rng.IntN(100)
	switch {
	case k < 15:
		g.n[0]++
		n := rng.IntN(1200)
		if rng.IntN(4) == 0 {
			n = rng.IntN(wire.HeaderLen + 8)
		}
		buf = buf[:n]
		for i := range buf {
			buf[i] = byte(rng.Uint32())
		}
		if n >= 2 && rng.IntN(2) == 0 {
			buf[0], buf[1] = wire.Version, byte(rng.IntN(10)) // get past the first checks
		}
		return buf
	}
	real := g.real[rng.IntN(len(g.real))]
	buf = append(buf[:0], real...)
	switch {
	case k < 40:
		g.n[1]++
	case k < 60:
		g.n[2]++
		buf = buf[:rng.IntN(len(buf))]
	case k < 90:
		g.n[3]++
		for range 1 + rng.IntN(8) {
			i := rng.IntN(len(buf) * 8)
			buf[i/8] ^= 1 << (i % 8)
		}
	default:
		g.n[4]++
		for range 1 + rng.IntN(64) {
			buf = append(buf, byte(rng.Uint32()))
		}
	}
	return buf
}

func (g *floodGen) kinds() string {
	var parts []string
	for i, n := range g.n {
		parts = append(parts, fmt.Sprintf("%s %d", floodKinds[i], n))
	}
	return strings.Join(parts, ", ")
}

// floodStats is what sendPaced did.
type floodStats struct {
	sent, bursts, minBurst, maxBurst int
	kernelDrops, replyDrops          int64 // datagrams the daemon's and the flooder's sockets dropped (-1: unknown)
}

// sendPaced sends total datagrams in bursts, each after the daemon's
// sockets have taken in the one before (their receive queues in
// /proc/net/udp are empty again), so that no socket buffer overflows. A burst
// grows while the kernel drops nothing and halves when it drops. Without
// /proc/net/udp it sends bursts of 256 a millisecond apart and reports the
// kernel's drops as unknown.
func sendPaced(t *testing.T, fl *net.UDPConn, daemon string, gen *floodGen, total int) floodStats {
	t.Helper()
	dport, flport := udpPort(daemon), fl.LocalAddr().(*net.UDPAddr).Port
	st := floodStats{minBurst: math.MaxInt}
	_, drops0, procOK := udpSocket(dport)
	_, fdrops0, _ := udpSocket(flport)
	burst, buf := 256, make([]byte, 0, 2048)
	lastDrops := drops0
	for st.sent < total {
		n := min(burst, total-st.sent)
		for range n {
			if _, err := fl.Write(gen.next(buf)); err != nil {
				t.Fatalf("flood send %d: %v", st.sent, err)
			}
		}
		st.sent += n
		st.bursts++
		st.minBurst, st.maxBurst = min(st.minBurst, n), max(st.maxBurst, n)
		if !procOK {
			time.Sleep(time.Millisecond)
			continue
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			q, drops, _ := udpSocket(dport)
			if q == 0 {
				if drops > lastDrops {
					burst = max(16, burst/2)
				} else {
					burst = min(2048, burst+burst/4)
				}
				lastDrops = drops
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the daemon's socket still holds %d bytes 5 s after a burst: it stopped reading", q)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	st.kernelDrops, st.replyDrops = -1, -1
	if procOK {
		_, drops1, _ := udpSocket(dport)
		_, fdrops1, _ := udpSocket(flport)
		st.kernelDrops, st.replyDrops = drops1-drops0, fdrops1-fdrops0
	}
	return st
}

// udpSocket reads the receive queue (bytes) and the drop count of the
// IPv4 UDP sockets bound to 127.0.0.1:port from /proc/net/udp, summed: a
// daemon with several readers binds its data port once for each
// (SO_REUSEPORT) and the kernel steers the flood across them, so one
// socket's line paced the flood on its queue alone and missed the other's
// drops (beside a CPU hog, 1,748 datagrams of 100,000 uncounted with
// "0 dropped"). ok is false where there is no such file or line.
func udpSocket(port int) (rxQueue, drops int64, ok bool) {
	f, err := os.Open("/proc/net/udp")
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	local := fmt.Sprintf("0100007F:%04X", port)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 13 || fs[1] != local {
			continue
		}
		_, rxHex, _ := strings.Cut(fs[4], ":")
		q, err1 := strconv.ParseInt(rxHex, 16, 64)
		d, err2 := strconv.ParseInt(fs[len(fs)-1], 10, 64)
		if err1 != nil || err2 != nil {
			return 0, 0, false
		}
		rxQueue, drops, ok = rxQueue+q, drops+d, true
	}
	return rxQueue, drops, ok
}

func udpPort(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return n
}

// replyCounter counts what the daemon sends the flooder: Errors by code,
// with the largest of each, and anything else.
type replyCounter struct {
	mu         sync.Mutex
	byCode     map[wire.ErrorCode]int64
	maxLen     map[wire.ErrorCode]int
	other      int64
	firstOther string
}

// readReplies reads the flooder's socket until it is closed.
func readReplies(c *net.UDPConn) *replyCounter {
	rc := &replyCounter{byCode: map[wire.ErrorCode]int64{}, maxLen: map[wire.ErrorCode]int{}}
	go func() {
		buf := make([]byte, 65536)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			var h wire.Header
			var e wire.ErrorBody
			payload, err := h.Unmarshal(buf[:n])
			rc.mu.Lock()
			if err == nil && h.Type == wire.TypeError && e.Unmarshal(payload) == nil {
				rc.byCode[e.Code]++
				rc.maxLen[e.Code] = max(rc.maxLen[e.Code], n)
			} else if rc.other++; rc.other == 1 {
				rc.firstOther = fmt.Sprintf("%v %x", err, buf[:min(n, 64)])
			}
			rc.mu.Unlock()
		}
	}()
	return rc
}

// counts returns the join refusals (every Error but unknown-job), the
// unknown-job answers, a summary by code, and a description of the first
// reply that is not an Error if there was one.
func (rc *replyCounter) counts() (refusals, unknown int64, summary, bad string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var parts []string
	for code, n := range rc.byCode {
		if code == wire.CodeUnknownJob {
			unknown += n
		} else {
			refusals += n
		}
		parts = append(parts, fmt.Sprintf("%v %d (≤ %d bytes)", code, n, rc.maxLen[code]))
	}
	slices.Sort(parts)
	if rc.other > 0 {
		bad = fmt.Sprintf("%d others, the first %s", rc.other, rc.firstOther)
	}
	return refusals, unknown, strings.Join(parts, ", "), bad
}

// settle waits until the daemon has accounted for the sent datagrams
// since before (each dropped, or a join refused and answered), or, where
// the kernel lost some so that the count cannot get there, until the
// count has not moved for a second. A quiet moment alone is not enough:
// on a loaded box the daemon may sit on a backlog for longer than that.
func settle(t *testing.T, d *daemon, rc *replyCounter, before metrics, sent int64) {
	t.Helper()
	last, stable := int64(-1), 0
	for deadline := time.Now().Add(10 * time.Second); ; {
		drops, _ := scrape(t, d).drops(before)
		refusals, _, _, _ := rc.counts()
		cur := drops + refusals
		if cur >= sent {
			return
		}
		if cur == last {
			stable++
		} else {
			stable = 0
		}
		if stable >= 20 {
			return // a second without change: the kernel's losses
		}
		last = cur
		if time.Now().After(deadline) {
			t.Fatal("drop and reply counts still moving 10 s after the flood")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// metrics is one scrape of /metrics: sample name with labels → value.
type metrics map[string]float64

func scrape(t *testing.T, d *daemon) metrics {
	t.Helper()
	m, err := tryScrape(d)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// tryScrape reads /metrics, or says why it could not (the daemon may be
// gone: the hostile suite scrapes daemons it may have killed).
func tryScrape(d *daemon) (metrics, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + d.admin + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	m := metrics{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %q: %v", line, err)
		}
		m[line[:i]] = v
	}
	return m, sc.Err()
}

func (m metrics) get(name string) float64 { return m[name] }

// drops sums flare_dropped_packets_total over the reasons of bad packets
// (not send-error or shutdown) since before (nil: since start), and
// lists the reasons that moved.
func (m metrics) drops(before metrics) (int64, string) {
	const prefix = `flare_dropped_packets_total{reason="`
	var sum int64
	var parts []string
	for k, v := range m {
		reason, ok := strings.CutPrefix(k, prefix)
		if !ok {
			continue
		}
		reason = strings.TrimSuffix(reason, `"}`)
		if reason == "send-error" || reason == "shutdown" {
			continue
		}
		if dv := v - before[k]; dv != 0 {
			sum += int64(dv)
			parts = append(parts, fmt.Sprintf("%s %.0f", reason, dv))
		}
	}
	slices.Sort(parts)
	return sum, strings.Join(parts, ", ")
}

// waitMetric waits up to 5 s for an unlabelled metric to reach want.
func waitMetric(t *testing.T, d *daemon, name string, want float64) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; {
		if v := d.metric(t, name); v == want {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("%s = %v, want %v", name, v, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
