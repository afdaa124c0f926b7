package hostlib

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/wire"
)

// TestRingAllReduceProperty checks the ring against the plain reference for
// every dtype and operator, several world sizes and lengths that do and do
// not divide among the ranks. Each world's ring is built once and reused, so
// the cases are also back-to-back calls.
func TestRingAllReduceProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, p := range []int{1, 2, 3, 5, 8} {
		t.Run(fmt.Sprintf("P=%d", p), func(t *testing.T) {
			rings := localRings(t, p, nil)
			for _, dt := range wire.DTypes {
				for _, op := range ringTestOps(dt) {
					for _, n := range ringTestLengths(rng, p) {
						inputs := make([][]byte, p)
						for i := range inputs {
							inputs[i] = ringTestVector(rng, dt, op, n)
						}
						name := fmt.Sprintf("P=%d %v %v n=%d", p, dt, op, n)
						checkRingResult(t, name, dt, op, inputs, allReduceAll(t, rings, inputs, dt, op))
					}
				}
			}
		})
	}
}

// TestRingAllReduceLarge covers chunks larger than the folding segment, so a
// reduce-scatter chunk is received and folded in several pieces.
func TestRingAllReduceLarge(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const p = 3
	n := 3*ringSegment/4*p + 7 // float32: each chunk is about three segments
	if testing.Short() {
		n = ringSegment/4*p + 7
	}
	rings := localRings(t, p, nil)
	for _, c := range []struct {
		dt wire.DType
		op wire.Op
	}{{wire.Float32, wire.OpSum}, {wire.Int32, wire.OpXor}, {wire.BFloat16, wire.OpMax}} {
		inputs := make([][]byte, p)
		for i := range inputs {
			inputs[i] = ringTestVector(rng, c.dt, c.op, n)
		}
		name := fmt.Sprintf("%v %v n=%d", c.dt, c.op, n)
		checkRingResult(t, name, c.dt, c.op, inputs, allReduceAll(t, rings, inputs, c.dt, c.op))
	}
}

// TestRingOrder runs a permuted ring through RunLocalRing: integer results
// must match rank order exactly, float ones within the rounding bound.
func TestRingOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const p = 5
	order := []int{3, 0, 4, 1, 2}
	for _, c := range []struct {
		dt wire.DType
		op wire.Op
	}{{wire.Int32, wire.OpSum}, {wire.Int8, wire.OpMin}, {wire.Float64, wire.OpSum}} {
		const n = 101
		inputs := make([][]byte, p)
		for i := range inputs {
			inputs[i] = ringTestVector(rng, c.dt, c.op, n)
		}
		permuted, plain := cloneAll(inputs), cloneAll(inputs)
		if err := RunLocalRing(t.Context(), permuted, c.dt, c.op, order); err != nil {
			t.Fatalf("%v %v order %v: %v", c.dt, c.op, order, err)
		}
		if err := RunLocalRing(t.Context(), plain, c.dt, c.op, nil); err != nil {
			t.Fatalf("%v %v rank order: %v", c.dt, c.op, err)
		}
		name := fmt.Sprintf("%v %v order %v", c.dt, c.op, order)
		checkRingResult(t, name, c.dt, c.op, inputs, permuted)
		if !c.dt.IsFloat() && !bytes.Equal(permuted[0], plain[0]) {
			t.Errorf("%s: result differs from the rank-order ring", name)
		}
	}
}

// TestRingBackToBack makes many calls on one ring with changing lengths,
// dtypes and operators, and checks the traffic counters.
func TestRingBackToBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const p, calls = 3, 20
	rings := localRings(t, p, nil)
	var payload uint64 // bytes each rank sends, headers aside
	for k := range calls {
		dt := wire.DTypes[k%len(wire.DTypes)]
		ops := ringTestOps(dt)
		op := ops[k%len(ops)]
		n := 30 * (k + 1) // divisible by p: every chunk is n/p elements
		inputs := make([][]byte, p)
		for i := range inputs {
			inputs[i] = ringTestVector(rng, dt, op, n)
		}
		checkRingResult(t, fmt.Sprintf("call %d %v %v", k, dt, op), dt, op, inputs, allReduceAll(t, rings, inputs, dt, op))
		payload += uint64(2 * (p - 1) * n / p * dt.Size())
	}
	want := RingStats{
		Calls:         calls,
		BytesSent:     payload + calls*2*(p-1)*ringHeaderLen,
		BytesReceived: payload + calls*2*(p-1)*ringHeaderLen,
	}
	for i, r := range rings {
		if got := r.Stats(); got != want {
			t.Errorf("rank %d stats %+v, want %+v", i, got, want)
		}
	}
}

