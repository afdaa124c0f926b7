package swtch_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/proto"
	swtch "github.com/flare-net/flare/switch"
	"github.com/flare-net/flare/wire"
)

// BenchmarkGenPath is BenchmarkMemPath's switch with the network taken out:
// each reader's conn makes the P hosts' datagrams itself, for the blocks
// steered to it, and takes the results its writer sends, so that no
// datagram crosses between goroutines but through the switch. What is left
// is the switch's own path (reader → job table → HPU → handler → egress →
// writer) and one copy of each datagram into the reader's buffer, which a
// socket makes too. With -cpu 1,2 it shows how the switch alone scales
// with cores, apart from what the in-memory network's cross-CPU copies
// cost. One op is one allreduce of P = 8 ranks of 1 MiB float32 (8192
// data packets), in lock-step rounds of the window per reader; between
// rounds and calls a conn polls before it waits (busyPoll), as the
// daemon's sockets do. twins is
// two switches of one reader each, side by side in the process, each with
// its own hosts and an allreduce of its own per op: nothing of the
// switch is shared between them, so what they lose at two CPUs against
// two processes is the Go runtime's, not the switch's. readers-1-gso is
// readers-1 with conns that say they have GSO, as a Linux socket does:
// the writer then stages each batch's results and hands each member's to
// the conn as runs (conn.Datagram.Seg), as the daemon does.
func BenchmarkGenPath(b *testing.B) {
	b.Run("readers-1", func(b *testing.B) { benchGenPath(b, 1, 1, false) })
	b.Run("readers-2", func(b *testing.B) { benchGenPath(b, 1, 2, false) })
	b.Run("twins", func(b *testing.B) { benchGenPath(b, 2, 1, false) })
	b.Run("readers-1-gso", func(b *testing.B) { benchGenPath(b, 1, 1, true) })
}

// benchGenPath runs `switches` switches of `readers` readers each, every
// one with hosts of its own, whose conns say they have GSO when gso is
// set.
func benchGenPath(b *testing.B, switches, readers int, gso bool) {
	var hs []*genHosts
	for range switches {
		h := newGenHosts(readers, gso)
		cfg := swtch.Config{Conns: h.conns(), Readers: readers, Admin: "off", Window: pathWindow,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		_, stop := runSwitch(b, cfg)
		defer stop()
		hs = append(hs, h)
	}
	gen := uint32(1)
	callAll := func() { // first the joins, then a warm call: pools, queues and the jobs' buffers
		errs := make([]error, len(hs))
		var g sync.WaitGroup
		for i, h := range hs {
			g.Go(func() { errs[i] = h.call(gen) })
		}
		g.Wait()
		if err := errors.Join(errs...); err != nil {
			b.Fatal(err)
		}
	}
	callAll()
	b.ReportAllocs()
	m := startMeter()
	b.ResetTimer()
	calls := 0
	for b.Loop() {
		gen++
		callAll()
		calls += len(hs)
	}
	reportPackets(b, float64(calls*pathRanks*hs[0].blocks), m)
}

// genHosts plays P hosts inside the conns of a switch: conn 0 brings their
// joins, and once every join is answered each conn k brings, round by
// round, every rank's packets of the blocks b with b mod readers = k (as
// DataPortGroup steers them) in the order hostlib sends them, and waits for
// that round's P results a block before the next round.
type genHosts struct {
	cs    []*genConn
	addrs []netip.AddrPort // rank r's address
	sw    netip.AddrPort

	mu      sync.Mutex // the join answers, taken by any writer
	acks    int
	ack     wire.JoinAckBody
	ready   chan struct{} // closed when every join is answered
	bad     atomic.Pointer[string]
	blocks  int
	payload []byte // a data packet's payload: every element 1
	gso     bool   // the conns say they have GSO
}

func newGenHosts(readers int, gso bool) *genHosts {
	h := &genHosts{sw: netip.MustParseAddrPort("127.0.0.1:7470"), ready: make(chan struct{}), gso: gso}
	for r := range pathRanks {
		h.addrs = append(h.addrs, netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(1 + r)}), 7471))
	}
	for k := range readers {
		h.cs = append(h.cs, &genConn{h: h, k: k, wake: make(chan struct{}, 1), next: make(chan uint32, 1),
			finished: make(chan struct{}, 1), closed: make(chan struct{})})
	}
	return h
}

func (h *genHosts) conns() []conn.Conn {
	out := make([]conn.Conn, len(h.cs))
	for i, c := range h.cs {
		out[i] = c
	}
	return out
}

