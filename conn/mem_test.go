package conn

import (
	"errors"
	"math"
	"net/netip"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// memPair returns two conns on a fresh network.
func memPair(t *testing.T, n *MemNetwork) (a, b Conn) {
	t.Helper()
	a, err := n.Listen(netip.AddrPort{})
	if err != nil {
		t.Fatal(err)
	}
	b, err = n.Listen(netip.AddrPort{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// sendSeq sends datagrams first..first+count-1 of size bytes in batches.
func sendSeq(t *testing.T, c Conn, to netip.AddrPort, first, count, size int) {
	t.Helper()
	msgs := newMsgs(c.BatchSize(), size)
	for sent := 0; sent < count; {
		k := min(len(msgs), count-sent)
		for i := range k {
			msgs[i].N, msgs[i].Addr = size, to
			stamp(msgs[i].Buf, uint64(first+sent+i))
		}
		if n, err := c.WriteBatch(msgs[:k]); n != k || err != nil {
			t.Fatalf("WriteBatch = %d, %v; want %d", n, err, k)
		}
		sent += k
	}
}

// recvSeqs reads until count datagrams have arrived (or timeout passes
// without one) and returns their sequence numbers in arrival order.
func recvSeqs(t *testing.T, c Conn, count int, timeout time.Duration) []uint64 {
	t.Helper()
	type result struct {
		seqs []uint64
		err  error
	}
	res := make(chan result, 1)
	go func() {
		var seqs []uint64
		msgs := newMsgs(c.BatchSize(), DefaultMaxDatagram)
		for len(seqs) < count {
			n, err := c.ReadBatch(msgs)
			if err != nil {
				res <- result{seqs, err}
				return
			}
			for _, m := range msgs[:n] {
				seq, ok := unstamp(m.Buf[:m.N])
				if !ok {
					res <- result{seqs, errors.New("corrupt datagram")}
					return
				}
				seqs = append(seqs, seq)
			}
		}
		res <- result{seqs, nil}
	}()
	select {
	case r := <-res:
		if r.err != nil {
			t.Fatalf("after %d datagrams: %v", len(r.seqs), r.err)
		}
		return r.seqs
	case <-time.After(timeout):
		c.Close() // stops the reader
		r := <-res
		return r.seqs
	}
}

func TestMemRoundTrip(t *testing.T) {
	n := NewMemNetwork()
	a, b := memPair(t, n)
	if a.LocalAddr() == b.LocalAddr() || !a.LocalAddr().IsValid() {
		t.Fatalf("addresses %v and %v", a.LocalAddr(), b.LocalAddr())
	}
	sendSeq(t, a, b.LocalAddr(), 0, 500, flarePacket)
	seqs := recvSeqs(t, b, 500, 5*time.Second)
	for i, s := range seqs {
		if s != uint64(i) {
			t.Fatalf("datagram %d has sequence %d: reordered without faults", i, s)
		}
	}
	// And back, to check the source address.
	sendSeq(t, b, a.LocalAddr(), 0, 1, 64)
	msgs := newMsgs(4, 100)
	k, err := a.ReadBatch(msgs)
	if err != nil || k != 1 || msgs[0].Addr != b.LocalAddr() || msgs[0].N != 64 {
		t.Fatalf("ReadBatch = %d, %v, datagram %d bytes from %v", k, err, msgs[0].N, msgs[0].Addr)
	}
	if st := n.Stats(); st.Delivered != 501 || st != (MemStats{Delivered: 501}) {
		t.Errorf("stats %+v", st)
	}
}

// A datagram sent in two parts, Buf and Tail, arrives whole, with and
// without faults (which deliver one at a time).
func TestMemTail(t *testing.T) {
	for _, faults := range []Faults{{}, {Reorder: 0.5, Seed: 1}} {
		n := NewMemNetwork()
		n.Faults = faults
		a, b := memPair(t, n)
		const count = 300
		out := newMsgs(DefaultBatchSize, flarePacket)
		tails := newMsgs(DefaultBatchSize, flarePacket)
		for sent := 0; sent < count; {
			k := min(len(out), count-sent)
			for i := range k {
				m := &out[i]
				m.N, m.Addr, m.Tail = flarePacket, b.LocalAddr(), nil
				stamp(m.Buf[:m.N], uint64(sent+i))
				moveToTail(m, uint64(sent+i), tails[i].Buf)
			}
			if w, err := a.WriteBatch(out[:k]); w != k || err != nil {
				t.Fatalf("WriteBatch = %d, %v; want %d", w, err, k)
			}
			sent += k
		}
		in := newMsgs(DefaultBatchSize, DefaultMaxDatagram)
		seen := make([]bool, count)
		for got := 0; got < count; {
			k, err := b.ReadBatch(in)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range in[:k] {
				seq, ok := unstamp(m.Buf[:m.N])
				if !ok || m.N != flarePacket || seq >= count || seen[seq] {
					t.Fatalf("faults %+v: datagram %d of %d bytes, intact %v, seen %v", faults, seq, m.N, ok, seq < count && seen[seq])
				}
				seen[seq] = true
			}
			got += k
		}
	}
}

// Runs (Datagram.Seg) arrive as their datagrams, each whole and on its
// own, the last of a run shorter, with and without faults.
func TestMemRuns(t *testing.T) {
	for _, faults := range []Faults{{}, {Reorder: 0.5, Seed: 2}} {
		n := NewMemNetwork()
		n.Faults, n.QueueLen = faults, 4096 // every datagram is queued before the first is read
		a, b := memPair(t, n)
		sizes := mixedSizes(2000, 3)
		stage := make([]byte, DefaultBatchSize*DefaultMaxDatagram)
		out := make([]Datagram, DefaultBatchSize)
		for sent := 0; sent < len(sizes); {
			k := min(len(out), len(sizes)-sent)
			entries := stageRuns(out, stage, sizes[sent:sent+k], sent, b.LocalAddr())
			if w, err := a.WriteBatch(out[:entries]); w != entries || err != nil {
				t.Fatalf("WriteBatch = %d, %v; want %d", w, err, entries)
			}
			sent += k
		}
		var got atomic.Int64
		done := make(chan error, 1)
		go func() { done <- receiveAll(b, sizes, a.LocalAddr(), &got, false) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("faults %+v: %v", faults, err)
			}
		case <-time.After(10 * time.Second):
			b.Close()
			t.Fatalf("faults %+v: %d of %d datagrams after 10 s (stats %+v)", faults, got.Load(), len(sizes), n.Stats())
		}
	}
}

// stamped is n 16-byte datagrams to `to`, numbered 0..n-1.
func stamped(n int, to netip.AddrPort) []Datagram {
	msgs := newMsgs(n, 16)
	for i := range msgs {
		msgs[i].N, msgs[i].Addr = 16, to
		stamp(msgs[i].Buf, uint64(i))
	}
	return msgs
}

// One WriteBatch of more datagrams to one conn than a run gathers (64)
// delivers them all, in order.
func TestMemLongBatch(t *testing.T) {
	n := NewMemNetwork()
	a, b := memPair(t, n)
	msgs := stamped(200, b.LocalAddr())
	if k, err := a.WriteBatch(msgs); k != len(msgs) || err != nil {
		t.Fatalf("WriteBatch = %d, %v; want %d", k, err, len(msgs))
	}
	seqs := recvSeqs(t, b, len(msgs), 5*time.Second)
	if len(seqs) != len(msgs) || !slices.IsSorted(seqs) || seqs[len(seqs)-1] != uint64(len(msgs)-1) {
		t.Fatalf("received %d of %d datagrams: %v", len(seqs), len(msgs), seqs)
	}
}

// A send the socket layer would refuse (too large, to no address) is
// refused as UDP refuses it: the datagrams before it go, it and the rest
// do not, and the error says which rule.
func TestMemSendChecks(t *testing.T) {
	for _, tc := range []struct {
		name string
		bad  Datagram
		want error
	}{
		{"too large", Datagram{Buf: make([]byte, DefaultMaxDatagram+1), N: DefaultMaxDatagram + 1}, ErrDatagramTooLarge},
		{"no address", Datagram{Buf: make([]byte, 16), N: 16}, ErrBadAddr},
		{"port 0", Datagram{Buf: make([]byte, 16), N: 16, Addr: netip.MustParseAddrPort("127.0.0.1:0")}, ErrBadAddr},
	} {
		n := NewMemNetwork()
		a, b := memPair(t, n)
		msgs := stamped(3, b.LocalAddr())
		if tc.bad.Addr == (netip.AddrPort{}) && tc.want != ErrBadAddr {
			tc.bad.Addr = b.LocalAddr()
		}
		msgs[1] = tc.bad
		if k, err := a.WriteBatch(msgs); k != 1 || !errors.Is(err, tc.want) {
			t.Errorf("%s: WriteBatch = %d, %v; want 1 sent and %v", tc.name, k, err, tc.want)
		}
		if st := n.Stats(); st != (MemStats{Delivered: 1}) {
			t.Errorf("%s: stats %+v, want the first datagram delivered and nothing else", tc.name, st)
		}
	}
}

// A datagram that arrives after its receiver closed (here, delayed) is
// counted as sent to nobody, not queued.
func TestMemClosedReceiver(t *testing.T) {
	n := NewMemNetwork()
	n.Faults.Delay = 20 * time.Millisecond
	a, b := memPair(t, n)
	sendSeq(t, a, b.LocalAddr(), 0, 3, 16)
	b.Close()
	for deadline := time.Now().Add(5 * time.Second); n.Stats().NoRoute < 3; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v 5 s after the close: want the 3 late datagrams counted as sent to nobody", n.Stats())
		}
	}
	if st := n.Stats(); st != (MemStats{NoRoute: 3}) {
		t.Errorf("stats %+v, want 3 sent to nobody and nothing delivered", st)
	}
}

// Port 0 picks a free ephemeral port, past the ones taken.
func TestMemEphemeralPorts(t *testing.T) {
	n := NewMemNetwork()
	for _, p := range []uint16{memPortFirst, memPortFirst + 1} {
		c, err := n.Listen(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), p))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	c, err := n.Listen(netip.AddrPort{})
	if err != nil {
		t.Fatalf("Listen on port 0 with the first two ephemeral ports taken: %v", err)
	}
	defer c.Close()
	if p := c.LocalAddr().Port(); p != memPortFirst+2 {
		t.Errorf("port %d, want %d", p, memPortFirst+2)
	}
}