// TestRingCancel cancels a call that waits on a rank that never joins it:
// the call returns promptly with the context's error, its neighbour's call
// (not cancelled) fails promptly because the cancelled rank closed its
// connections, the absent rank's later call fails too, and no goroutine is
// left behind.
func TestRingCancel(t *testing.T) {
	base := runtime.NumGoroutine()
	const p = 3
	rings, err := NewLocalRings(t.Context(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancelShort()
	long, cancelLong := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancelLong()
	errs := make([]error, 2)
	var wg sync.WaitGroup
	start := time.Now()
	wg.Go(func() { errs[0] = rings[0].AllReduce(short, make([]byte, 4096), wire.Float32, wire.OpSum) })
	wg.Go(func() { errs[1] = rings[1].AllReduce(long, make([]byte, 4096), wire.Float32, wire.OpSum) })
	waitGroupFor(t, &wg, 20*time.Second, "the cancelled call and its neighbour's")
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("cancelled calls took %v", d)
	}
	for i, err := range errs {
		t.Logf("rank %d: %v", i, err)
	}
	if !errors.Is(errs[0], context.DeadlineExceeded) {
		t.Errorf("rank 0: got %v, want an error wrapping context.DeadlineExceeded", errs[0])
	}
	if !errors.Is(errs[1], ErrRingPeerClosed) {
		t.Errorf("rank 1: got %v, want ErrRingPeerClosed", errs[1])
	}
	// The straggler's call cannot hang either.
	if err := rings[2].AllReduce(long, make([]byte, 4096), wire.Float32, wire.OpSum); !errors.Is(err, ErrRingPeerClosed) {
		t.Errorf("rank 2 after its neighbours failed: got %v, want ErrRingPeerClosed", err)
	}
	if err := rings[0].AllReduce(t.Context(), make([]byte, 4), wire.Float32, wire.OpSum); err == nil ||
		!strings.Contains(err.Error(), "unusable") {
		t.Errorf("call on a cancelled ring: got %v, want an 'unusable' error", err)
	}
	closeRings(rings)
	checkNoLeak(t, base)
}

// TestRingPeerClosed closes one rank: its neighbours' calls fail promptly,
// the successor's naming the closed rank.
func TestRingPeerClosed(t *testing.T) {
	const p = 3
	rings := localRings(t, p, nil)
	rings[2].Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = rings[i].AllReduce(ctx, make([]byte, 1<<16), wire.Int64, wire.OpSum) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatal("calls did not return before the timeout")
	}
	for i, err := range errs {
		t.Logf("rank %d: %v", i, err)
		if !errors.Is(err, ErrRingPeerClosed) {
			t.Errorf("rank %d: got %v, want ErrRingPeerClosed", i, err)
		}
	}
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "from rank 2 (") {
		t.Errorf("rank 0's error does not name its predecessor rank 2: %v", errs[0])
	}
	if err := rings[2].AllReduce(t.Context(), make([]byte, 8), wire.Int64, wire.OpSum); !errors.Is(err, ErrRingClosed) {
		t.Errorf("call on a closed ring: got %v, want ErrRingClosed", err)
	}
}

// TestRingMismatch gives the ranks different lengths or dtypes: the frame
// header catches it instead of folding the wrong bytes.
func TestRingMismatch(t *testing.T) {
	for _, c := range []struct {
		name     string
		len1     int
		dt0, dt1 wire.DType
	}{
		{"length", 40, wire.Int32, wire.Int32},
		{"dtype", 32, wire.Float32, wire.Int32},
	} {
		t.Run(c.name, func(t *testing.T) {
			rings := localRings(t, 2, nil)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			var err0, err1 error
			var wg sync.WaitGroup
			wg.Go(func() { err0 = rings[0].AllReduce(ctx, make([]byte, 32), c.dt0, wire.OpSum) })
			wg.Go(func() { err1 = rings[1].AllReduce(ctx, make([]byte, c.len1), c.dt1, wire.OpSum) })
			wg.Wait()
			if err0 == nil || err1 == nil {
				t.Fatalf("want both ranks to fail, got %v and %v", err0, err1)
			}
			t.Logf("rank 0: %v\nrank 1: %v", err0, err1)
			if !errors.Is(err0, ErrRingProtocol) && !errors.Is(err1, ErrRingProtocol) {
				t.Errorf("neither error wraps ErrRingProtocol: %v; %v", err0, err1)
			}
		})
	}
}

