package hostlib

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/wire"
)

// testOptions are the options of rank of world in a job on f.
func testOptions(f *fakeSwitch, rank, world int, dt wire.DType, elements int) Options {
	return Options{
		Switch: f.addr(), Job: 7, Token: 0x0123456789abcdef,
		Rank: rank, World: world, DType: dt, Op: wire.OpSum, Elements: elements,
		JoinTimeout: 10 * time.Second, Timeout: 20 * time.Second,
	}
}

// joinAll joins world ranks to f concurrently and closes them at cleanup.
func joinAll(t *testing.T, f *fakeSwitch, world int, dt wire.DType, elements int) []*Session {
	t.Helper()
	ss := make([]*Session, world)
	errs := make([]error, world)
	var wg sync.WaitGroup
	for r := range world {
		wg.Go(func() { ss[r], errs[r] = Join(t.Context(), testOptions(f, r, world, dt, elements)) })
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	t.Cleanup(func() {
		for _, s := range ss {
			s.Close()
		}
	})
	return ss
}

// reduceTyped runs AllReduce on in, little-endian elements of T, through a
// typed slice, and returns the result's bytes.
func reduceTyped[T Element](ctx context.Context, s *Session, in []byte) ([]byte, error) {
	buf := make([]T, len(in)/DTypeOf[T]().Size())
	decodeLE(buf, in)
	if err := AllReduce(ctx, s, buf); err != nil {
		return nil, err
	}
	out := make([]byte, len(in))
	encodeLE(out, buf)
	return out, nil
}

// reduceAny reduces in on s through the typed API where the test knows the
// Go type, through AllReduceBytes otherwise.
func reduceAny(ctx context.Context, s *Session, in []byte) ([]byte, error) {
	switch s.opts.DType {
	case wire.Int32:
		return reduceTyped[int32](ctx, s, in)
	case wire.Float32:
		return reduceTyped[float32](ctx, s, in)
	}
	out := bytes.Clone(in)
	return out, s.AllReduceBytes(ctx, out)
}

// randomVector returns n random elements of dt: any int32, floats in ±100.
func randomVector(rng *rand.Rand, dt wire.DType, n int) []byte {
	switch dt {
	case wire.Int32:
		v := make([]int32, n)
		for i := range v {
			v[i] = int32(rng.Uint32())
		}
		return bytes.Clone(viewBytes(v))
	case wire.Float32:
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.Float64()*200 - 100)
		}
		out := make([]byte, 4*n)
		encodeLE(out, v)
		return out
	}
	panic("randomVector: dtype " + dt.String())
}