func TestMemAddressing(t *testing.T) {
	n := NewMemNetwork()
	at := netip.MustParseAddrPort("10.0.0.1:7470")
	c, err := n.Listen(at)
	if err != nil || c.LocalAddr() != at {
		t.Fatalf("Listen(%v) = %v, %v", at, c.LocalAddr(), err)
	}
	if _, err := n.Listen(at); err == nil {
		t.Error("second Listen on the same address succeeded")
	}
	wild, err := n.Listen(netip.MustParseAddrPort("[::]:9000"))
	if err != nil {
		t.Fatal(err)
	}
	wild4, err := n.Listen(netip.MustParseAddrPort("0.0.0.0:9000"))
	if err != nil {
		t.Fatal(err)
	}
	defer wild4.Close()
	// A mapped address is bound as the IPv4 one.
	mapped, err := n.Listen(netip.MustParseAddrPort("[::ffff:10.0.0.3]:7471"))
	if err != nil || mapped.LocalAddr() != netip.MustParseAddrPort("10.0.0.3:7471") {
		t.Fatalf("Listen([::ffff:10.0.0.3]:7471) = %v, %v; want 10.0.0.3:7471", mapped, err)
	}
	defer mapped.Close()
	host, _ := memPair(t, n)
	// Mapped and wildcard destinations reach the right conns; nobody at
	// 10.0.0.2 is counted, not an error.
	sendSeq(t, host, netip.MustParseAddrPort("[::ffff:10.0.0.1]:7470"), 0, 1, 16)
	sendSeq(t, host, netip.MustParseAddrPort("192.0.2.1:9000"), 1, 1, 16)
	sendSeq(t, host, netip.MustParseAddrPort("10.0.0.2:7470"), 2, 1, 16)
	sendSeq(t, host, netip.MustParseAddrPort("[2001:db8::1]:9000"), 3, 1, 16)
	sendSeq(t, host, netip.MustParseAddrPort("10.0.0.3:7471"), 4, 1, 16)
	if s := recvSeqs(t, c, 1, time.Second); len(s) != 1 || s[0] != 0 {
		t.Errorf("at %v got %v", at, s)
	}
	// An IPv4 destination reaches 0.0.0.0 before [::]; an IPv6 one, [::].
	if s := recvSeqs(t, wild4, 1, time.Second); len(s) != 1 || s[0] != 1 {
		t.Errorf("at 0.0.0.0:9000 got %v", s)
	}
	if s := recvSeqs(t, wild, 1, time.Second); len(s) != 1 || s[0] != 3 {
		t.Errorf("at [::]:9000 got %v", s)
	}
	if s := recvSeqs(t, mapped, 1, time.Second); len(s) != 1 || s[0] != 4 {
		t.Errorf("at 10.0.0.3:7471 got %v", s)
	}
	if st := n.Stats(); st.NoRoute != 1 {
		t.Errorf("NoRoute = %d, want 1", st.NoRoute)
	}
	// Closing frees the address.
	c.Close()
	if c2, err := n.Listen(at); err != nil {
		t.Errorf("Listen after Close: %v", err)
	} else {
		c2.Close()
	}
}

