package conn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// flarePacket is the size of a Flare data packet: a 32-byte header and a
// 1 KiB payload.
const flarePacket = 32 + 1024

// listenLoopback opens a conn on addr for the test and closes it after.
func listenLoopback(tb testing.TB, addr string, cfg Config) Conn {
	tb.Helper()
	c, err := ListenUDP(addr, cfg)
	if err != nil {
		tb.Fatalf("ListenUDP(%q): %v", addr, err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// stamp fills b with the contents of datagram seq: the sequence number,
// then bytes that depend on it and on their offset. len(b) >= 8.
func stamp(b []byte, seq uint64) {
	binary.BigEndian.PutUint64(b, seq)
	for i := 8; i < len(b); i++ {
		b[i] = byte(seq*31 + uint64(i))
	}
}

// unstamp returns the sequence number in b and whether the rest of b is
// what stamp wrote.
func unstamp(b []byte) (uint64, bool) {
	if len(b) < 8 {
		return 0, false
	}
	seq := binary.BigEndian.Uint64(b)
	for i := 8; i < len(b); i++ {
		if b[i] != byte(seq*31+uint64(i)) {
			return seq, false
		}
	}
	return seq, true
}

// newMsgs returns n datagrams with buffers of capacity size.
func newMsgs(n, size int) []Datagram {
	msgs := make([]Datagram, n)
	for i := range msgs {
		msgs[i].Buf = make([]byte, size)
	}
	return msgs
}

// mixedSizes returns n datagram sizes in runs of equal size (1 to 100
// long, so some runs pass the 64-segment GSO limit), some ending in a
// shorter datagram, so that GSO must split and restart runs.
func mixedSizes(n int, seed uint64) []int {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	choices := []int{flarePacket, flarePacket, 512, 33, 1472, 8, 9000, 2000}
	sizes := make([]int, 0, n)
	for len(sizes) < n {
		size, run := choices[rng.IntN(len(choices))], 1+rng.IntN(100)
		for range min(run, n-len(sizes)) {
			sizes = append(sizes, size)
		}
		if len(sizes) < n && size >= 16 && rng.IntN(2) == 0 {
			sizes = append(sizes, size/2)
		}
	}
	return sizes
}

// sameSizes returns n copies of size.
func sameSizes(n, size int) []int {
	sizes := make([]int, n)
	for i := range sizes {
		sizes[i] = size
	}
	return sizes
}

// moveToTail sends the end of m's stamped bytes, from a point that
// depends on seq, from tail (a buffer of m's size) instead of Buf: a
// header and a payload in different memory, as a host sends a block.
// Some datagrams keep everything in Buf, some keep nothing.
func moveToTail(m *Datagram, seq uint64, tail []byte) {
	split := int(seq*7919) % (m.N + 2)
	if split > m.N {
		m.Tail = nil // all in Buf
		return
	}
	m.Tail = tail[:m.N-split]
	copy(m.Tail, m.Buf[split:m.N])
	clear(m.Buf[split:m.N]) // what a conn must not send
	m.N = split
}

// transfer sends datagram i of len(sizes[i]) bytes, stamped with i, from tx
// to dst (where rx listens) and checks that rx receives every one exactly
// once, separately and intact, from tx's address. The sender keeps the
// bytes in flight within what a socket buffer holds, so nothing is lost.
func transfer(t *testing.T, tx, rx Conn, dst netip.AddrPort, sizes []int) {
	t.Helper()
	transferWith(t, tx, rx, dst, sizes, whole, false)
}

// sendMode is how transferWith hands its datagrams to WriteBatch.
type sendMode int

const (
	whole sendMode = iota // each in its Buf
	tails                 // part of each from its Tail (moveToTail)
	runs                  // back to back, as run entries (Datagram.Seg) where their sizes allow
)

// transferWith is transfer, with the datagrams sent as mode says, and
// received with ReadInto when into is set and rx has it.
func transferWith(t *testing.T, tx, rx Conn, dst netip.AddrPort, sizes []int, mode sendMode, into bool) {
	t.Helper()
	const budget = 256 << 10 // bytes in flight, counting 1 KiB of kernel overhead per datagram
	cost := make([]int, len(sizes)+1)
	for i, s := range sizes {
		cost[i+1] = cost[i] + s + 1024
	}
	var got atomic.Int64
	done := make(chan error, 1)
	go func() { done <- receiveAll(rx, sizes, tx.LocalAddr(), &got, into) }()
	failed := func() {
		select {
		case err := <-done:
			t.Fatalf("receiver stopped early: %v", err)
		default:
		}
	}

	msgs := newMsgs(tx.BatchSize(), DefaultMaxDatagram)
	tailBufs := newMsgs(tx.BatchSize(), DefaultMaxDatagram)
	stage := make([]byte, tx.BatchSize()*DefaultMaxDatagram)
	for sent := 0; sent < len(sizes); {
		k := 1
		for k < len(msgs) && sent+k < len(sizes) && cost[sent+k+1]-cost[sent] <= budget {
			k++
		}
		stall := time.Now().Add(10 * time.Second)
		for spin, g := 0, int(got.Load()); g < sent && cost[sent+k]-cost[g] > budget; spin, g = spin+1, int(got.Load()) {
			failed()
			if time.Now().After(stall) {
				t.Fatalf("stalled: sent %d, received %d of %d (lost?)", sent, g, len(sizes))
			}
			pause(spin)
		}
		entries := k
		if mode == runs {
			entries = stageRuns(msgs, stage, sizes[sent:sent+k], sent, dst)
		} else {
			for i := range k {
				m := &msgs[i]
				m.N, m.Addr, m.Tail = sizes[sent+i], dst, nil
				stamp(m.Buf[:m.N], uint64(sent+i))
				if mode == tails && m.N > 0 {
					moveToTail(m, uint64(sent+i), tailBufs[i].Buf)
				}
			}
		}
		n, err := tx.WriteBatch(msgs[:entries])
		if err != nil || n != entries {
			t.Fatalf("WriteBatch = %d, %v; want %d", n, err, entries)
		}
		sent += k
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out: received %d of %d", got.Load(), len(sizes))
	}
}

// stageRuns lays out datagrams first, first+1, ... of sizes stamped and
// back to back in stage, and makes msgs' entries of them, to dst: runs
// (Datagram.Seg) of equal sizes, each ended by a shorter datagram, and
// empty datagrams on their own. It returns the number of entries.
func stageRuns(msgs []Datagram, stage []byte, sizes []int, first int, dst netip.AddrPort) int {
	e, at := -1, 0
	for i, size := range sizes {
		b := stage[at : at+size]
		stamp(b, uint64(first+i))
		if r := &msgs[max(e, 0)]; e >= 0 && r.Seg > 0 && size > 0 && size <= r.Seg && r.N%r.Seg == 0 {
			r.Buf, r.N = stage[at-r.N:at+size], r.N+size
		} else {
			e++
			msgs[e] = Datagram{Buf: b, N: size, Addr: dst, Seg: size}
			if size == 0 {
				msgs[e].Seg = 0 // a run has bytes: an empty datagram goes alone
			}
		}
		at += size
	}
	return e + 1
}

// receiveAll reads len(sizes) datagrams from rx and checks them; got counts
// them as they come. With into, it reads with ReadInto where rx has it.
func receiveAll(rx Conn, sizes []int, from netip.AddrPort, got *atomic.Int64, into bool) error {
	seen := make([]bool, len(sizes))
	msgs := newMsgs(rx.BatchSize(), DefaultMaxDatagram)
	read := rx.ReadBatch
	if rr, ok := rx.(RegionReader); ok && into {
		// Bufs for the first BatchSize: without GRO, ReadInto reads into them.
		region, more := NewRegion(4)
		msgs = append(msgs, more[len(msgs):]...)
		read = func(msgs []Datagram) (int, error) { return rr.ReadInto(region, msgs) }
	}
	for n := 0; n < len(sizes); {
		k, err := read(msgs)
		if err != nil {
			return fmt.Errorf("ReadBatch after %d datagrams: %w", n, err)
		}
		if k < 1 || k > len(msgs) || !into && k > rx.BatchSize() {
			return fmt.Errorf("ReadBatch returned %d datagrams, want 1..%d", k, rx.BatchSize())
		}
		for _, m := range msgs[:k] {
			seq, ok := unstamp(m.Buf[:m.N])
			switch {
			case seq >= uint64(len(sizes)):
				return fmt.Errorf("datagram of %d bytes has sequence number %d", m.N, seq)
			case !ok || m.N != sizes[seq]:
				return fmt.Errorf("datagram %d: %d bytes (want %d), intact %v", seq, m.N, sizes[seq], ok)
			case seen[seq]:
				return fmt.Errorf("datagram %d received twice", seq)
			case !from.Addr().IsUnspecified() && m.Addr != from:
				return fmt.Errorf("datagram %d from %v, want %v", seq, m.Addr, from)
			}
			seen[seq] = true
		}
		n += k
		got.Store(int64(n))
	}
	return nil
}

// pause waits a little for another goroutine: by yielding at first, then
// by sleeping, which lets the runtime poll the network even with
// GOMAXPROCS=1 (a goroutine that only yields would starve the poller).
func pause(spin int) {
	if spin < 50 {
		runtime.Gosched()
	} else {
		time.Sleep(20 * time.Microsecond)
	}
}

func TestLoopbackTransfer(t *testing.T) {
	const n = 10_000
	tests := []struct {
		name  string
		addr  string
		cfg   Config
		sizes []int
		mode  sendMode
		into  bool
	}{
		{"flare/offload", "127.0.0.1:0", Config{}, sameSizes(n, flarePacket), whole, false},
		{"flare/no-offload", "127.0.0.1:0", Config{DisableOffload: true}, sameSizes(n, flarePacket), whole, false},
		{"flare/batch1", "127.0.0.1:0", Config{BatchSize: 1}, sameSizes(n, flarePacket), whole, false},
		{"mixed/offload", "127.0.0.1:0", Config{}, mixedSizes(n, 1), whole, false},
		{"mixed/no-offload", "127.0.0.1:0", Config{DisableOffload: true}, mixedSizes(n, 2), whole, false},
		{"ipv6/offload", "[::1]:0", Config{}, mixedSizes(n, 3), whole, false},
		{"tails/flare/offload", "127.0.0.1:0", Config{}, sameSizes(n, flarePacket), tails, false},
		{"tails/mixed/offload", "127.0.0.1:0", Config{}, mixedSizes(n, 4), tails, false},
		{"tails/mixed/no-offload", "127.0.0.1:0", Config{DisableOffload: true}, mixedSizes(n, 5), tails, false},
		{"into/flare/offload", "127.0.0.1:0", Config{}, sameSizes(n, flarePacket), whole, true},
		{"into/mixed/offload", "127.0.0.1:0", Config{}, mixedSizes(n, 6), whole, true},
		{"into/mixed/no-offload", "127.0.0.1:0", Config{DisableOffload: true}, mixedSizes(n, 7), whole, true},
		{"into/ipv6/offload", "[::1]:0", Config{}, mixedSizes(n, 8), tails, true},
		{"busy-poll/offload", "127.0.0.1:0", Config{BusyPoll: DefaultBusyPoll}, mixedSizes(n, 9), tails, false},
		{"busy-poll/no-offload", "127.0.0.1:0", Config{BusyPoll: DefaultBusyPoll, DisableOffload: true}, mixedSizes(n, 10), whole, false},
		{"runs/flare/offload", "127.0.0.1:0", Config{}, sameSizes(n, flarePacket), runs, false},
		{"runs/mixed/offload", "127.0.0.1:0", Config{}, mixedSizes(n, 11), runs, false},
		{"runs/mixed/no-offload", "127.0.0.1:0", Config{DisableOffload: true}, mixedSizes(n, 12), runs, false},
		{"runs/mixed/batch3", "127.0.0.1:0", Config{BatchSize: 3}, mixedSizes(n, 13), runs, true},
		{"runs/ipv6/offload", "[::1]:0", Config{}, mixedSizes(n, 14), runs, true},
		{"busy-poll/into/offload", "127.0.0.1:0", Config{BusyPoll: DefaultBusyPoll}, sameSizes(n, flarePacket), whole, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rx, err := ListenUDP(tt.addr, tt.cfg)
			if err != nil && tt.addr == "[::1]:0" {
				t.Skipf("no IPv6 loopback: %v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer rx.Close()
			tx := listenLoopback(t, tt.addr, tt.cfg)
			t.Logf("offload: tx %+v, rx %+v", tx.Offload(), rx.Offload())
			transferWith(t, tx, rx, rx.LocalAddr(), tt.sizes, tt.mode, tt.into)
		})
	}
}

// An IPv4 host reaches a switch listening on ":0" (an IPv6 socket taking
// both families), is seen by its IPv4 address, and the reply finds it.
func TestLoopbackDualStack(t *testing.T) {
	sw := listenLoopback(t, ":0", Config{})
	host := listenLoopback(t, "127.0.0.1:0", Config{})
	to := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), sw.LocalAddr().Port())
	transfer(t, host, sw, to, sameSizes(500, flarePacket))
	transfer(t, sw, host, host.LocalAddr(), sameSizes(500, flarePacket))
}

// closeUnblocks checks that Close wakes a blocked ReadBatch with
// net.ErrClosed, and that later calls fail the same way.
func closeUnblocks(t *testing.T, c Conn) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		_, err := c.ReadBatch(newMsgs(4, 64))
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond) // let it block
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("blocked ReadBatch after Close: %v, want net.ErrClosed", err)
		}
		t.Logf("reader woke %v after Close", time.Since(start))
	case <-time.After(2 * time.Second):
		t.Fatal("ReadBatch still blocked 2s after Close")
	}
	if _, err := c.ReadBatch(newMsgs(1, 64)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("ReadBatch after Close: %v, want net.ErrClosed", err)
	}
	msgs := newMsgs(1, 64)
	msgs[0].N, msgs[0].Addr = 8, netip.MustParseAddrPort("127.0.0.1:9")
	if _, err := c.WriteBatch(msgs); !errors.Is(err, net.ErrClosed) {
		t.Errorf("WriteBatch after Close: %v, want net.ErrClosed", err)
	}
}

