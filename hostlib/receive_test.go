package hostlib

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/wire"
)

// offlineSwitch is the switch address of offline sessions, and
// offlineConn their socket, on a network of its own: what they send goes
// nowhere.
var (
	offlineSwitch  = netip.MustParseAddrPort("127.0.0.1:7470")
	offlineConn, _ = conn.NewMemNetwork().Listen(netip.MustParseAddrPort("127.0.0.1:0"))
)

// offlineSession is a session admitted by ack without a switch: the
// receive path is driven by calling results on crafted batches, with the
// state of call 1 set up (offlineCall).
func offlineSession(t testing.TB, o Options, ack wire.JoinAckBody) *Session {
	t.Helper()
	s := unadmitted(t, o)
	if err := s.admit(&ack); err != nil {
		t.Fatal(err)
	}
	s.offlineCall()
	return s
}

// unadmitted is an offline session before the switch's join-ack.
func unadmitted(t testing.TB, o Options) *Session {
	t.Helper()
	o.Switch = offlineSwitch.String()
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	// No reader, no receive batches: the tests hand datagrams to results.
	s := &Session{opts: o, sw: offlineSwitch, conn: offlineConn, esize: o.DType.Size(), closing: make(chan struct{})}
	s.hdr = wire.Header{Type: wire.TypeData, Job: o.Job, Token: o.Token, Child: uint16(o.Rank), DType: o.DType, Op: o.Op}
	return s
}