// call runs one allreduce of generation gen through every conn and waits
// for it; a result that is not P ones fails it.
func (h *genHosts) call(gen uint32) error {
	for _, c := range h.cs {
		c.next <- gen
	}
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for _, c := range h.cs {
		select {
		case <-c.finished:
		case <-timeout.C:
			return fmt.Errorf("generation %d: conn %d's call not done in 30 s", gen, c.k)
		}
	}
	if bad := h.bad.Load(); bad != nil {
		return errors.New(*bad)
	}
	return nil
}

func (h *genHosts) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	h.bad.CompareAndSwap(nil, &msg)
}

// joined takes a join answer; the last one makes the conns' schedules.
func (h *genHosts) joined(pkt []byte) {
	var hd wire.Header
	payload, err := hd.Unmarshal(pkt)
	if err != nil || hd.Type != wire.TypeJoinAck {
		h.fail("a join answered with %v (%v)", hd.Type, err)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.ack.Unmarshal(payload); err != nil {
		h.fail("join-ack: %v", err)
		return
	}
	if h.acks++; h.acks < pathRanks {
		return
	}
	h.blocks = int(h.ack.Blocks)
	window, pe := int(h.ack.Window), int(h.ack.PacketElems)
	h.payload = make([]byte, 4*pe)
	for i := range pe {
		binary.LittleEndian.PutUint32(h.payload[4*i:], math.Float32bits(1))
	}
	orders := make([][]uint32, pathRanks)
	for r := range orders {
		orders[r] = proto.StaggeredOrder(nil, r, pathRanks, h.blocks, window)
	}
	for _, c := range h.cs {
		c.schedule(orders, window, len(h.cs))
	}
	close(h.ready)
}

// genItem is one data packet a conn brings: rank r's block.
type genItem struct{ rank, block uint32 }

// genConn is one reader's conn of genHosts.
type genConn struct {
	h      *genHosts
	k      int
	rounds [][]genItem // per round, the packets in the order they arrive

	// The reader's side (ReadBatch), one goroutine.
	gen      uint32
	active   bool // a call is under way
	round    int  // the round being sent, len(rounds) when the call is done
	pos      int  // next packet of the round
	joinSent bool

	got      atomic.Int64  // results of this round taken by WriteBatch
	wake     chan struct{} // a result came
	next     chan uint32   // the next call's generation
	finished chan struct{} // the call's last round came back
	closed   chan struct{}
	once     sync.Once
}

var _ conn.Conn = (*genConn)(nil)

// schedule makes c's rounds from the ranks' orders: each round is a window
// of every rank's blocks, rank by rank, keeping those steered to c.
func (c *genConn) schedule(orders [][]uint32, window, readers int) {
	blocks := len(orders[0])
	for g := 0; g < blocks; g += window {
		var round []genItem
		for r, o := range orders {
			for _, blk := range o[g:min(g+window, blocks)] {
				if int(blk)%readers == c.k {
					round = append(round, genItem{uint32(r), blk})
				}
			}
		}
		if len(round) > 0 {
			c.rounds = append(c.rounds, round)
		}
	}
}

func (c *genConn) LocalAddr() netip.AddrPort { return c.h.sw }
func (c *genConn) BatchSize() int            { return conn.DefaultBatchSize }
func (c *genConn) Offload() conn.Offload     { return conn.Offload{GSO: c.h.gso} }

func (c *genConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

var errGenClosed = fmt.Errorf("gen conn: %w", net.ErrClosed)

// ReadBatch brings the joins (conn 0, once), then the current round's
// packets; between rounds it waits for the round's results, and between
// calls for the next call.
func (c *genConn) ReadBatch(msgs []conn.Datagram) (int, error) {
	if len(msgs) == 0 {
		return 0, nil
	}
	h := c.h
	if c.k == 0 && !c.joinSent {
		c.joinSent = true
		hd := wire.Header{Job: 1, Token: 0x5eed, DType: wire.Float32, Op: wire.OpSum}
		n := 0
		for r := range min(pathRanks, len(msgs)) {
			hd.Child = uint16(r)
			join := wire.AppendJoin(msgs[r].Buf[:0], &hd, &wire.JoinBody{World: pathRanks, Elements: pathElements})
			msgs[r].N, msgs[r].Addr = len(join), h.addrs[r]
			n++
		}
		return n, nil
	}
	for !c.active || c.round == len(c.rounds) {
		if c.active { // a call is done
			c.finished <- struct{}{}
			c.active = false
		}
		select {
		case <-h.ready:
		case <-c.closed:
			return 0, errGenClosed
		}
		busyPoll(func() bool { return len(c.next) > 0 })
		select {
		case c.gen = <-c.next:
			c.active, c.round, c.pos = true, 0, 0
			c.got.Store(0)
		case <-c.closed:
			return 0, errGenClosed
		}
	}
	round := c.rounds[c.round]
	for c.pos == len(round) { // all sent: wait for the round's results
		if c.got.Load() == int64(len(round)) {
			c.round++
			c.pos = 0
			c.got.Store(0)
			if c.round == len(c.rounds) {
				return c.ReadBatch(msgs)
			}
			round = c.rounds[c.round]
			break
		}
		if busyPoll(func() bool { return c.got.Load() == int64(len(round)) }) {
			continue
		}
		select {
		case <-c.wake:
		case <-c.closed:
			return 0, errGenClosed
		}
	}
	hd := wire.Header{Type: wire.TypeData, Job: 1, Token: 0x5eed, DType: wire.Float32, Op: wire.OpSum,
		Generation: c.gen, Count: uint32(len(h.payload) / 4)}
	n := min(len(msgs), len(round)-c.pos)
	for i, it := range round[c.pos : c.pos+n] {
		hd.Block, hd.Child = it.block, uint16(it.rank)
		pkt := wire.AppendPacket(msgs[i].Buf[:0], &hd, h.payload)
		msgs[i].N, msgs[i].Addr = len(pkt), h.addrs[it.rank]
	}
	c.pos += n
	return n, nil
}

// busyPoll waits up to conn.DefaultBusyPoll for done, yielding the CPU
// between checks, as the daemon's sockets poll before they sleep
// (conn.Config.BusyPoll): a reader whose conn sleeps at once costs its CPU
// a wake-up for the next round or call, which a socket's poll bridges. It
// reports whether done came true.
func busyPoll(done func() bool) bool {
	var start time.Time
	for !done() {
		if start.IsZero() {
			start = time.Now()
		} else if time.Since(start) >= conn.DefaultBusyPoll {
			return false
		}
		runtime.Gosched()
	}
	return true
}

// WriteBatch takes what the switch sends: join answers, and results, each
// of which must be of this call and P ones (the first element checked).
// A result to every member counts once per member.
func (c *genConn) WriteBatch(msgs []conn.Datagram) (int, error) {
	select {
	case <-c.closed:
		return 0, errGenClosed
	default:
	}
	results := 0
	for i := range msgs {
		d := &msgs[i]
		if d.Seg <= 0 {
			results += c.take(d.Buf[:d.N], firstElem(d))
			continue
		}
		for seg := range d.Segments() { // a run: its datagrams
			results += c.take(seg, seg[min(wire.HeaderLen, len(seg)):])
		}
	}
	if results > 0 {
		c.got.Add(int64(results))
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	return len(msgs), nil
}

// take checks one datagram the switch sent, pkt, whose payload begins
// with payload, and says whether it was a result.
func (c *genConn) take(pkt, payload []byte) int {
	if len(pkt) < wire.HeaderLen {
		c.h.fail("a datagram of %d bytes", len(pkt))
		return 0
	}
	switch wire.Type(pkt[wire.OffType]) {
	case wire.TypeJoinAck:
		c.h.joined(pkt)
	case wire.TypeResult:
		if g := binary.BigEndian.Uint32(pkt[wire.OffGeneration:]); g != c.gen {
			c.h.fail("a result of generation %d during %d", g, c.gen)
		} else if len(payload) < 4 || math.Float32frombits(binary.LittleEndian.Uint32(payload)) != pathRanks {
			c.h.fail("block %d: first element not %d", binary.BigEndian.Uint32(pkt[wire.OffBlock:]), pathRanks)
		}
		return 1
	default:
		c.h.fail("the switch sent a %v", wire.Type(pkt[wire.OffType]))
	}
	return 0
}

// firstElem is the first 4 bytes of d's payload: after the header in Buf,
// or at the start of a kept payload's Tail.
func firstElem(d *conn.Datagram) []byte {
	if d.N > wire.HeaderLen {
		return d.Buf[wire.HeaderLen:d.N]
	}
	return d.Tail
}

// runSwitch starts a switch of cfg and waits until it serves; stop ends
// it and waits for Run to return.
func runSwitch(b *testing.B, cfg swtch.Config) (sw *swtch.Switch, stop func()) {
	sw, err := swtch.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sw.Run(ctx) }()
	<-sw.Ready()
	return sw, func() { cancel(); <-done }
}