// TestRingBadArguments: errors found before any byte is sent leave the ring
// usable.
func TestRingBadArguments(t *testing.T) {
	rings := localRings(t, 2, nil)
	for _, c := range []struct {
		name string
		n    int
		dt   wire.DType
		op   wire.Op
		want string
	}{
		{"partial element", 3, wire.Int16, wire.OpSum, "buffer of 3 bytes is not a whole number of int16 elements"},
		{"bitwise on float", 8, wire.Float32, wire.OpXor, "xor"},
		{"unknown dtype", 8, wire.DType(99), wire.OpSum, "dtype(99)"},
		{"cancelled", 8, wire.Float32, wire.OpSum, "hostlib: ring allreduce: context canceled"},
	} {
		// (Bounded: a call that went ahead would wait for rank 1.)
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		if c.name == "cancelled" {
			cancel()
		}
		err := rings[0].AllReduce(ctx, make([]byte, c.n), c.dt, c.op)
		cancel()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error saying %q", c.name, err, c.want)
		}
	}
	inputs := [][]byte{{1, 0}, {2, 0}}
	checkRingResult(t, "after bad calls", wire.Int16, wire.OpSum, inputs, allReduceAll(t, rings, inputs, wire.Int16, wire.OpSum))
}

// TestRingConfigInvalid checks that bad configurations are refused before
// any socket is opened, with an error naming the field.
func TestRingConfigInvalid(t *testing.T) {
	peers := []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}
	for _, c := range []struct {
		name string
		cfg  RingConfig
		want string
	}{
		{"no peers", RingConfig{}, "Peers"},
		{"rank too big", RingConfig{Rank: 3, Peers: peers}, "Rank"},
		{"negative rank", RingConfig{Rank: -1, Peers: peers}, "Rank"},
		{"empty address", RingConfig{Peers: []string{"127.0.0.1:1", ""}}, "Peers[1]"},
		{"short order", RingConfig{Peers: peers, Order: []int{0, 1}}, "Order"},
		{"repeated rank", RingConfig{Peers: peers, Order: []int{0, 1, 1}}, "Order[2]"},
		{"rank out of range", RingConfig{Peers: peers, Order: []int{0, 1, 3}}, "Order[2]"},
		{"negative timeout", RingConfig{Peers: peers, DialTimeout: -time.Second}, "DialTimeout"},
	} {
		r, err := NewRing(t.Context(), c.cfg)
		if err == nil {
			r.Close()
			t.Errorf("%s: no error", c.name)
		} else if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q does not name %s", c.name, err, c.want)
		}
	}
}

// TestRingStrayConnection connects something that is not a ring peer
// before the predecessor: it is refused and the ring still forms.
func TestRingStrayConnection(t *testing.T) {
	lns, peers := listenLocal(t, 2)
	stray, err := net.Dial("tcp", peers[0])
	if err != nil {
		t.Fatal(err)
	}
	defer stray.Close()
	if _, err := stray.Write([]byte("GET / HTTP/1.0\r\nHost: flare\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	rings, errs := buildRings(t, lns, peers, func(i int, cfg *RingConfig) {})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", i, err)
		}
	}
	defer closeRings(rings)
	stray.SetReadDeadline(time.Now().Add(5 * time.Second))
	// Closed is either EOF or, as the ring left the stray's bytes unread, a
	// reset; only a timeout means it was kept open.
	var ne net.Error
	if _, err := io.ReadAll(stray); errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("stray connection was not closed: %v", err)
	}
	inputs := [][]byte{{7}, {9}}
	checkRingResult(t, "after a stray", wire.Int8, wire.OpSum, inputs, allReduceAll(t, rings, inputs, wire.Int8, wire.OpSum))
}

// TestRingOrderDisagreement gives one rank another ring order: no rank may
// end up with a ring, and set-up ends at DialTimeout.
func TestRingOrderDisagreement(t *testing.T) {
	lns, peers := listenLocal(t, 3)
	start := time.Now()
	rings, errs := buildRings(t, lns, peers, func(i int, cfg *RingConfig) {
		cfg.DialTimeout = 300 * time.Millisecond
		if i != 0 {
			cfg.Order = []int{0, 2, 1}
		}
	})
	closeRings(rings)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("set-up took %v with a 300ms DialTimeout", d)
	}
	for i, err := range errs {
		t.Logf("rank %d: %v", i, err)
		if err == nil {
			t.Errorf("rank %d built a ring although rank 0 disagrees on the order", i)
		}
	}
}

// localRings builds a ring of p ranks on loopback, closed when t ends.
func localRings(t testing.TB, p int, order []int) []*Ring {
	t.Helper()
	rings, err := NewLocalRings(t.Context(), p, order)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeRings(rings) })
	return rings
}