// allReduceRounds runs calls back-to-back allreduces on every session at
// once, each with fresh random inputs, and checks every rank's result
// against the reference.
func allReduceRounds(t *testing.T, ss []*Session, calls int, seed uint64) {
	t.Helper()
	dt, op, n := ss[0].opts.DType, ss[0].opts.Op, ss[0].opts.Elements
	rng := rand.New(rand.NewPCG(seed, 2))
	inputs := make([][][]byte, calls)
	for c := range inputs {
		inputs[c] = make([][]byte, len(ss))
		for r := range ss {
			inputs[c][r] = randomVector(rng, dt, n)
		}
	}
	got := make([][][]byte, len(ss))
	errs := make([]error, len(ss))
	var wg sync.WaitGroup
	for r, s := range ss {
		wg.Go(func() {
			for c := range calls {
				out, err := reduceAny(t.Context(), s, inputs[c][r])
				if err != nil {
					errs[r] = fmt.Errorf("call %d: %w", c+1, err)
					return
				}
				got[r] = append(got[r], out)
			}
		})
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	for c := range calls {
		for r := range ss {
			if err := elem.Check(dt, op, inputs[c], got[r][c]); err != nil {
				t.Errorf("call %d, rank %d: %v", c+1, r, err)
			}
			if !bytes.Equal(got[r][c], got[0][c]) {
				t.Errorf("call %d: rank %d's result differs from rank 0's", c+1, r)
			}
		}
	}
}

func TestSessionAllReduce(t *testing.T) {
	const world, calls = 4, 3
	for _, dt := range []wire.DType{wire.Int32, wire.Float32} {
		for _, n := range []int{1, 255, 256, 257, 100000} {
			t.Run(fmt.Sprintf("%v/%d", dt, n), func(t *testing.T) {
				f := newFakeSwitch(t, fakeConfig{})
				ss := joinAll(t, f, world, dt, n)
				if want := blockCount(n, 256); ss[0].Blocks() != want || ss[0].PacketElems() != 256 || ss[0].Window() != 4 {
					t.Fatalf("admitted with %d blocks of %d, window %d; want %d blocks of 256, window 4",
						ss[0].Blocks(), ss[0].PacketElems(), ss[0].Window(), want)
				}
				allReduceRounds(t, ss, calls, uint64(n))
				for r, s := range ss {
					st := s.Stats()
					if st.Calls != calls || st.Failed != 0 || st.LastDuration <= 0 || st.TotalDuration < st.LastDuration {
						t.Errorf("rank %d: stats %+v", r, st)
					}
					if s.Rank() != r || s.World() != world || s.Algo() != wire.AlgoTree {
						t.Errorf("rank %d: Rank %d, World %d, Algo %v", r, s.Rank(), s.World(), s.Algo())
					}
				}
			})
		}
	}
}

func TestSessionAllReduceLoss(t *testing.T) {
	const world, calls, n = 4, 3, 20 * 256
	f := newFakeSwitch(t, fakeConfig{loss: 0.05, seed: 42})
	ss := joinAll(t, f, world, wire.Int32, n)
	allReduceRounds(t, ss, calls, 7)
	var retransmits uint64
	for _, s := range ss {
		retransmits += s.Stats().Retransmits
	}
	if f.dropped.Load() == 0 || retransmits == 0 {
		t.Errorf("%d datagrams dropped, %d retransmissions; want both > 0", f.dropped.Load(), retransmits)
	}
	t.Logf("%d datagrams dropped, %d retransmissions", f.dropped.Load(), retransmits)
}

func TestSessionPacketElemsFromJoin(t *testing.T) {
	f := newFakeSwitch(t, fakeConfig{window: 3})
	o := testOptions(f, 0, 1, wire.Int32, 1000)
	o.PacketElems = 100
	s, err := Join(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.PacketElems() != 100 || s.Blocks() != 10 || s.Window() != 3 {
		t.Fatalf("PacketElems %d, Blocks %d, Window %d; want 100, 10, 3", s.PacketElems(), s.Blocks(), s.Window())
	}
	allReduceRounds(t, []*Session{s}, 2, 3)
}

// TestSessionSendBatchWholeRuns checks that a dense session's send batch
// of 1 KiB packets is whole GSO sends where the socket has GSO: 62 (a
// batch of 64 went to the switch as sends of 62 and 2), and the socket's
// batch without it; the calls' sums stay right.
func TestSessionSendBatchWholeRuns(t *testing.T) {
	for _, noOffload := range []bool{false, true} {
		t.Run(fmt.Sprintf("no-offload-%v", noOffload), func(t *testing.T) {
			f := newFakeSwitch(t, fakeConfig{window: 64})
			o := testOptions(f, 0, 1, wire.Float32, 256*200)
			o.DisableOffload = noOffload
			s, err := Join(t.Context(), o)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			want := s.conn.BatchSize()
			if s.conn.Offload().GSO {
				want = 62
			} else if !noOffload {
				t.Log("this kernel gives the socket no GSO: the batch is the socket's")
			}
			if len(s.tx) != want {
				t.Errorf("send batch of %d packets of 1 KiB (GSO %v), want %d", len(s.tx), s.conn.Offload().GSO, want)
			}
			allReduceRounds(t, []*Session{s}, 2, 3)
		})
	}
}

func TestSessionJoinRefused(t *testing.T) {
	const text = "job 7 needs 96 buffers of 1 KiB, 40 free"
	f := newFakeSwitch(t, fakeConfig{refuse: text})
	_, err := Join(t.Context(), testOptions(f, 0, 2, wire.Float32, 1<<16))
	var se *SwitchError
	if !errors.As(err, &se) {
		t.Fatalf("Join: %v; want a *SwitchError", err)
	}
	if se.Code != wire.CodeRefusedMemory || se.Message != text {
		t.Errorf("SwitchError{%v, %q}; want {refused-memory, %q}", se.Code, se.Message, text)
	}
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), text) {
		t.Errorf("Join: %v; want ErrRefused with the switch's text", err)
	}
	// The refused rank still leaves: a copy of its join sent before the
	// refusal arrived may reach the switch after it (TestAbortCrossingJoin
	// in switch/ has the crossing), and the Leave, behind it on the same
	// socket, takes out what it created.
	deadline := time.Now().Add(2 * time.Second)
	for f.leaves.Load() < leaveCopies && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := f.leaves.Load(); got != leaveCopies {
		t.Errorf("%d leaves after a refused join; want %d", got, leaveCopies)
	}
}

