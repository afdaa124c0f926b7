package main

import (
	"context"
	"encoding/binary"
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
	"github.com/flare-net/flare/wire"
)

// The hostile suite's tools: a raw UDP peer that sends crafted packets
// built with the wire package and tallies what comes back, the daemon's
// memory read from /proc, and the normal job run after every attack.

// rawPeer is a UDP socket bound to one loopback address. Every datagram
// it receives is tallied (joinacks, errors by code with the first text,
// results, others) and handed to onPacket if set.
type rawPeer struct {
	c        *net.UDPConn
	sw       *net.UDPAddr
	onPacket func(h *wire.Header, payload []byte) // set before the first packet can arrive

	mu     sync.Mutex
	n      int
	acks   []wire.JoinAckBody
	byCode map[wire.ErrorCode]int
	text   map[wire.ErrorCode]string
	other  map[wire.Type]int
	sent   int
}

// newRawPeer opens a socket on ip (a loopback address: 127.0.0.x) that
// talks to the daemon d.
func newRawPeer(t *testing.T, d *daemon, ip string, onPacket func(*wire.Header, []byte)) *rawPeer {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(ip)})
	if err != nil {
		t.Fatalf("socket on %s: %v", ip, err)
	}
	_ = c.SetReadBuffer(4 << 20)
	sw, err := net.ResolveUDPAddr("udp4", d.data)
	if err != nil {
		t.Fatal(err)
	}
	p := &rawPeer{c: c, sw: sw, onPacket: onPacket, byCode: map[wire.ErrorCode]int{}, text: map[wire.ErrorCode]string{}, other: map[wire.Type]int{}}
	done := make(chan struct{})
	go p.read(done)
	t.Cleanup(func() { c.Close(); <-done })
	return p
}

func (p *rawPeer) read(done chan<- struct{}) {
	defer close(done)
	buf := make([]byte, 65536)
	for {
		n, err := p.c.Read(buf)
		if err != nil {
			return
		}
		var h wire.Header
		payload, err := h.Unmarshal(buf[:n])
		p.mu.Lock()
		p.n++
		switch {
		case err != nil:
			p.other[0]++
		case h.Type == wire.TypeJoinAck:
			var a wire.JoinAckBody
			if a.Unmarshal(payload) == nil {
				p.acks = append(p.acks, a)
			}
		case h.Type == wire.TypeError:
			var e wire.ErrorBody
			if e.Unmarshal(payload) == nil {
				if p.byCode[e.Code]++; p.byCode[e.Code] == 1 {
					p.text[e.Code] = e.Message()
				}
			}
		default:
			p.other[h.Type]++
		}
		p.mu.Unlock()
		if err == nil && p.onPacket != nil {
			p.onPacket(&h, payload)
		}
	}
}

// addr is the peer's own address.
func (p *rawPeer) addr() string { return p.c.LocalAddr().String() }

// send sends one datagram to the daemon's data port. The socket is not
// connected, so a dead daemon's port-unreachable does not surface here.
func (p *rawPeer) send(t *testing.T, b []byte) {
	t.Helper()
	if _, err := p.c.WriteToUDP(b, p.sw); err != nil {
		t.Fatalf("send from %s: %v", p.addr(), err)
	}
	p.mu.Lock()
	p.sent++
	p.mu.Unlock()
}

// sendTo sends one datagram to another address (a host).
func (p *rawPeer) sendTo(t *testing.T, to *net.UDPAddr, b []byte) {
	t.Helper()
	if _, err := p.c.WriteToUDP(b, to); err != nil {
		t.Fatalf("send from %s to %v: %v", p.addr(), to, err)
	}
}

// received is how many datagrams came back.
func (p *rawPeer) received() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// ack returns the first JoinAck received, if any.
func (p *rawPeer) ack() (wire.JoinAckBody, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.acks) == 0 {
		return wire.JoinAckBody{}, false
	}
	return p.acks[0], true
}

// errors returns the count of Errors received with code c.
func (p *rawPeer) errors(c wire.ErrorCode) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.byCode[c]
}