// A join-ack that does not fit the job (a switch out of step with it, or
// lying) is refused by name before anything is sized from it: the
// window, the elements or pairs per packet, the block count.
func TestAdmitChecksJoinAck(t *testing.T) {
	dense := Options{Job: 7, Token: 1, Rank: 1, World: 4, DType: wire.Float32, Op: wire.OpSum, Elements: 37}
	sparse := dense
	sparse.Sparse, sparse.Elements = true, 100
	ok := wire.JoinAckBody{Window: 4, Algo: wire.AlgoSingle, PacketElems: 8, Blocks: 5, QuotaBuffers: 8}
	with := func(f func(*wire.JoinAckBody)) wire.JoinAckBody { a := ok; f(&a); return a }
	for _, tc := range []struct {
		name string
		o    Options
		ack  wire.JoinAckBody
		want string
	}{
		{"no window", dense, with(func(a *wire.JoinAckBody) { a.Window = 0 }), "grants a window of 0 blocks"},
		{"no elements per packet", dense, with(func(a *wire.JoinAckBody) { a.PacketElems = 0 }), "asks for 0 elements per packet, outside 1.."},
		{"a packet past a datagram", dense, with(func(a *wire.JoinAckBody) { a.PacketElems = 1 << 20 }), "asks for 1048576 elements per packet, outside 1.."},
		{"blocks that do not cut the vector", dense, with(func(a *wire.JoinAckBody) { a.Blocks = 4 }), "says 4 blocks, but 37 elements in packets of 8 make 5"},
		{"no pairs per packet", sparse, with(func(a *wire.JoinAckBody) { a.PacketElems = 0 }), "asks for 0 pairs per packet, outside 1.."},
		{"more sparse blocks than elements", sparse, with(func(a *wire.JoinAckBody) { a.Blocks = 101 }), "says 101 blocks for 100 elements, outside 1..100"},
		{"sparse blocks that do not cut the vector", sparse, with(func(a *wire.JoinAckBody) { a.Blocks = 40 }), "says 40 blocks, but 100 elements in blocks of 3 make 34"},
	} {
		err := unadmitted(t, tc.o).admit(&tc.ack)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: admit = %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}

// offlineCall resets s to the start of call 1 over a zero vector.
func (s *Session) offlineCall() {
	s.gen, s.aborted = 1, nil
	if s.opts.Sparse {
		for b := range s.sp.asm {
			s.sp.asm[b].Reset()
		}
		s.sp.next = nil
		s.begin(nil, time.Now())
		return
	}
	if s.buf == nil {
		s.buf = make([]byte, s.opts.Elements*s.esize)
	}
	clear(s.buf)
	s.begin(s.buf, time.Now())
}

// deliver hands one datagram from from to s's receive path, as a call does.
func (s *Session) deliver(pkt []byte, from netip.AddrPort) error {
	b := &rxBatch{Batch: &conn.Batch{Msgs: []conn.Datagram{{Buf: pkt, N: len(pkt), Addr: from}}}, n: 1}
	return s.results(b)
}

// Offline sessions of the tests: 4 ranks, float32 sum; dense, exact or
// bounded-time, 37 elements in 5 blocks of 8 (the last of 5); sparse, 100
// elements in 5 blocks of 20 indices, 8 pairs per packet. Small packets
// keep the fuzzer's inputs short.
func offlineDense(t testing.TB, bounded bool) *Session {
	o := Options{Job: 7, Token: 0x0123456789abcdef, Rank: 1, World: 4, DType: wire.Float32, Op: wire.OpSum, Elements: 37}
	if bounded {
		o.BlockDeadline = 5 * time.Millisecond
	}
	return offlineSession(t, o, wire.JoinAckBody{Window: 4, Algo: wire.AlgoSingle, PacketElems: 8, Blocks: 5, QuotaBuffers: 8})
}

func offlineSparse(t testing.TB) *Session {
	o := Options{Job: 7, Token: 0x0123456789abcdef, Rank: 1, World: 4, DType: wire.Float32, Op: wire.OpSum, Elements: 100, Sparse: true}
	return offlineSession(t, o, wire.JoinAckBody{Window: 4, Algo: wire.AlgoSingle, PacketElems: 8, Blocks: 5, QuotaBuffers: 8})
}

// resultHeader is the header of an exact result of block b in call 1.
func resultHeader(b uint32, count uint32) wire.Header {
	return wire.Header{Version: wire.Version, Type: wire.TypeResult, Job: 7, Token: 0x0123456789abcdef, Generation: 1,
		Block: b, DType: wire.Float32, Op: wire.OpSum, Count: count}
}

// sparseHeader is the header of packet seq of block b's result stream.
func sparseHeader(typ wire.Type, b, seq uint32, flags wire.Flags, count uint32) wire.Header {
	return wire.Header{Version: wire.Version, Type: typ, Flags: flags, Job: 7, Token: 0x0123456789abcdef, Generation: 1,
		Block: wire.SparseBlockField(b, seq), DType: wire.Float32, Op: wire.OpSum, Count: count}
}

// pairsOf encodes (index, float32 1.0) pairs.
func pairsOf(idx ...uint32) []byte {
	var out []byte
	for _, i := range idx {
		out = wire.AppendPair(out, i, []byte{0, 0, 0x80, 0x3f})
	}
	return out
}

// TestReceiveChecks feeds a session every kind of packet it must not take
// and checks each is dropped under its reason, never taken, never a
// panic; and that the valid ones are taken.
func TestReceiveChecks(t *testing.T) {
	stranger := netip.MustParseAddrPort("127.0.0.1:7471")
	pkt := func(h wire.Header, payload []byte) []byte { return wire.AppendPacket(nil, &h, payload) }
	with := func(h wire.Header, f func(*wire.Header)) wire.Header { f(&h); return h }
	block0 := make([]byte, 8*4)
	dense := []struct {
		name    string
		bounded bool
		pkt     []byte
		from    netip.AddrPort
		want    func(Drops) uint64 // the counter that must count it; nil: taken
	}{
		{"exact result", false, pkt(resultHeader(0, 8), block0), offlineSwitch, nil},
		{"partial result, no deadline (crashed before)", false, pkt(with(resultHeader(0, 8), func(h *wire.Header) { h.Flags, h.Child = wire.FlagPartial, 2 }), block0), offlineSwitch, func(d Drops) uint64 { return d.Flags }},
		{"partial result, bounded", true, pkt(with(resultHeader(0, 8), func(h *wire.Header) { h.Flags, h.Child = wire.FlagPartial, 2 }), block0), offlineSwitch, nil},
		{"partial result, 0 contributors", true, pkt(with(resultHeader(0, 8), func(h *wire.Header) { h.Flags = wire.FlagPartial }), block0), offlineSwitch, func(d Drops) uint64 { return d.Flags }},
		{"partial result, more contributors than ranks", true, pkt(with(resultHeader(0, 8), func(h *wire.Header) { h.Flags, h.Child = wire.FlagPartial, 5 }), block0), offlineSwitch, func(d Drops) uint64 { return d.Flags }},
		{"from another address", false, pkt(resultHeader(0, 8), block0), stranger, func(d Drops) uint64 { return d.Source }},
		{"from the switch's host, another port", false, pkt(resultHeader(0, 8), block0), netip.AddrPortFrom(offlineSwitch.Addr(), 1), func(d Drops) uint64 { return d.Source }},
		{"wrong token", false, pkt(with(resultHeader(0, 8), func(h *wire.Header) { h.Token++ }), block0), offlineSwitch, func(d Drops) uint64 { return d.Token }},
		{"other job", false, pkt(with(resultHeader(0, 8), func(h *wire.Header) { h.Job++ }), block0), offlineSwitch, func(d Drops) uint64 { return d.Job }},
		{"block past the vector", false, pkt(resultHeader(5, 8), block0), offlineSwitch, func(d Drops) uint64 { return d.Block }},
		{"block 2^32-1", false, pkt(resultHeader(1<<32-1, 8), block0), offlineSwitch, func(d Drops) uint64 { return d.Block }},
		{"last block, full count", false, pkt(resultHeader(4, 8), block0), offlineSwitch, func(d Drops) uint64 { return d.Length }},
		{"short count", false, pkt(resultHeader(0, 7), block0[:7*4]), offlineSwitch, func(d Drops) uint64 { return d.Length }},
		{"next generation", false, pkt(with(resultHeader(0, 8), func(h *wire.Header) { h.Generation = 2 }), block0), offlineSwitch, func(d Drops) uint64 { return d.Generation }},
		{"other dtype", false, pkt(with(resultHeader(0, 8), func(h *wire.Header) { h.DType = wire.Int32 }), block0), offlineSwitch, func(d Drops) uint64 { return d.Type }},
		{"other op", false, pkt(with(resultHeader(0, 8), func(h *wire.Header) { h.Op = wire.OpMax }), block0), offlineSwitch, func(d Drops) uint64 { return d.Type }},
		{"from-switch flag", false, pkt(with(resultHeader(0, 8), func(h *wire.Header) { h.Flags = wire.FlagFromSwitch }), block0), offlineSwitch, func(d Drops) uint64 { return d.Flags }},
		{"last flag", false, pkt(with(resultHeader(0, 8), func(h *wire.Header) { h.Flags = wire.FlagLast }), block0), offlineSwitch, func(d Drops) uint64 { return d.Flags }},
		{"a host's data", false, pkt(with(resultHeader(0, 8), func(h *wire.Header) { h.Type = wire.TypeData }), block0), offlineSwitch, func(d Drops) uint64 { return d.Type }},
		{"sparse packet to a dense job", false, pkt(sparseHeader(wire.TypeSparse, 0, 0, wire.FlagLast, 1), pairsOf(3)), offlineSwitch, func(d Drops) uint64 { return d.Type }},
		{"truncated", false, pkt(resultHeader(0, 8), block0)[:40], offlineSwitch, func(d Drops) uint64 { return d.Malformed }},
		{"10 bytes", false, make([]byte, 10), offlineSwitch, func(d Drops) uint64 { return d.Malformed }},
		{"error about a join", false, wire.AppendError(nil, &wire.Header{Job: 7, Token: 0x0123456789abcdef}, wire.CodeJobMismatch, "x"), offlineSwitch, func(d Drops) uint64 { return d.Unexpected }},
		{"error about another call", false, wire.AppendError(nil, &wire.Header{Job: 7, Token: 0x0123456789abcdef, Generation: 5}, wire.CodeTimeout, "x"), offlineSwitch, func(d Drops) uint64 { return d.Generation }},
		{"aborted notice from a stranger", false, wire.AppendError(nil, &wire.Header{Job: 7, Token: 0x0123456789abcdef}, wire.CodeAborted, "rank 2: x"), stranger, func(d Drops) uint64 { return d.Source }},
		{"repeated join-ack", false, wire.AppendJoinAck(nil, &wire.Header{Job: 7, Token: 0x0123456789abcdef}, &wire.JoinAckBody{Window: 4, Algo: wire.AlgoSingle}), offlineSwitch, func(d Drops) uint64 { return d.Unexpected }},
	}
	for _, tt := range dense {
		t.Run(tt.name, func(t *testing.T) {
			s := offlineDense(t, tt.bounded)
			if err := s.deliver(tt.pkt, tt.from); err != nil {
				t.Fatal(err)
			}
			st := s.Stats()
			if tt.want == nil {
				if s.trk.completed != 1 || st.Ignored != 0 {
					t.Fatalf("valid result not taken: completed %d, dropped %+v", s.trk.completed, st.Dropped)
				}
				return
			}
			if s.trk.completed != 0 || tt.want(st.Dropped) != 1 || st.Ignored != 1 {
				t.Errorf("completed %d, ignored %d, dropped %+v; want it dropped under its reason", s.trk.completed, st.Ignored, st.Dropped)
			}
		})
	}

	sparse := []struct {
		name string
		pkt  []byte
		want func(Drops) uint64
	}{
		{"result stream of one packet", pkt(sparseHeader(wire.TypeSparse, 1, 0, wire.FlagLast, 2), pairsOf(0, 19)), nil},
		{"index past the block", pkt(sparseHeader(wire.TypeSparse, 1, 0, wire.FlagLast, 2), pairsOf(0, 20)), func(d Drops) uint64 { return d.Length }},
		{"more pairs than a packet holds", pkt(sparseHeader(wire.TypeSparse, 1, 0, wire.FlagLast, 9), pairsOf(make([]uint32, 9)...)), func(d Drops) uint64 { return d.Length }},
		{"block past the vector", pkt(sparseHeader(wire.TypeSparse, 5, 0, wire.FlagLast, 0), nil), func(d Drops) uint64 { return d.Block }},
		{"spill marked last", pkt(sparseHeader(wire.TypeSpill, 1, 0, wire.FlagLast, 1), pairsOf(3)), func(d Drops) uint64 { return d.Flags }},
		{"partial flag", pkt(sparseHeader(wire.TypeSparse, 1, 0, wire.FlagLast|wire.FlagPartial, 1), pairsOf(3)), func(d Drops) uint64 { return d.Flags }},
		{"other dtype", pkt(with(sparseHeader(wire.TypeSparse, 1, 0, wire.FlagLast, 1), func(h *wire.Header) { h.DType = wire.Int32 }), pairsOf(3)), func(d Drops) uint64 { return d.Type }},
		{"two generations on", pkt(with(sparseHeader(wire.TypeSparse, 1, 0, wire.FlagLast, 1), func(h *wire.Header) { h.Generation = 3 }), pairsOf(3)), func(d Drops) uint64 { return d.Generation }},
		{"dense result to a sparse job", pkt(resultHeader(0, 8), block0), func(d Drops) uint64 { return d.Type }},
	}
	for _, tt := range sparse {
		t.Run("sparse/"+tt.name, func(t *testing.T) {
			s := offlineSparse(t)
			if err := s.deliver(tt.pkt, offlineSwitch); err != nil {
				t.Fatal(err)
			}
			st := s.Stats()
			if tt.want == nil {
				if s.trk.completed != 1 || st.Ignored != 0 {
					t.Fatalf("valid stream not taken: completed %d, dropped %+v", s.trk.completed, st.Dropped)
				}
				return
			}
			if s.trk.completed != 0 || tt.want(st.Dropped) != 1 || st.Ignored != 1 {
				t.Errorf("completed %d, ignored %d, dropped %+v; want it dropped under its reason", s.trk.completed, st.Ignored, st.Dropped)
			}
		})
	}

	t.Run("sparse/packet after the last", func(t *testing.T) {
		s := offlineSparse(t)
		_ = s.deliver(pkt(sparseHeader(wire.TypeSpill, 2, 0, 0, 1), pairsOf(1)), offlineSwitch)
		_ = s.deliver(pkt(sparseHeader(wire.TypeSparse, 2, 1, wire.FlagLast, 0), nil), offlineSwitch) // the stream is 0, 1: complete
		s.trk.reset()                                                                                 // as if the block were still open
		_ = s.deliver(pkt(sparseHeader(wire.TypeSparse, 2, 2, wire.FlagLast, 0), nil), offlineSwitch)
		if st := s.Stats(); st.Dropped.Stream != 1 {
			t.Errorf("dropped %+v; want the packet after the last counted as a stream error", st.Dropped)
		}
	})
}

// The first result of a block is the one kept: a later copy (the
// switch's answer to a retransmission, or anything else that passes the
// checks) does not overwrite it, and is counted as a duplicate.
func TestReceiveFirstResultKept(t *testing.T) {
	s := offlineDense(t, false)
	first, second := bytes.Repeat([]byte{0, 0, 0x80, 0x3f}, 8), bytes.Repeat([]byte{0, 0, 0, 0x40}, 8) // 1.0, 2.0
	h := resultHeader(0, 8)
	if err := s.deliver(wire.AppendPacket(nil, &h, first), offlineSwitch); err != nil {
		t.Fatal(err)
	}
	h.Flags = wire.FlagRetransmit
	if err := s.deliver(wire.AppendPacket(nil, &h, second), offlineSwitch); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(s.buf[:32], first) {
		t.Errorf("block 0 holds % x after a second result, want the first's % x", s.buf[:32], first)
	}
	if st := s.Stats(); st.Duplicates != 1 {
		t.Errorf("Duplicates = %d, want 1", st.Duplicates)
	}
}

// A sparse block's result stream that comes again once the block is whole
// (the switch resends it to a retransmission that crossed it) is counted
// as a duplicate and changes nothing: the block keeps its pairs once.
func TestReceiveSparseDuplicateStream(t *testing.T) {
	s := offlineSparse(t)
	h := sparseHeader(wire.TypeSparse, 0, 0, wire.FlagLast, 2)
	pkt := wire.AppendPacket(nil, &h, pairsOf(1, 7))
	for range 2 {
		if err := s.deliver(pkt, offlineSwitch); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.Duplicates != 1 || st.Dropped != (Drops{}) {
		t.Fatalf("Duplicates = %d, Dropped = %+v after a block's stream twice; want 1 and none", st.Duplicates, st.Dropped)
	}
	if !s.trk.isDone(0) || s.trk.completed != 1 {
		t.Fatalf("block 0 done %v, %d blocks completed; want true, 1", s.trk.isDone(0), s.trk.completed)
	}
	got, err := s.sp.asm[0].Merge(nil, wire.OpSum, 0)
	if err != nil || !bytes.Equal(got, pairsOf(1, 7)) {
		t.Fatalf("block 0 merged to % x (%v), want its pairs once, % x", got, err, pairsOf(1, 7))
	}
}

// A bounded-time session counts each block's contributors: a partial
// result's count, the world for a whole one, and every block whole again
// when the next call starts. A block released partial before this rank
// sent it is not sent: the vector's block holds the result by then.
func TestReceiveContributors(t *testing.T) {
	s := offlineDense(t, true)
	unsent := s.order[len(s.order)-1] // last in this rank's sending order: outside the first window
	partial := func(b uint32, n uint16) []byte {
		h := resultHeader(b, uint32(min(8, 37-8*int(b))))
		h.Flags, h.Child = wire.FlagPartial, n
		return wire.AppendPacket(nil, &h, make([]byte, 4*h.Count))
	}
	whole := resultHeader(1, 8)
	for _, pkt := range [][]byte{partial(unsent, 3), wire.AppendPacket(nil, &whole, make([]byte, 32))} {
		if err := s.deliver(pkt, offlineSwitch); err != nil {
			t.Fatal(err)
		}
	}
	want := []uint16{4, 4, 4, 4, 4}
	want[unsent] = 3
	if got := s.Contributors(); !slices.Equal(got, want) {
		t.Errorf("Contributors() = %v, want %v", got, want)
	}
	for s.trk.next < s.blocks {
		if err := s.launch(0); err != nil {
			t.Fatal(err)
		}
		for _, f := range s.trk.flights {
			if f.block == unsent {
				t.Fatalf("block %d, released partial before this rank sent it, was sent", unsent)
			}
			s.trk.complete(f.block, 0)
		}
	}
	s.gen++
	s.begin(s.buf, time.Now())
	if got := s.Contributors(); !slices.Equal(got, []uint16{4, 4, 4, 4, 4}) {
		t.Errorf("Contributors() at the next call's start = %v, want every block whole", got)
	}
}

// A sparse packet of the next call that arrives before this rank starts
// it (a spill, sent as the other ranks' pairs fill the switch's table) is
// kept and taken when that call starts, not dropped.
func TestReceiveSparseEarlyKept(t *testing.T) {
	s := offlineSparse(t)
	h := sparseHeader(wire.TypeSpill, 2, 0, 0, 2)
	h.Generation = 2
	if err := s.deliver(wire.AppendPacket(nil, &h, pairsOf(1, 7)), offlineSwitch); err != nil {
		t.Fatal(err)
	}
	if d := s.Stats().Dropped; d != (Drops{}) {
		t.Fatalf("the next call's spill was dropped: %+v", d)
	}
	s.gen++
	s.begin(nil, time.Now())
	if got := s.Stats().SpilledPairs; got != 2 {
		t.Errorf("SpilledPairs = %d once the next call started, want its early spill's 2", got)
	}
}

// TestReceiveAbortedNotice checks that a CodeAborted Error from the switch
// ends the call with an *AbortedError naming the rank, whatever call it
// names, and fails every later call without sending.
func TestReceiveAbortedNotice(t *testing.T) {
	s := offlineDense(t, false)
	h := wire.Header{Job: 7, Token: 0x0123456789abcdef, Generation: 9, Child: 2}
	err := s.deliver(wire.AppendError(nil, &h, wire.CodeAborted, "rank 2: allreduce generation 9 cancelled"), offlineSwitch)
	var ae *AbortedError
	if !errors.As(err, &ae) || !errors.Is(err, ErrAborted) || ae.Rank != 2 || ae.Reason != "rank 2: allreduce generation 9 cancelled" {
		t.Fatalf("error %v; want an *AbortedError by rank 2", err)
	}
	for _, want := range []string{"job 7 aborted by rank 2", "cancelled", "Close and Join again"} {
		if !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	sent := s.Stats().PacketsSent
	if err := s.AllReduceBytes(context.Background(), make([]byte, 37*4)); !errors.Is(err, ErrAborted) {
		t.Errorf("the next call: %v; want the abort again", err)
	}
	if got := s.Stats().PacketsSent; got != sent {
		t.Errorf("the next call sent %d packets; want none", got-sent)
	}
}

// TestSessionDropsCraftedPackets sends a session in a call, over real
// sockets, packets crafted from the switch's address and from a stranger's
// (among them the partial result that crashed the caller's goroutine of a
// session without a block deadline), then lets the call complete: nothing
// crafted is taken, and the sums are right.
func TestSessionDropsCraftedPackets(t *testing.T) {
	f := newFakeSwitch(t, fakeConfig{})
	const n = 1000 // 4 blocks of 256, the last 232
	ss := joinAll(t, f, 2, wire.Float32, n)
	host := ss[0].conn.LocalAddr()
	stranger, err := conn.ListenUDP("127.0.0.1:0", conn.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()

	inputs := [][]byte{randomVector(rand.New(rand.NewPCG(1, 2)), wire.Float32, n), randomVector(rand.New(rand.NewPCG(2, 2)), wire.Float32, n)}
	outs := [][]byte{bytes.Clone(inputs[0]), bytes.Clone(inputs[1])}
	sent := ss[0].Stats().PacketsSent
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Go(func() { errs[0] = ss[0].AllReduceBytes(t.Context(), outs[0]) })
	waitFor(t, "rank 0's call to start", func() bool { return ss[0].Stats().PacketsSent > sent })

	garbage := bytes.Repeat([]byte{0xff}, 1024)
	pkt := func(h wire.Header) []byte { return wire.AppendPacket(nil, &h, garbage[:h.Count*4]) }
	with := func(h wire.Header, f func(*wire.Header)) wire.Header { f(&h); return h }
	crafted := [][]byte{
		pkt(with(resultHeader(0, 256), func(h *wire.Header) { h.Flags, h.Child = wire.FlagPartial, 1 })),
		pkt(with(resultHeader(1, 256), func(h *wire.Header) { h.Token ^= 1 })),
		pkt(resultHeader(4, 256)),
		pkt(resultHeader(3, 256)),
		pkt(with(resultHeader(0, 256), func(h *wire.Header) { h.Generation = 2 })),
		pkt(with(resultHeader(2, 256), func(h *wire.Header) { h.Flags = wire.FlagFromSwitch })),
		garbage[:40],
	}
	for _, p := range crafted {
		f.inject(t, host, p)
	}
	forged := pkt(resultHeader(0, 256)) // a perfect result, but not from the switch
	if _, err := stranger.WriteBatch([]conn.Datagram{{Buf: forged, N: len(forged), Addr: host}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the crafted packets to be dropped", func() bool { return ss[0].Stats().Ignored >= uint64(len(crafted)+1) })
	errs[1] = ss[1].AllReduceBytes(t.Context(), outs[1])
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	for r, out := range outs {
		if err := elem.Check(wire.Float32, wire.OpSum, inputs, out); err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	d := ss[0].Stats().Dropped
	if d.Flags < 2 || d.Token < 1 || d.Block < 1 || d.Length < 1 || d.Generation < 1 || d.Malformed < 1 || d.Source < 1 {
		t.Errorf("dropped %+v; want every crafted packet under its reason", d)
	}
	t.Logf("rank 0 dropped %+v", d)
}

// waitFor polls cond every millisecond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