// One batch to several destinations, in runs and interleaved, reaches
// each conn with its own datagrams in order: WriteBatch keeps the last
// address's route, and must look up every change of address.
func TestMemBatchOfDestinations(t *testing.T) {
	n := NewMemNetwork()
	host, a := memPair(t, n)
	b, err := n.Listen(netip.AddrPort{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	nobody := netip.MustParseAddrPort("10.0.0.9:1")
	to := []netip.AddrPort{a.LocalAddr(), a.LocalAddr(), b.LocalAddr(), nobody, a.LocalAddr(), b.LocalAddr(), b.LocalAddr(), nobody}
	msgs := newMsgs(len(to), 16)
	for i := range msgs {
		msgs[i].N, msgs[i].Addr = 16, to[i]
		stamp(msgs[i].Buf, uint64(i))
	}
	if k, err := host.WriteBatch(msgs); k != len(msgs) || err != nil {
		t.Fatalf("WriteBatch = %d, %v; want %d", k, err, len(msgs))
	}
	if s := recvSeqs(t, a, 3, time.Second); !slices.Equal(s, []uint64{0, 1, 4}) {
		t.Errorf("a got %v, want [0 1 4]", s)
	}
	if s := recvSeqs(t, b, 3, time.Second); !slices.Equal(s, []uint64{2, 5, 6}) {
		t.Errorf("b got %v, want [2 5 6]", s)
	}
	if st := n.Stats(); st.NoRoute != 2 || st.Delivered != 6 {
		t.Errorf("NoRoute = %d, Delivered = %d; want 2 and 6", st.NoRoute, st.Delivered)
	}
}

// A full receive queue drops and counts, like a socket buffer; a datagram
// larger than the reader's buffer is dropped and counted too.
func TestMemOverflowAndTruncation(t *testing.T) {
	n := NewMemNetwork()
	n.QueueLen = 10
	a, b := memPair(t, n)
	sendSeq(t, a, b.LocalAddr(), 0, 25, 100)
	if st := n.Stats(); st.Delivered != 10 || st.Overflow != 15 {
		t.Fatalf("stats %+v, want 10 delivered and 15 overflowing", st)
	}
	sendSeq(t, a, b.LocalAddr(), 25, 1, 100) // one more, alone
	if st := n.Stats(); st.Delivered != 10 || st.Overflow != 16 {
		t.Fatalf("stats %+v after one more, want 10 delivered and 16 overflowing", st)
	}
	msgs := newMsgs(20, 50)
	msgs[0].Buf = make([]byte, 200)
	k, err := b.ReadBatch(msgs)
	if err != nil || k != 1 {
		t.Fatalf("ReadBatch = %d, %v; want only the one that fits", k, err)
	}
	if st := n.Stats(); st.Truncated != 9 {
		t.Errorf("Truncated = %d, want 9", st.Truncated)
	}
}

// Faults are drawn from the seed: the counts are near the probabilities,
// the same seed gives the same run, and what arrives matches the counts.
func TestMemFaults(t *testing.T) {
	const sent = 10_000
	tests := []struct {
		name   string
		faults Faults
	}{
		{"drop", Faults{Drop: 0.1, Seed: 1}},
		{"dup", Faults{Dup: 0.05, Seed: 2}},
		{"reorder", Faults{Reorder: 0.02, Seed: 3}},
		{"all", Faults{Drop: 0.05, Dup: 0.05, Reorder: 0.01, Seed: 4}},
	}
	// within reports whether count is within 5 standard deviations of a
	// binomial(sent, p).
	within := func(count uint64, p float64) bool {
		mean, sd := sent*p, math.Sqrt(sent*p*(1-p))
		return math.Abs(float64(count)-mean) <= 5*sd
	}
	run := func(t *testing.T, f Faults) (MemStats, []uint64) {
		n := NewMemNetwork()
		n.Faults, n.QueueLen = f, 2*sent
		a, b := memPair(t, n)
		sendSeq(t, a, b.LocalAddr(), 0, sent, 64)
		// The drops and duplicates are drawn as the datagrams are sent;
		// reordered ones land MemReorderHold later, so the counts are
		// read once all that should come has.
		st := n.Stats()
		seqs := recvSeqs(t, b, sent-int(st.Dropped)+int(st.Duplicated), 5*time.Second)
		return n.Stats(), seqs
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, seqs := run(t, tt.faults)
			f := tt.faults
			if !within(st.Dropped, f.Drop) || !within(st.Duplicated, f.Dup*(1-f.Drop)) || !within(st.Reordered, f.Reorder*(1-f.Drop)) {
				t.Errorf("stats %+v far from %+v over %d datagrams", st, f, sent)
			}
			if want := sent - st.Dropped + st.Duplicated; uint64(len(seqs)) != want || st.Delivered != want || st.Overflow != 0 {
				t.Errorf("received %d, stats %+v; want %d", len(seqs), st, want)
			}
			late, seen := 0, uint64(0)
			for _, s := range seqs {
				if s < seen {
					late++
				}
				seen = max(seen, s)
			}
			if f.Reorder == 0 && late != 0 || f.Reorder > 0 && late == 0 {
				t.Errorf("%d datagrams arrived after a later one (%d reordered)", late, st.Reordered)
			}
			if again, _ := run(t, f); again != st {
				t.Errorf("same seed, different run: %+v then %+v", st, again)
			}
		})
	}
}