// tally describes what the peers received, for the table: "silence", or
// counts by kind with each error code's first text.
func tally(peers ...*rawPeer) string {
	acks, sent, got := 0, 0, 0
	codes := map[wire.ErrorCode]int{}
	texts := map[wire.ErrorCode]string{}
	other := map[wire.Type]int{}
	for _, p := range peers {
		p.mu.Lock()
		acks, sent, got = acks+len(p.acks), sent+p.sent, got+p.n
		for c, n := range p.byCode {
			codes[c] += n
			if texts[c] == "" {
				texts[c] = p.text[c]
			}
		}
		for ty, n := range p.other {
			other[ty] += n
		}
		p.mu.Unlock()
	}
	if got == 0 {
		return fmt.Sprintf("silence (%d sent)", sent)
	}
	var parts []string
	if acks > 0 {
		parts = append(parts, fmt.Sprintf("join-ack ×%d", acks))
	}
	for c, n := range codes {
		parts = append(parts, fmt.Sprintf("%v ×%d “%s”", c, n, shorten(texts[c], 110)))
	}
	for ty, n := range other {
		parts = append(parts, fmt.Sprintf("%v ×%d", ty, n))
	}
	slices.Sort(parts)
	return fmt.Sprintf("%s (%d sent, %d answers)", strings.Join(parts, "; "), sent, got)
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// joinPacket is a Join for rank of job with body, dtype and op.
func joinPacket(job uint32, token uint64, rank int, dt wire.DType, op wire.Op, body wire.JoinBody) []byte {
	h := wire.Header{Job: job, Token: token, Child: uint16(rank), DType: dt, Op: op}
	return wire.AppendJoin(nil, &h, &body)
}

// denseBody is the join of a dense job as hostlib sends it (switch
// defaults for the design and the packet).
func denseBody(world, elements int) wire.JoinBody {
	return wire.JoinBody{World: uint16(world), Elements: uint64(elements), TimeoutMillis: 10000}
}

// dataPacket is one dense block of int32 or float32 elements, values
// little-endian as the payload carries them.
func dataPacket(typ wire.Type, job uint32, token uint64, gen, block uint32, child int, dt wire.DType, flags wire.Flags, vals []uint32) []byte {
	h := wire.Header{Type: typ, Flags: flags, Job: job, Token: token, Generation: gen, Block: block, Child: uint16(child),
		DType: dt, Op: wire.OpSum, Count: uint32(len(vals))}
	payload := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(payload[4*i:], v)
	}
	return wire.AppendPacket(nil, &h, payload)
}

// float32Block is n copies of v as float32 bits.
func float32Block(n int, v float32) []uint32 {
	b := make([]uint32, n)
	for i := range b {
		b[i] = math.Float32bits(v)
	}
	return b
}

// waitUntil polls cond every 5 ms for at most max; it reports whether
// cond came true.
func waitUntil(max time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(max); ; time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// pacer keeps a sender under rate datagrams per second, so that joins
// get past the switch's join-rate bucket (an attacker who wants to fill
// the job table paces itself too).
type pacer struct {
	start time.Time
	rate  float64
	n     int
}

func (p *pacer) next() {
	if p.n++; p.n%50 == 0 {
		if d := time.Until(p.start.Add(time.Duration(float64(p.n) / p.rate * float64(time.Second)))); d > 0 {
			time.Sleep(d)
		}
	}
}

// alive reports whether the daemon process is still running.
func (d *daemon) alive() bool {
	select {
	case err := <-d.done:
		d.done <- err
		return false
	default:
		return true
	}
}

// healthz returns the status code of /healthz, or the error.
func (d *daemon) healthz() (int, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + d.admin + "/healthz")
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// procMemory reads a process's resident set now and its peak (VmRSS,
// VmHWM from /proc/<pid>/status), in bytes.
func procMemory(pid int) (rss, peak int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/status %s: %v", pid, line, err)
		}
		if k == "VmRSS" {
			rss = kb << 10
		} else {
			peak = kb << 10
		}
	}
	return rss, peak, nil
}

// memWatch polls the daemon's memory every 10 ms while an attack runs,
// keeps the highest peak seen (the process may die, taking its /proc entry
// with it) and kills the daemon if its resident set passes kill, so that
// an attack that works cannot take the test machine down with it.
type memWatch struct {
	peak   atomic.Int64
	killed atomic.Bool
	stop   chan struct{}
	done   chan struct{}
}

func watchMemory(d *daemon, kill int64) *memWatch {
	w := &memWatch{stop: make(chan struct{}), done: make(chan struct{})}
	pid := d.cmd.Process.Pid
	go func() {
		defer close(w.done)
		for {
			if rss, peak, err := procMemory(pid); err == nil {
				w.peak.Store(max(w.peak.Load(), peak, rss))
				if rss > kill && !w.killed.Swap(true) {
					d.cmd.Process.Kill()
				}
			}
			select {
			case <-w.stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return w
}

// finish stops the watch and returns the peak in bytes.
func (w *memWatch) finish() int64 {
	close(w.stop)
	<-w.done
	return w.peak.Load()
}

// normalJob runs a small job through the daemon: two ranks in this
// process (hostlib), 16 KiB of float32 each, two calls, every element
// checked against the plain sum. It says what ran, or why it did not.
func normalJob(d *daemon, job uint32) (string, error) {
	const world, elems = 2, 4096
	token := rand.Uint64() | 1
	ss := make([]*hostlib.Session, world)
	defer func() {
		for _, s := range ss {
			if s != nil {
				s.Close()
			}
		}
	}()
	g, ctx := errgroup.WithContext(context.Background())
	for r := range world {
		g.Go(func() (err error) {
			ss[r], err = hostlib.Join(ctx, hostlib.Options{Switch: d.data, Job: job, Token: token, Rank: r, World: world,
				DType: wire.Float32, Op: wire.OpSum, Elements: elems, Timeout: 10 * time.Second, JoinTimeout: 10 * time.Second})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return "", fmt.Errorf("join: %w", err)
	}
	var calls, inFlood atomic.Int64
	done := make(chan struct{})
	close(done)
	for range 2 {
		if err := allreduceLoop(ss, elems, done, &calls, &inFlood); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("exact: %d calls, %d ranks × %d float32", calls.Load(), world, elems), nil
}