func TestSessionJoinNoSwitch(t *testing.T) {
	// A port nothing listens on: bind one, then free it.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	pc.Close()

	o := Options{Switch: addr, Job: 1, World: 2, DType: wire.Float32, Op: wire.OpSum, Elements: 10,
		JoinTimeout: 300 * time.Millisecond}
	start := time.Now()
	_, err = Join(t.Context(), o)
	took := time.Since(start)
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Join: %v; want a timeout", err)
	}
	for _, want := range []string{addr, "no answer within 300ms", "is the switch running"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Join: %q does not say %q", err, want)
		}
	}
	if took < 300*time.Millisecond || took > 5*time.Second {
		t.Errorf("Join gave up after %v; want about 300ms", took)
	}
}

func TestSessionAllReduceTimeout(t *testing.T) {
	// Rank 1 joins but never calls, so no block completes.
	f := newFakeSwitch(t, fakeConfig{})
	ss := joinAll(t, f, 2, wire.Float32, 5000)
	s := ss[0]
	s.opts.Timeout = 300 * time.Millisecond
	buf := make([]float32, 5000)
	err := AllReduce(t.Context(), s, buf)
	var te *TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("AllReduce: %v; want a *TimeoutError", err)
	}
	if te.Generation != 1 || te.Missing != 20 || te.Blocks != 20 || len(te.First) != maxFirstMissing || te.First[0] != 0 {
		t.Errorf("TimeoutError %+v", te)
	}
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("AllReduce: %v does not match ErrTimeout and DeadlineExceeded", err)
	}
	msg := err.Error()
	for _, want := range []string{"generation 1: 20 of 20 blocks missing after ", "(blocks 0, 1, 2, 3, 4, 5, 6, 7, ...)", f.addr()} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q does not say %q", msg, want)
		}
	}
	if st := s.Stats(); st.Retransmits == 0 || st.Failed != 1 {
		t.Errorf("stats %+v; want retransmissions and one failed call", st)
	}

	// A context deadline ends the call the same way.
	s.opts.Timeout = time.Minute
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if err := AllReduce(ctx, s, buf); !errors.As(err, &te) || te.Generation != 2 {
		t.Errorf("AllReduce with a context deadline: %v; want a *TimeoutError for generation 2", err)
	}
}