// listenLocal binds p loopback ports.
func listenLocal(t *testing.T, p int) ([]net.Listener, []string) {
	lns := make([]net.Listener, p)
	peers := make([]string, p)
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i], peers[i] = ln, ln.Addr().String()
	}
	return lns, peers
}

// buildRings runs NewRing for every rank concurrently, each config adjusted
// by edit, and returns what each rank got.
func buildRings(t *testing.T, lns []net.Listener, peers []string, edit func(int, *RingConfig)) ([]*Ring, []error) {
	rings := make([]*Ring, len(lns))
	errs := make([]error, len(lns))
	var wg sync.WaitGroup
	for i := range lns {
		cfg := RingConfig{Rank: i, Peers: peers, Listener: lns[i]}
		edit(i, &cfg)
		wg.Go(func() { rings[i], errs[i] = NewRing(t.Context(), cfg) })
	}
	wg.Wait()
	return rings, errs
}

// allReduceAll runs one AllReduce on every rank concurrently over copies of
// inputs and returns the results.
func allReduceAll(t *testing.T, rings []*Ring, inputs [][]byte, dt wire.DType, op wire.Op) [][]byte {
	t.Helper()
	bufs := cloneAll(inputs)
	errs := make([]error, len(rings))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i, r := range rings {
		wg.Go(func() { errs[i] = r.AllReduce(ctx, bufs[i], dt, op) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("%v %v: %v", dt, op, err)
	}
	return bufs
}

// checkRingResult checks every rank's result against the reference and
// that all ranks hold the same bytes.
func checkRingResult(t *testing.T, name string, dt wire.DType, op wire.Op, inputs, got [][]byte) {
	t.Helper()
	for i, g := range got {
		if err := elem.Check(dt, op, inputs, g); err != nil {
			t.Errorf("%s: rank %d: %v", name, i, err)
		}
		if !bytes.Equal(g, got[0]) {
			t.Errorf("%s: rank %d's result differs from rank 0's", name, i)
		}
	}
}

// waitGroupFor waits for wg, failing the test if that takes longer than
// d: a call that should have returned and hangs.
func waitGroupFor(t *testing.T, wg *sync.WaitGroup, d time.Duration, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

// checkNoLeak waits briefly for the goroutine count to fall back to base.
func checkNoLeak(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Errorf("%d goroutines left, %d before:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func cloneAll(bufs [][]byte) [][]byte {
	out := make([][]byte, len(bufs))
	for i, b := range bufs {
		out[i] = bytes.Clone(b)
	}
	return out
}

// ringTestOps lists the built-in operators defined on dt.
func ringTestOps(dt wire.DType) []wire.Op {
	if dt.IsFloat() {
		return []wire.Op{wire.OpSum, wire.OpMin, wire.OpMax, wire.OpProd}
	}
	return wire.Ops
}

// ringTestLengths returns element counts for world p: none, one, counts
// that leave some chunks empty or do not divide by p, and a random one;
// fewer with -short.
func ringTestLengths(rng *rand.Rand, p int) []int {
	if testing.Short() {
		return []int{1, p + 1 + rng.IntN(300)}
	}
	return []int{0, 1, max(p-1, 2), 2*p + 1, 1 + rng.IntN(3000)}
}

// ringTestVector returns n random elements of dt. Integers take any value
// (sums and products wrap, exactly as the reference does); floats are kept
// moderate so that products of up to 8 ranks neither overflow nor underflow.
func ringTestVector(rng *rand.Rand, dt wire.DType, op wire.Op, n int) []byte {
	size := dt.Size()
	b := make([]byte, n*size)
	for i := 0; i < len(b); i += size {
		if !dt.IsFloat() {
			var v [8]byte
			binary.LittleEndian.PutUint64(v[:], rng.Uint64())
			copy(b[i:i+size], v[:])
			continue
		}
		f := (rng.Float64()*2 - 1) * 100
		if op == wire.OpProd {
			f = 0.5 + 1.5*rng.Float64()
			if rng.IntN(2) == 0 {
				f = -f
			}
		}
		switch dt {
		case wire.Float32:
			binary.LittleEndian.PutUint32(b[i:], math.Float32bits(float32(f)))
		case wire.Float64:
			binary.LittleEndian.PutUint64(b[i:], math.Float64bits(f))
		case wire.BFloat16:
			binary.LittleEndian.PutUint16(b[i:], uint16(elem.BFloat16From(float32(f))))
		case wire.Float16:
			binary.LittleEndian.PutUint16(b[i:], uint16(elem.Float16From(float32(f))))
		default:
			panic("ringTestVector: no float encoding for " + dt.String())
		}
	}
	return b
}