func TestMemDelay(t *testing.T) {
	n := NewMemNetwork()
	n.Faults.Delay = 30 * time.Millisecond
	a, b := memPair(t, n)
	start := time.Now()
	sendSeq(t, a, b.LocalAddr(), 0, 10, 64)
	if got := recvSeqs(t, b, 10, 5*time.Second); len(got) != 10 {
		t.Fatalf("received %d of 10", len(got))
	}
	if d := time.Since(start); d < n.Faults.Delay {
		t.Errorf("arrived after %v, want at least %v", d, n.Faults.Delay)
	}
}

func TestMemZeroAllocs(t *testing.T) {
	a, b := memPair(t, NewMemNetwork())
	out := newMsgs(DefaultBatchSize, flarePacket)
	tails := newMsgs(DefaultBatchSize, flarePacket)
	for i := range out {
		out[i].N, out[i].Addr = flarePacket, b.LocalAddr()
		if i%2 == 1 {
			moveToTail(&out[i], uint64(i), tails[i].Buf)
		}
	}
	in := newMsgs(DefaultBatchSize, DefaultMaxDatagram)
	a.WriteBatch(out) // the first batch with tails sizes the joining scratch
	for got := 0; got < len(out); {
		n, _ := b.ReadBatch(in)
		got += n
	}
	allocs := testing.AllocsPerRun(100, func() {
		a.WriteBatch(out)
		for got := 0; got < len(out); {
			n, _ := b.ReadBatch(in)
			got += n
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per batch, want 0", allocs)
	}
}
