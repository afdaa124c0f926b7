package hostlib

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/wire"
)

// scriptedSwitch is a switch played by hand, for the join handshake: the
// test reads what the host sends and answers as it likes.
type scriptedSwitch struct {
	t  *testing.T
	uc *net.UDPConn
}

func newScriptedSwitch(t *testing.T) *scriptedSwitch {
	t.Helper()
	uc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { uc.Close() })
	return &scriptedSwitch{t: t, uc: uc}
}

func (f *scriptedSwitch) addr() string { return f.uc.LocalAddr().String() }

// next is the next datagram the host sends, decoded, and where it came
// from; it fails the test after 2 s without one.
func (f *scriptedSwitch) next() (wire.Header, []byte, netip.AddrPort) {
	f.t.Helper()
	buf := make([]byte, maxDatagram)
	f.uc.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, from, err := f.uc.ReadFromUDPAddrPort(buf)
	if err != nil {
		f.t.Fatalf("nothing from the host: %v", err)
	}
	var h wire.Header
	payload, err := h.Unmarshal(buf[:n])
	if err != nil {
		f.t.Fatalf("the host sent a datagram that does not decode: %v", err)
	}
	return h, payload, from
}

// join is the next datagram, which must be a join.
func (f *scriptedSwitch) join() (wire.Header, wire.JoinBody, netip.AddrPort) {
	f.t.Helper()
	h, payload, from := f.next()
	var b wire.JoinBody
	if h.Type != wire.TypeJoin || b.Unmarshal(payload) != nil {
		f.t.Fatalf("the host sent %v, want a join", h.Type)
	}
	return h, b, from
}

func (f *scriptedSwitch) send(to netip.AddrPort, pkt []byte) {
	f.t.Helper()
	if _, err := f.uc.WriteToUDPAddrPort(pkt, to); err != nil {
		f.t.Fatal(err)
	}
}

// ack answers the join h with a join-ack of a job of 100 elements in two
// blocks.
func (f *scriptedSwitch) ack(h wire.Header, to netip.AddrPort) {
	f.send(to, wire.AppendJoinAck(nil, &h, &wire.JoinAckBody{Window: 4, Algo: wire.AlgoSingle, PacketElems: 50, Blocks: 2, QuotaBuffers: 8}))
}

// startJoin starts Join with o, its Switch a new scripted switch, and
// returns that switch, where Join's result comes, and the join the switch
// received.
func startJoin(t *testing.T, ctx context.Context, o Options) (*scriptedSwitch, <-chan joinResult, wire.Header, wire.JoinBody, netip.AddrPort) {
	t.Helper()
	sw := newScriptedSwitch(t)
	o.Switch = sw.addr()
	c := make(chan joinResult, 1)
	go func() {
		s, err := Join(ctx, o)
		c <- joinResult{s, err}
	}()
	h, b, from := sw.join()
	return sw, c, h, b, from
}

type joinResult struct {
	s   *Session
	err error
}

// The join says everything the options ask the switch for: the job and
// the rank, the shape, the design, and each option's bit and field.
func TestJoinSaysOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Options)
		want func(*wire.JoinBody)
	}{
		{"plain", func(*Options) {}, func(*wire.JoinBody) {}},
		{"design", func(o *Options) { o.Algo, o.Buffers, o.PacketElems = wire.AlgoMulti, 3, 50 }, func(b *wire.JoinBody) {
			b.Algo, b.Buffers, b.PacketElems = wire.AlgoMulti, 3, 50
		}},
		{"reproducible", func(o *Options) { o.Reproducible = true }, func(b *wire.JoinBody) { b.Options = wire.OptReproducible }},
		{"multicast", func(o *Options) { o.Multicast = true }, func(b *wire.JoinBody) { b.Options = wire.OptMulticast }},
		{"bounded", func(o *Options) { o.BlockDeadline = 7 * time.Millisecond }, func(b *wire.JoinBody) {
			b.Options, b.DeadlineMillis = wire.OptBounded, 7
		}},
		{"sparse", func(o *Options) { o.Sparse, o.Storage, o.BlockElems = true, wire.StorageArray, 30 }, func(b *wire.JoinBody) {
			b.Options, b.Storage, b.BlockElems = wire.OptSparse, wire.StorageArray, 30
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{Job: 9, Token: 77, Rank: 2, World: 3, DType: wire.Float32, Op: wire.OpMax, Elements: 100, Timeout: 4 * time.Second}
			tc.edit(&o)
			sw, res, h, got, from := startJoin(t, t.Context(), o)
			want := wire.JoinBody{World: 3, Elements: 100, TimeoutMillis: 4000}
			tc.want(&want)
			if got != want || h.Job != 9 || h.Token != 77 || h.Child != 2 || h.DType != wire.Float32 || h.Op != wire.OpMax {
				t.Errorf("the join says %+v, job %d token %d rank %d %v/%v; want %+v, job 9 token 77 rank 2 float32/max", got, h.Job, h.Token, h.Child, h.DType, h.Op, want)
			}
			sw.send(from, wire.AppendError(nil, &h, wire.CodeRefusedMemory, "no"))
			if r := <-res; r.err == nil {
				r.s.Close()
			}
		})
	}
}