func TestSessionClose(t *testing.T) {
	base := runtime.NumGoroutine()
	f := newFakeSwitch(t, fakeConfig{})
	o := testOptions(f, 0, 2, wire.Int32, 100)
	o1 := o
	o1.Rank = 1
	var s1 *Session
	var err1 error
	var wg sync.WaitGroup
	wg.Go(func() { s1, err1 = Join(t.Context(), o1) })
	s, err := Join(t.Context(), o)
	wg.Wait()
	if err != nil || err1 != nil {
		t.Fatal(err, err1)
	}
	s1.Close()

	// Close interrupts a call that is waiting for rank 1.
	done := make(chan error)
	go func() { done <- AllReduce(t.Context(), s, make([]int32, 100)) }()
	time.Sleep(50 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Errorf("interrupted AllReduce: %v; want ErrClosed", err)
	}
	if err := s.AllReduceBytes(t.Context(), make([]byte, 400)); !errors.Is(err, ErrClosed) {
		t.Errorf("AllReduce after Close: %v; want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for f.leaves.Load() < 2*leaveCopies && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := f.leaves.Load(); got != 2*leaveCopies {
		t.Errorf("the switch saw %d leaves; want %d", got, 2*leaveCopies)
	}
	checkNoLeak(t, base+2) // the fake switch's goroutine stays until cleanup
}

func TestSessionWrongArguments(t *testing.T) {
	f := newFakeSwitch(t, fakeConfig{})
	s, err := Join(t.Context(), testOptions(f, 0, 1, wire.Float32, 10))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	tests := []struct {
		name string
		call func() error
		want []string
	}{
		{"int32 on float32", func() error { return AllReduce(ctx, s, make([]int32, 10)) },
			[]string{"[]int32", "float32"}},
		{"bfloat16 on float32", func() error { return AllReduce(ctx, s, make([]elem.BFloat16, 10)) },
			[]string{"elem.BFloat16", "float32"}},
		{"float16 on float32", func() error { return AllReduce(ctx, s, make([]elem.Float16, 10)) },
			[]string{"elem.Float16", "float16", "float32"}},
		{"short slice", func() error { return AllReduce(ctx, s, make([]float32, 9)) },
			[]string{"9 elements", "10"}},
		{"short bytes", func() error { return s.AllReduceBytes(ctx, make([]byte, 39)) },
			[]string{"39 bytes", "want 40"}},
	}
	for _, tt := range tests {
		err := tt.call()
		if err == nil {
			t.Errorf("%s: no error", tt.name)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not mention %q", tt.name, err, w)
			}
		}
	}
	if st := s.Stats(); st.Calls != 0 || st.Failed != 0 {
		t.Errorf("rejected calls counted: %+v", st)
	}
	// A named type over the right kind is fine.
	type grad float32
	if err := AllReduce(ctx, s, make([]grad, 10)); err != nil {
		t.Errorf("AllReduce on []grad: %v", err)
	}
}

