package hostlib

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/flare-net/flare/wire"
)

// The ring's checks of what a peer sends, against a peer that speaks the
// protocol by hand: rank 1 of a ring of two whose rank 0 is a real Ring.
// Real ranks agree on every field, and two checks usually catch one
// disagreement between them (a length that differs puts the stream out
// of step, and the next header's marker fails), so each check is tested
// here alone, with the one field a peer out of step or lying gets wrong.

// ringFrame is a frame header's fields.
type ringFrame struct {
	marker, gen, step uint16
	dt                wire.DType
	op                wire.Op
	length            uint32
}

// fakeRingPeer is rank 1's ends of its two connections with rank 0.
type fakeRingPeer struct {
	t    *testing.T
	send net.Conn // to rank 0, its successor
	recv net.Conn // from rank 0, its predecessor
}

// ringHello is the hello of rank of a ring of world ranks in rank order.
func ringHello(rank, world int) []byte {
	order := make([]int, world)
	for i := range order {
		order[i] = i
	}
	h := make([]byte, ringHelloLen)
	copy(h, ringHelloMagic)
	h[4] = ringVersion
	binary.BigEndian.PutUint32(h[8:], uint32(rank))
	binary.BigEndian.PutUint32(h[12:], uint32(world))
	binary.BigEndian.PutUint64(h[16:], ringFingerprint(order))
	return h
}

// newFakeRingPeer builds rank 0 with NewRing while the test plays rank 1:
// it answers rank 0's dial with rank 1's hello, changed by edit (nil: as
// a real rank 1 would), and dials rank 0 with a true one. It returns the
// ring, or NewRing's error and a nil peer.
func newFakeRingPeer(t *testing.T, edit func(h []byte)) (*Ring, *fakeRingPeer, error) {
	t.Helper()
	lns, peers := listenLocal(t, 2)
	defer lns[1].Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	type built struct {
		r   *Ring
		err error
	}
	done := make(chan built, 1)
	go func() {
		r, err := NewRing(ctx, RingConfig{Rank: 0, Peers: peers, Listener: lns[0], DialTimeout: 5 * time.Second})
		done <- built{r, err}
	}()
	f := &fakeRingPeer{t: t}
	accepted := make(chan error, 1)
	go func() { // rank 0 dials its successor, rank 1: answer its hello
		c, err := lns[1].Accept()
		if err == nil {
			f.recv = c
			c.SetDeadline(time.Now().Add(5 * time.Second))
			answer := ringHello(1, 2)
			if edit != nil {
				edit(answer)
			}
			if _, err = io.ReadFull(c, make([]byte, ringHelloLen)); err == nil {
				_, err = c.Write(answer)
			}
		}
		accepted <- err
	}()
	// Rank 1 dials its successor, rank 0, and says hello. Rank 0 may have
	// refused the hello it was answered already and closed its listener:
	// a dial or a write that fails then is no failure of the test.
	c, sendErr := net.Dial("tcp", peers[0])
	if sendErr == nil {
		f.send = c
		c.SetDeadline(time.Now().Add(5 * time.Second))
		_, sendErr = c.Write(ringHello(1, 2))
	}
	b := <-done
	t.Cleanup(func() {
		for _, c := range []net.Conn{f.send, f.recv} {
			if c != nil {
				c.Close()
			}
		}
		if b.r != nil {
			b.r.Close()
		}
	})
	if b.err != nil {
		return nil, nil, b.err
	}
	if sendErr != nil {
		t.Fatalf("rank 1's dial and hello to rank 0: %v", sendErr)
	}
	if err := <-accepted; err != nil {
		t.Fatalf("rank 0 dialed, but: %v", err)
	}
	if _, err := io.ReadFull(c, make([]byte, ringHelloLen)); err != nil {
		t.Fatalf("rank 0's answer to rank 1's hello: %v", err)
	}
	return b.r, f, nil
}