// A join the switch does not answer is sent again until it does, naming
// the same session (its Block, never 0); another session names another.
func TestJoinResends(t *testing.T) {
	o := Options{Job: 9, Token: 77, World: 1, DType: wire.Float32, Op: wire.OpSum, Elements: 100, JoinTimeout: 5 * time.Second}
	sw, res, first, _, _ := startJoin(t, t.Context(), o) // lost
	h, _, from := sw.join()
	if h.Block == 0 || h.Block != first.Block {
		t.Errorf("the join names session %#x, its resend %#x: want the same, not 0", first.Block, h.Block)
	}
	sw.ack(h, from)
	r := <-res
	if r.err != nil {
		t.Fatalf("Join after its first copy was lost: %v", r.err)
	}
	r.s.Close()
	sw2, res2, other, _, from2 := startJoin(t, t.Context(), o)
	if other.Block == h.Block {
		t.Errorf("two sessions both name session %#x", h.Block)
	}
	sw2.ack(other, from2)
	if r := <-res2; r.err == nil {
		r.s.Close()
	}
}

// What may come before the join-ack: a waiting report, a result of the
// running job, a malformed ack are counted and dropped, and the join goes
// on; an abort by another member ends it with an *AbortedError naming that
// member; a refusal with a *SwitchError.
func TestJoinAnswers(t *testing.T) {
	o := Options{Job: 9, Token: 77, World: 2, DType: wire.Float32, Op: wire.OpSum, Elements: 100, JoinTimeout: 5 * time.Second}
	t.Run("dropped", func(t *testing.T) {
		sw, res, h, _, from := startJoin(t, t.Context(), o)
		sw.send(from, wire.AppendError(nil, &h, wire.CodeWaiting, "waiting for rank 1"))
		result := h
		result.Type, result.Count = wire.TypeResult, 50
		sw.send(from, wire.AppendPacket(nil, &result, make([]byte, 200)))
		sw.send(from, wire.AppendJoinAck(nil, &h, &wire.JoinAckBody{Window: 4, Algo: wire.AlgoAuto, PacketElems: 50, Blocks: 2})) // no design
		bad := h
		bad.Type = wire.TypeError
		sw.send(from, wire.AppendPacket(nil, &bad, []byte{0, 1, 0, 1, 0xff})) // an Error whose text is not UTF-8
		data := h
		data.Type, data.Count = wire.TypeData, 50
		sw.send(from, wire.AppendPacket(nil, &data, make([]byte, 200))) // a host's packet, not the switch's
		sw.ack(h, from)
		r := <-res
		if r.err != nil {
			t.Fatalf("Join: %v", r.err)
		}
		defer r.s.Close()
		if d := r.s.Stats().Dropped; d != (Drops{Unexpected: 2, Malformed: 2, Type: 1}) {
			t.Errorf("dropped %+v, want the waiting report and the result unexpected, the ack without a design and the Error that is not UTF-8 malformed, the data packet of another type", d)
		}
	})
	t.Run("aborted", func(t *testing.T) {
		sw, res, h, _, from := startJoin(t, t.Context(), o)
		ab := h
		ab.Child = 1
		sw.send(from, wire.AppendError(nil, &ab, wire.CodeAborted, "rank 1: join cancelled"))
		var ae *AbortedError
		if r := <-res; !errors.As(r.err, &ae) || ae.Rank != 1 || ae.Job != 9 || !strings.Contains(ae.Reason, "join cancelled") {
			t.Errorf("Join: %v, want an *AbortedError naming rank 1", r.err)
		}
	})
	t.Run("refused", func(t *testing.T) {
		sw, res, h, _, from := startJoin(t, t.Context(), o)
		sw.send(from, wire.AppendError(nil, &h, wire.CodeTooManyJobs, "full"))
		var se *SwitchError
		if r := <-res; !errors.As(r.err, &se) || se.Code != wire.CodeTooManyJobs || se.Message != "full" {
			t.Errorf("Join: %v, want a *SwitchError too-many-jobs saying full", r.err)
		}
		// A copy of the join may be on its way: the leave follows it.
		for {
			if h, _, _ := sw.next(); h.Type == wire.TypeLeave {
				break
			}
		}
	})
}

// A join the caller cancels tells the switch: an Abort of the job, as
// this rank, then the Leave.
func TestJoinCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	sw, res, _, _, _ := startJoin(t, ctx, Options{Job: 9, Token: 77, Rank: 1, World: 2, DType: wire.Float32, Op: wire.OpSum, Elements: 100, JoinTimeout: 5 * time.Second})
	cancel()
	if r := <-res; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("Join: %v, want it cancelled", r.err)
	}
	var abort, leave bool
	for !leave {
		h, payload, _ := sw.next()
		switch h.Type {
		case wire.TypeAbort:
			var e wire.ErrorBody
			abort = e.Unmarshal(payload) == nil && e.Code == wire.CodeAborted && h.Job == 9 && h.Token == 77 && h.Child == 1 && h.Block == 1
		case wire.TypeLeave:
			leave = true
		}
	}
	if !abort {
		t.Error("the cancelled join sent no Abort of job 9 as rank 1 before its Leave")
	}
}

// A join on a conn that fails to send fails at once, with the conn's error,
// rather than waiting out its timeout.
func TestJoinSendFails(t *testing.T) {
	c, err := conn.NewMemNetwork().Listen(netip.MustParseAddrPort("127.0.0.1:9"))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	_, err = Join(t.Context(), Options{Switch: "127.0.0.1:1", Conn: c, World: 1, DType: wire.Float32, Op: wire.OpSum, Elements: 100, JoinTimeout: 5 * time.Second})
	if !errors.Is(err, net.ErrClosed) || errors.Is(err, ErrTimeout) {
		t.Errorf("Join on a closed conn: %v, want net.ErrClosed", err)
	}
}