// A join-ack that names a multicast group makes a rank that asked listen
// on it, and fails the join of one that did not, saying so.
func TestSessionMulticastGroup(t *testing.T) {
	// A free port, held: a fixed one may be another socket's.
	hold, err := conn.HoldGroupPort(netip.MustParseAddrPort("239.255.84.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	g := hold.Addr
	f := newFakeSwitch(t, fakeConfig{group: g})
	o := testOptions(f, 0, 1, wire.Float32, 1000)
	if _, err := Join(t.Context(), o); err == nil || !strings.Contains(err.Error(), "names multicast group "+g.String()+", which this rank did not ask for") {
		t.Fatalf("Join without Multicast: %v, want it refused for the group it did not ask for", err)
	}
	f = newFakeSwitch(t, fakeConfig{group: g})
	o = testOptions(f, 0, 1, wire.Float32, 1000)
	o.Multicast = true
	s, err := Join(t.Context(), o)
	if err != nil {
		t.Fatalf("Join with Multicast: %v", err)
	}
	defer s.Close()
	if s.group == nil || s.Group() != g {
		t.Fatalf("the session listens on group %v, want %v", s.Group(), g)
	}
	buf := make([]float32, 1000)
	for i := range buf {
		buf[i] = float32(i)
	}
	if err := AllReduce(t.Context(), s, buf); err != nil || buf[999] != 999 {
		t.Fatalf("AllReduce: %v, element 999 = %v", err, buf[999])
	}
}

// A call allocates nothing, whether the session's socket sleeps when it
// finds nothing or polls first (BusyPoll).
func TestSessionZeroAlloc(t *testing.T) {
	for _, poll := range []time.Duration{0, conn.DefaultBusyPoll} {
		t.Run(fmt.Sprintf("busy-poll=%v", poll), func(t *testing.T) {
			f := newFakeSwitch(t, fakeConfig{window: 16})
			const n = 100000
			o := testOptions(f, 0, 1, wire.Float32, n)
			o.BusyPoll = poll
			s, err := Join(t.Context(), o)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			buf := make([]float32, n)
			for i := range buf {
				buf[i] = float32(i % 7)
			}
			want := slices.Clone(buf)
			ctx := t.Context()
			allocs := testing.AllocsPerRun(5, func() {
				if err := AllReduce(ctx, s, buf); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("%v allocations per call of %d blocks; want 0", allocs, s.Blocks())
			}
			if !slices.Equal(buf, want) { // one rank: its sum is its own vector
				t.Errorf("the result of one rank's sum differs from its input")
			}
		})
	}
}

func TestDTypeOf(t *testing.T) {
	type grad float64
	tests := []struct{ got, want wire.DType }{
		{DTypeOf[int8](), wire.Int8},
		{DTypeOf[int16](), wire.Int16},
		{DTypeOf[int32](), wire.Int32},
		{DTypeOf[int64](), wire.Int64},
		{DTypeOf[float32](), wire.Float32},
		{DTypeOf[grad](), wire.Float64},
		{DTypeOf[elem.BFloat16](), wire.BFloat16},
		{DTypeOf[elem.Float16](), wire.Float16},
	}
	for i, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("case %d: DTypeOf gives %v; want %v", i, tt.got, tt.want)
		}
	}
}

func BenchmarkSessionAllReduce(b *testing.B) {
	for _, world := range []int{1, 4} {
		b.Run(fmt.Sprintf("world=%d", world), func(b *testing.B) {
			const n = 1 << 18 // 1 MiB of float32
			f := newFakeSwitch(b, fakeConfig{window: 64})
			ss := make([]*Session, world)
			var wg sync.WaitGroup
			for r := range world {
				wg.Go(func() {
					o := testOptions(f, r, world, wire.Float32, n)
					var err error
					if ss[r], err = Join(b.Context(), o); err != nil {
						b.Error(err)
					}
				})
			}
			wg.Wait()
			if b.Failed() {
				b.FailNow()
			}
			defer func() {
				for _, s := range ss {
					s.Close()
				}
			}()
			// Ranks other than 0 follow rank 0 call for call.
			calls := make(chan struct{})
			for _, s := range ss[1:] {
				buf := make([]float32, n)
				wg.Go(func() {
					for range calls {
						if err := AllReduce(b.Context(), s, buf); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			buf := make([]float32, n)
			b.ReportAllocs()
			b.SetBytes(4 * n)
			for b.Loop() {
				for range world - 1 {
					calls <- struct{}{}
				}
				if err := AllReduce(b.Context(), ss[0], buf); err != nil {
					b.Fatal(err)
				}
			}
			close(calls)
			wg.Wait()
			b.ReportMetric(float64(b.N*ss[0].Blocks())/b.Elapsed().Seconds(), "packets/s")
		})
	}
}

// A call of the other kind than the session's job, or with values of
// another type than its dtype, or pairs cut mid-pair, is refused before
// anything is sent, saying what to do instead.
func TestSessionKindMisuse(t *testing.T) {
	ctx := t.Context()
	dense, sparse := offlineDense(t, false), offlineSparse(t)
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"dense call on a sparse job", func() error { return AllReduce(ctx, sparse, make([]float32, 100)) },
			"hostlib: allreduce: the session joined a sparse job: use SparseAllReduce"},
		{"sparse call on a dense job", func() error { _, err := dense.SparseAllReduceBytes(ctx, pairsOf(1)); return err },
			"hostlib: sparse allreduce: the session joined a dense job: use AllReduce, or Join with Sparse"},
		{"pairs cut mid-pair", func() error { _, err := sparse.SparseAllReduceBytes(ctx, pairsOf(1, 2)[:11]); return err },
			"hostlib: sparse allreduce: 11 bytes are not whole float32 pairs"},
		{"int32 values on float32", func() error {
			_, _, err := SparseAllReduce(ctx, sparse, []uint32{1}, []int32{1})
			return err
		}, "[]int32"},
	}
	for _, tt := range tests {
		err := tt.call()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	for _, s := range []*Session{dense, sparse} {
		if st := s.Stats(); st.Calls != 0 || st.PacketsSent != 0 {
			t.Errorf("refused calls counted or sent: %+v", st)
		}
	}
}