func TestCloseUnblocksRead(t *testing.T) {
	t.Run("loopback", func(t *testing.T) {
		c, err := ListenUDP("127.0.0.1:0", Config{})
		if err != nil {
			t.Fatal(err)
		}
		closeUnblocks(t, c)
	})
	t.Run("loopback/busy-poll", func(t *testing.T) {
		c, err := ListenUDP("127.0.0.1:0", Config{BusyPoll: DefaultBusyPoll})
		if err != nil {
			t.Fatal(err)
		}
		closeUnblocks(t, c)
	})
	t.Run("loopback/no-offload", func(t *testing.T) {
		c, err := ListenUDP("127.0.0.1:0", Config{DisableOffload: true})
		if err != nil {
			t.Fatal(err)
		}
		closeUnblocks(t, c)
	})
	t.Run("mem", func(t *testing.T) {
		c, err := NewMemNetwork().Listen(netip.AddrPort{})
		if err != nil {
			t.Fatal(err)
		}
		closeUnblocks(t, c)
	})
}

// A datagram longer than the reader's buffer is dropped, not cut short, and
// the datagrams around it still arrive, whether or not they were coalesced.
func TestLoopbackOversizeDropped(t *testing.T) {
	for _, cfg := range []Config{{}, {DisableOffload: true}} {
		t.Run(fmt.Sprintf("offload=%v", !cfg.DisableOffload), func(t *testing.T) {
			tx := listenLoopback(t, "127.0.0.1:0", cfg)
			rx := listenLoopback(t, "127.0.0.1:0", cfg)
			sizes := []int{2000, 100, 1600, 1600, 1600, 200, 3000, 300, 300}
			want := []int{100, 200, 300, 300}
			msgs := newMsgs(len(sizes), DefaultMaxDatagram)
			for i, s := range sizes {
				msgs[i].N, msgs[i].Addr = s, rx.LocalAddr()
				stamp(msgs[i].Buf[:s], uint64(i))
			}
			if n, err := tx.WriteBatch(msgs); n != len(sizes) || err != nil {
				t.Fatalf("WriteBatch = %d, %v", n, err)
			}
			in := newMsgs(8, 1500)
			var got []int
			for len(got) < len(want) {
				n, err := rx.ReadBatch(in)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range in[:n] {
					if _, ok := unstamp(m.Buf[:m.N]); !ok {
						t.Fatalf("corrupt datagram of %d bytes", m.N)
					}
					got = append(got, m.N)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("received sizes %v, want %v", got, want)
			}
			if tc, ok := rx.(interface{ Truncated() uint64 }); ok && tc.Truncated() != uint64(len(sizes)-len(want)) {
				t.Errorf("%d datagrams counted as too large, want %d", tc.Truncated(), len(sizes)-len(want))
			}
		})
	}
}

func TestWriteBatchRejects(t *testing.T) {
	tx := listenLoopback(t, "127.0.0.1:0", Config{MaxDatagram: 1500})
	rx := listenLoopback(t, "127.0.0.1:0", Config{})
	tests := []struct {
		name string
		bad  Datagram
		want error
	}{
		{"too large", Datagram{Buf: make([]byte, 2000), N: 1501, Addr: rx.LocalAddr()}, ErrDatagramTooLarge},
		{"N past buffer", Datagram{Buf: make([]byte, 10), N: 11, Addr: rx.LocalAddr()}, ErrDatagramTooLarge},
		{"N negative", Datagram{Buf: make([]byte, 10), N: -1, Addr: rx.LocalAddr()}, ErrDatagramTooLarge},
		{"unspecified address", Datagram{Buf: make([]byte, 10), N: 10, Addr: netip.AddrPortFrom(netip.IPv4Unspecified(), rx.LocalAddr().Port())}, ErrBadAddr},
		{"no address", Datagram{Buf: make([]byte, 10), N: 10}, ErrBadAddr},
		{"port 0", Datagram{Buf: make([]byte, 10), N: 10, Addr: netip.MustParseAddrPort("127.0.0.1:0")}, ErrBadAddr},
		{"run with a tail", Datagram{Buf: make([]byte, 10), N: 10, Seg: 5, Tail: make([]byte, 3), Addr: rx.LocalAddr()}, ErrBadRun},
		{"run of nothing", Datagram{Buf: make([]byte, 10), Seg: 5, Addr: rx.LocalAddr()}, ErrBadRun},
		{"run of datagrams too large", Datagram{Buf: make([]byte, 4000), N: 3002, Seg: 1501, Addr: rx.LocalAddr()}, ErrDatagramTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs := newMsgs(4, 100)
			for i := range msgs {
				msgs[i].N, msgs[i].Addr = 100, rx.LocalAddr()
				stamp(msgs[i].Buf, uint64(i))
			}
			msgs[2] = tt.bad
			n, err := tx.WriteBatch(msgs)
			if n != 2 || !errors.Is(err, tt.want) {
				t.Fatalf("WriteBatch = %d, %v; want 2, %v", n, err, tt.want)
			}
			in := newMsgs(4, 200)
			for got := 0; got < 2; {
				k, err := rx.ReadBatch(in)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range in[:k] {
					if seq, ok := unstamp(m.Buf[:m.N]); !ok || seq != uint64(got) {
						t.Fatalf("got datagram %d (intact %v), want %d", seq, ok, got)
					}
					got++
				}
			}
		})
	}
}