// faithfulRingPeer is newFakeRingPeer with rank 1's true hello, and a
// context for rank 0's calls that ends with the test (5 s at most).
func faithfulRingPeer(t *testing.T) (*Ring, *fakeRingPeer, context.Context) {
	t.Helper()
	r, f, err := newFakeRingPeer(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	t.Cleanup(cancel)
	return r, f, ctx
}

// allReduceAsync starts rank 0's float32 sum of buf; its error comes on
// the channel.
func allReduceAsync(ctx context.Context, r *Ring, buf []byte) <-chan error {
	errc := make(chan error, 1)
	go func() { errc <- r.AllReduce(ctx, buf, wire.Float32, wire.OpSum) }()
	return errc
}

// sparseResult is what a sparse call returned.
type sparseResult struct {
	out []byte
	err error
}

// sparseAllReduceAsync starts rank 0's float32 sparse sum of pairs.
func sparseAllReduceAsync(ctx context.Context, r *Ring, pairs []byte) <-chan sparseResult {
	c := make(chan sparseResult, 1)
	go func() {
		out, err := r.SparseAllReduce(ctx, pairs, wire.Float32, wire.OpSum)
		c <- sparseResult{out, err}
	}()
	return c
}

// read reads rank 0's next frame.
func (f *fakeRingPeer) read() (ringFrame, []byte) {
	f.t.Helper()
	var h [ringHeaderLen]byte
	if _, err := io.ReadFull(f.recv, h[:]); err != nil {
		f.t.Fatalf("reading rank 0's frame: %v", err)
	}
	fr := ringFrame{
		marker: binary.BigEndian.Uint16(h[0:]), gen: binary.BigEndian.Uint16(h[2:]), step: binary.BigEndian.Uint16(h[4:]),
		dt: wire.DType(h[6]), op: wire.Op(h[7]), length: binary.BigEndian.Uint32(h[8:]),
	}
	body := make([]byte, fr.length)
	if _, err := io.ReadFull(f.recv, body); err != nil {
		f.t.Fatalf("reading rank 0's frame: %v", err)
	}
	return fr, body
}

// write sends rank 0 a frame of header fr and payload body.
func (f *fakeRingPeer) write(fr ringFrame, body []byte) {
	f.t.Helper()
	h := make([]byte, ringHeaderLen, ringHeaderLen+len(body))
	binary.BigEndian.PutUint16(h[0:], fr.marker)
	binary.BigEndian.PutUint16(h[2:], fr.gen)
	binary.BigEndian.PutUint16(h[4:], fr.step)
	h[6], h[7] = byte(fr.dt), byte(fr.op)
	binary.BigEndian.PutUint32(h[8:], fr.length)
	if _, err := f.send.Write(append(h, body...)); err != nil {
		f.t.Fatalf("writing to rank 0: %v", err)
	}
}

// expect checks that rank 0's frame fr is the one of call gen, step s.
func (f *fakeRingPeer) expect(fr ringFrame, gen, s uint16, dt wire.DType, op wire.Op, length int) {
	f.t.Helper()
	want := ringFrame{marker: ringMarker, gen: gen, step: s, dt: dt, op: op, length: uint32(length)}
	if fr != want {
		f.t.Errorf("rank 0 sent a frame %+v, want %+v", fr, want)
	}
}

// float32s is vs as little-endian float32 bytes.
func float32s(vs ...float32) []byte {
	b := make([]byte, 0, 4*len(vs))
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// TestRingPeerFaithful runs calls against the hand-played peer as a real
// rank 1 would play: the sums come out right and every frame of rank 0
// carries its call's number, dense or sparse, so the checks below fail
// for the field they change alone.
func TestRingPeerFaithful(t *testing.T) {
	r, f, ctx := faithfulRingPeer(t)
	buf := float32s(1, 2)
	errc := allReduceAsync(ctx, r, buf)
	// Reduce-scatter: rank 0 sends its chunk 0 and folds rank 1's chunk 1.
	fr, c0 := f.read()
	f.expect(fr, 1, 0, wire.Float32, wire.OpSum, 4)
	f.write(ringFrame{ringMarker, 1, 0, wire.Float32, wire.OpSum, 4}, float32s(20))
	// All-gather: rank 0 sends the reduced chunk 1, takes chunk 0's.
	fr, c1 := f.read()
	f.expect(fr, 1, 1, wire.Float32, wire.OpSum, 4)
	if !bytes.Equal(c0, float32s(1)) || !bytes.Equal(c1, float32s(22)) {
		t.Errorf("rank 0 sent chunks % x and % x, want its chunk 0 (1) and the sum of chunk 1 (22)", c0, c1)
	}
	f.write(ringFrame{ringMarker, 1, 1, wire.Float32, wire.OpSum, 4}, float32s(11))
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf, float32s(11, 22)) {
		t.Errorf("rank 0 holds % x, want 11, 22", buf)
	}

	// A sparse call is call 2: one step, each rank's list to the other.
	mine := wire.AppendPair(nil, 3, float32s(1.5))
	theirs := wire.AppendPair(nil, 7, float32s(2.5))
	sparse := sparseAllReduceAsync(ctx, r, mine)
	fr, got := f.read()
	f.expect(fr, 2, 0, wire.Float32, wire.OpSum, len(mine))
	if !bytes.Equal(got, mine) {
		t.Errorf("rank 0 sent the list % x, want its own % x", got, mine)
	}
	f.write(ringFrame{ringMarker, 2, 0, wire.Float32, wire.OpSum, uint32(len(theirs))}, theirs)
	res := <-sparse
	if res.err != nil {
		t.Fatal(res.err)
	}
	if want := append(bytes.Clone(mine), theirs...); !bytes.Equal(res.out, want) {
		t.Errorf("sparse result % x, want % x", res.out, want)
	}

	// And the next dense call is call 3.
	errc = allReduceAsync(ctx, r, float32s(1, 2))
	fr, _ = f.read()
	f.expect(fr, 3, 0, wire.Float32, wire.OpSum, 4)
	f.send.Close()
	if err := <-errc; !errors.Is(err, ErrRingPeerClosed) {
		t.Errorf("rank 1 closed mid-call: got %v, want ErrRingPeerClosed", err)
	}
}

// TestRingFrameChecks sends rank 0 a reduce-scatter frame with one field
// wrong: the call fails with ErrRingProtocol, saying what it got, and
// folds nothing.
func TestRingFrameChecks(t *testing.T) {
	good := ringFrame{ringMarker, 1, 0, wire.Float32, wire.OpSum, 4}
	for _, c := range []struct {
		name string
		edit func(*ringFrame)
		want string
	}{
		{"marker", func(f *ringFrame) { f.marker = 0xBEEF }, "does not start with the ring marker"},
		{"call", func(f *ringFrame) { f.gen = 2 }, "got call 2 step 0"},
		{"step", func(f *ringFrame) { f.step = 1 }, "got call 1 step 1"},
		{"dtype", func(f *ringFrame) { f.dt = wire.Int32 }, "step 0 int32/sum 4 bytes"},
		{"op", func(f *ringFrame) { f.op = wire.OpMax }, "step 0 float32/max 4 bytes"},
		{"length", func(f *ringFrame) { f.length = 8 }, "step 0 float32/sum 8 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, f, ctx := faithfulRingPeer(t)
			buf := float32s(1, 2)
			errc := allReduceAsync(ctx, r, buf)
			f.read()
			fr := good
			c.edit(&fr)
			f.write(fr, float32s(20, 30)[:fr.length])
			err := <-errc
			if !errors.Is(err, ErrRingProtocol) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want ErrRingProtocol saying %q", err, c.want)
			}
			if !bytes.Equal(buf, float32s(1, 2)) {
				t.Errorf("rank 0's buffer is % x after a refused frame, want its input (1, 2)", buf)
			}
		})
	}
	t.Run("sparse pairs", func(t *testing.T) {
		r, f, ctx := faithfulRingPeer(t)
		sparse := sparseAllReduceAsync(ctx, r, wire.AppendPair(nil, 3, float32s(1.5)))
		f.read()
		f.write(ringFrame{ringMarker, 1, 0, wire.Float32, wire.OpSum, 7}, make([]byte, 7))
		if err := (<-sparse).err; !errors.Is(err, ErrRingProtocol) || !strings.Contains(err.Error(), "a sparse list of 7 bytes") {
			t.Errorf("got %v, want ErrRingProtocol about a sparse list of 7 bytes", err)
		}
	})
}

// TestRingHelloChecks answers rank 0's dial with a hello that differs
// from rank 1's in one field: NewRing fails with ErrRingProtocol naming
// it (a wrong hello from the successor is final).
func TestRingHelloChecks(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(h []byte)
		want string
	}{
		{"magic", func(h []byte) { copy(h, "HTTP") }, "not a ring peer"},
		{"version", func(h []byte) { h[4] = ringVersion + 1 }, "ring version 2, want 1"},
		{"world", func(h []byte) { binary.BigEndian.PutUint32(h[12:], 3) }, "peer has world size 3, this rank 2"},
		{"rank", func(h []byte) { binary.BigEndian.PutUint32(h[8:], 0) }, "peer is rank 0, want rank 1"},
		{"order", func(h []byte) { h[23] ^= 1 }, "was given a different ring Order"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := newFakeRingPeer(t, c.edit)
			if !errors.Is(err, ErrRingProtocol) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want ErrRingProtocol saying %q", err, c.want)
			}
		})
	}
}