func TestConnConfigValidate(t *testing.T) {
	for _, cfg := range []Config{{BatchSize: -1}, {BatchSize: MaxBatchSize + 1}, {MaxDatagram: MaxDatagramLimit + 1}, {MaxDatagram: -5}} {
		if _, err := ListenUDP("127.0.0.1:0", cfg); err == nil {
			t.Errorf("ListenUDP with %+v: no error", cfg)
		}
	}
	for cfg, want := range map[Config]string{
		{BusyPoll: -time.Nanosecond}: "busy poll = -1ns: must be in 0..10ms",
		{BusyPoll: MaxBusyPoll + 1}:  "busy poll = 10.000001ms: must be in 0..10ms",
	} {
		if _, err := ListenUDP("127.0.0.1:0", cfg); err == nil || !strings.HasSuffix(err.Error(), ": "+want) {
			t.Errorf("ListenUDP with %+v: %v, want %q", cfg, err, want)
		}
	}
	c := listenLoopback(t, "127.0.0.1:0", Config{BatchSize: 7})
	if c.BatchSize() != 7 {
		t.Errorf("BatchSize() = %d, want 7", c.BatchSize())
	}
}

// With BusyPoll a reader takes a datagram that comes while it polls and
// one that comes after it has gone to sleep, and each ReadBatch returns
// what came, not a spurious empty batch; Close while it polls ends the
// read with net.ErrClosed.
func TestBusyPoll(t *testing.T) {
	rx := listenLoopback(t, "127.0.0.1:0", Config{BusyPoll: MaxBusyPoll})
	tx := listenLoopback(t, "127.0.0.1:0", Config{})
	for i, wait := range []time.Duration{time.Millisecond, 3 * MaxBusyPoll} {
		got := make(chan error, 1)
		in := newMsgs(4, DefaultMaxDatagram)
		go func() {
			n, err := rx.ReadBatch(in)
			if err == nil && (n != 1 || in[0].N != flarePacket || binary.BigEndian.Uint64(in[0].Buf) != uint64(i)) {
				err = fmt.Errorf("got %d datagrams, the first of %d bytes", n, in[0].N)
			}
			got <- err
		}()
		time.Sleep(wait) // within the poll, then past it
		out := newMsgs(1, flarePacket)
		out[0].N, out[0].Addr = flarePacket, rx.LocalAddr()
		stamp(out[0].Buf, uint64(i))
		if _, err := tx.WriteBatch(out); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-got:
			if err != nil {
				t.Errorf("sent %v after the read began: %v", wait, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("sent %v after the read began: not received in 5 s", wait)
		}
	}
	errc := make(chan error, 1)
	go func() {
		_, err := rx.ReadBatch(newMsgs(4, DefaultMaxDatagram))
		errc <- err
	}()
	time.Sleep(time.Millisecond) // within the poll
	rx.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("ReadBatch closed while it polled: %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ReadBatch closed while it polled: still reading 5 s later")
	}
}
