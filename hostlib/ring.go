package hostlib

// The host-based ring allreduce: the baseline Flare is compared with, the
// algorithm MPI, NCCL and Gloo run between hosts today. Each rank sends to
// its successor and receives from its predecessor over TCP; a call is a
// reduce-scatter (P−1 steps, after which position i holds the full reduction
// of chunk i+1) followed by an all-gather (P−1 steps that pass the reduced
// chunks around), so every rank sends and receives 2(P−1)/P of the vector,
// the bandwidth optimum for a host-based allreduce.
//
// Every chunk travels as one frame, a 12-byte header and the chunk's bytes.
// Header fields are in network byte order; the payload is the caller's
// little-endian elements, untouched:
//
//	 0       2       4       6       7       8              12
//	+-------+-------+-------+-------+-------+---------------+----------
//	|marker |  gen  | step  | dtype |  op   |    length     | payload...
//	+-------+-------+-------+-------+-------+---------------+----------
//
// marker is ringMarker, gen the call number (mod 2^16), step 0..2P−3 and
// length the payload in bytes. The receiver knows every field in advance and
// compares them all, so ranks that disagree on the vector's length, dtype or
// op, or a stream that has slipped, fail with ErrRingProtocol rather than
// fold the wrong bytes.
//
// A connection opens with a hello each way (24 bytes, network order):
//
//	 0        4        5        8        12       16                 24
//	+--------+--------+--------+--------+--------+------------------+
//	| "FLRG" |version |reserved|  rank  | world  | order fingerprint|
//	+--------+--------+--------+--------+--------+------------------+
//
// The dialer sends its hello first; the acceptor checks that it comes from
// its predecessor in the same ring (world size and order fingerprint) and
// answers with its own, which the dialer checks in turn. Any other
// connection is closed and the acceptor keeps waiting.

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/wire"
)

// RingMaxWorld is the largest ring NewRing builds: a call has 2(P−1) steps
// and the frame header numbers them in 16 bits.
const RingMaxWorld = 1 << 15

// Frame and hello layout, limits and defaults of the ring.
const (
	ringMarker      = 0xF1A7
	ringHeaderLen   = 12
	ringHelloMagic  = "FLRG"
	ringHelloLen    = 24
	ringVersion     = 1
	ringMaxChunk    = math.MaxUint32 // the header's length field
	ringSegment     = 64 << 10       // reduce-scatter folds a chunk in pieces this big as they arrive
	ringReadBuffer  = 64 << 10       // bufio in front of the predecessor: one read for small frames
	ringDialTimeout = 10 * time.Second
	ringHelloWait   = 2 * time.Second // longest wait for a hello once connected
	ringRetryMin    = 5 * time.Millisecond
	ringRetryMax    = 200 * time.Millisecond
)

// Errors a ring returns, wrapped with the rank, step and peer concerned.
var (
	// ErrRingClosed is the cause reported by calls on a ring after Close.
	ErrRingClosed = errors.New("hostlib: ring closed")
	// ErrRingPeerClosed means a neighbour closed its connection (its process
	// failed, was cancelled or closed its ring) in the middle of a call.
	ErrRingPeerClosed = errors.New("hostlib: ring peer closed the connection")
	// ErrRingProtocol means a frame or hello did not carry what this rank
	// expected: ranks disagree on the vector's length, dtype, op or ring
	// order, or something that is not a ring peer is talking.
	ErrRingProtocol = errors.New("hostlib: ring protocol error")
)

// RingConfig describes one rank's place in a ring.
type RingConfig struct {
	// Rank is this process's rank, 0 <= Rank < len(Peers).
	Rank int
	// Peers holds the listen address of every rank, indexed by rank
	// ("127.0.0.1:9001"); its length is the world size P. Peers[Rank] may be
	// empty when Listener is set.
	Peers []string
	// Order is the ring order, a permutation of the ranks: rank Order[i]
	// sends to rank Order[(i+1) mod P]. nil means 0, 1, ..., P−1. Every rank
	// must be given the same order.
	Order []int
	// DialTimeout bounds the whole set-up: dialing the successor (retried,
	// since peers start at different times) and accepting the predecessor.
	// Zero means 10 s.
	DialTimeout time.Duration
	// Listener, when set, is used instead of listening on Peers[Rank], so a
	// caller can bind port 0 first and publish the address it got. The ring
	// owns it from then on: NewRing closes it once the ring is built, or on
	// failure.
	Listener net.Listener
}

// RingStats counts one ring's traffic and calls. Bytes include frame headers
// (not the hellos) and count whole frames only.
type RingStats struct {
	Calls         uint64 // AllReduce calls that completed
	Failed        uint64 // AllReduce calls that returned an error after starting to talk
	BytesSent     uint64 // to the successor
	BytesReceived uint64 // from the predecessor
}

// Ring is an established ring: a connection dialed to the successor, one
// accepted from the predecessor, and the buffers AllReduce reuses from call
// to call. Its methods may be called from several goroutines; AllReduce
// calls run one at a time.
type Ring struct {
	rank, world int
	pos         int      // this rank's index in order
	prev, next  int      // ranks of the predecessor and the successor
	peers       []string // for error messages
	fingerprint uint64

	send net.Conn      // to the successor
	recv net.Conn      // from the predecessor
	in   *bufio.Reader // over recv

	callMu  sync.Mutex // one AllReduce at a time; guards the fields below
	gen     uint16
	scratch []byte // one ringSegment: a received piece before it is folded
	sendHdr [ringHeaderLen]byte
	recvHdr [ringHeaderLen]byte
	iov     [2][]byte // header and chunk, written with one writev
	writer  sync.WaitGroup

	mu     sync.Mutex
	broken error // the first failure; once set the connections are closed

	calls, failed, sent, received atomic.Uint64
}

// NewRing joins the ring described by cfg: it listens on Peers[Rank] (or
// uses cfg.Listener), dials its successor and accepts its predecessor, and
// returns once both connections have exchanged hellos. Every rank of the ring
// must call NewRing within DialTimeout of each other. Cancelling ctx aborts
// the set-up; it has no effect on the ring once built.
func NewRing(ctx context.Context, cfg RingConfig) (*Ring, error) {
	order, err := cfg.validate()
	if err != nil {
		closeListener(cfg.Listener)
		return nil, err
	}
	r := &Ring{
		rank:        cfg.Rank,
		world:       len(cfg.Peers),
		peers:       append([]string(nil), cfg.Peers...),
		fingerprint: ringFingerprint(order),
	}
	for i, rank := range order {
		if rank == cfg.Rank {
			r.pos = i
		}
	}
	r.prev = order[(r.pos+r.world-1)%r.world]
	r.next = order[(r.pos+1)%r.world]
	if r.world == 1 {
		closeListener(cfg.Listener)
		return r, nil
	}

	ln := cfg.Listener
	if ln == nil {
		ln, err = (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.Peers[cfg.Rank])
		if err != nil {
			return nil, fmt.Errorf("hostlib: ring rank %d: listen on %s: %w", r.rank, cfg.Peers[cfg.Rank], err)
		}
	}
	// The listener is needed only until the predecessor is in: closing it
	// then frees the port and refuses strays.
	defer ln.Close()

	timeout := cfg.DialTimeout
	if timeout == 0 {
		timeout = ringDialTimeout
	}
	if r.send, r.recv, err = r.connect(ctx, ln, timeout); err != nil {
		return nil, err
	}
	for _, c := range []net.Conn{r.send, r.recv} {
		if tc, ok := c.(*net.TCPConn); ok {
			// Go sets TCP_NODELAY by default; say so, since a ring step's
			// small frames must not wait for Nagle. Socket buffers are left
			// to the kernel's autotuning, which grows them further than a
			// SO_SNDBUF/SO_RCVBUF capped by net.core.*mem_max would.
			_ = tc.SetNoDelay(true)
		}
	}
	r.in = bufio.NewReaderSize(r.recv, ringReadBuffer)
	r.scratch = make([]byte, ringSegment)
	return r, nil
}

// validate checks cfg and returns the ring order it describes.
func (cfg *RingConfig) validate() ([]int, error) {
	p := len(cfg.Peers)
	switch {
	case p == 0:
		return nil, errors.New("hostlib: RingConfig.Peers is empty; it needs the address of every rank")
	case p > RingMaxWorld:
		return nil, fmt.Errorf("hostlib: RingConfig.Peers has %d ranks, at most %d allowed", p, RingMaxWorld)
	case cfg.Rank < 0 || cfg.Rank >= p:
		return nil, fmt.Errorf("hostlib: RingConfig.Rank = %d, want 0..%d (one per entry of Peers)", cfg.Rank, p-1)
	case cfg.DialTimeout < 0:
		return nil, fmt.Errorf("hostlib: RingConfig.DialTimeout = %v, want >= 0 (0 means %v)", cfg.DialTimeout, ringDialTimeout)
	}
	for i, addr := range cfg.Peers {
		if addr == "" && p > 1 && !(i == cfg.Rank && cfg.Listener != nil) {
			return nil, fmt.Errorf("hostlib: RingConfig.Peers[%d] is empty", i)
		}
	}
	if cfg.Order == nil {
		order := make([]int, p)
		for i := range order {
			order[i] = i
		}
		return order, nil
	}
	if len(cfg.Order) != p {
		return nil, fmt.Errorf("hostlib: RingConfig.Order has %d entries, want %d (a permutation of the ranks)", len(cfg.Order), p)
	}
	seen := make([]bool, p)
	for i, rank := range cfg.Order {
		if rank < 0 || rank >= p || seen[rank] {
			return nil, fmt.Errorf("hostlib: RingConfig.Order[%d] = %d: not a permutation of 0..%d", i, rank, p-1)
		}
		seen[rank] = true
	}
	return cfg.Order, nil
}

// connect dials the successor and accepts the predecessor concurrently (each
// waits for the other side's hello, so doing them in turn could deadlock the
// ring). The first failure cancels the other half and is the one reported.
func (r *Ring) connect(ctx context.Context, ln net.Listener, timeout time.Duration) (send, recv net.Conn, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer context.AfterFunc(ctx, func() { ln.Close() })()

	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
		cancel()
	}
	wg.Go(func() {
		var err error
		if recv, err = r.acceptPrev(ctx, ln); err != nil {
			fail(err)
		}
	})
	if send, err = r.dialNext(ctx); err != nil {
		fail(err)
	}
	wg.Wait()
	if first != nil {
		for _, c := range []net.Conn{send, recv} {
			if c != nil {
				c.Close()
			}
		}
		if errors.Is(first, context.DeadlineExceeded) {
			first = fmt.Errorf("%w; every rank must call NewRing, with the same Peers and Order, within DialTimeout (%v) of the others", first, timeout)
		}
		return nil, nil, first
	}
	return send, recv, nil
}

// acceptPrev accepts connections until one carries the predecessor's hello,
// refusing (closing) any other.
func (r *Ring) acceptPrev(ctx context.Context, ln net.Listener) (net.Conn, error) {
	var refused error
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			err = fmt.Errorf("hostlib: ring rank %d: no connection from predecessor %s: %w", r.rank, r.peer(r.prev), err)
			if refused != nil {
				err = fmt.Errorf("%w (last connection refused: %v)", err, refused)
			}
			return nil, err
		}
		if err := r.hello(ctx, c, r.prev, false); err != nil {
			c.Close()
			refused = fmt.Errorf("from %s: %w", c.RemoteAddr(), err)
			continue
		}
		return c, nil
	}
}

// dialNext dials the successor until it answers with its hello. A refused
// dial or a connection closed during the hello is retried with back-off
// until ctx ends; a hello from the wrong rank or ring is final.
func (r *Ring) dialNext(ctx context.Context) (net.Conn, error) {
	var d net.Dialer
	addr := r.peers[r.next]
	wait := ringRetryMin
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			if err = r.hello(ctx, c, r.next, true); err == nil {
				return c, nil
			}
			c.Close()
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("it closed the connection during the hello, refusing this rank (see its error): %w", err)
			}
			if errors.Is(err, ErrRingProtocol) {
				return nil, fmt.Errorf("hostlib: ring rank %d: successor %s: %w", r.rank, r.peer(r.next), err)
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("hostlib: ring rank %d: could not reach successor %s: %w (last attempt: %v)",
				r.rank, r.peer(r.next), ctx.Err(), err)
		case <-t.C:
		}
		wait = min(2*wait, ringRetryMax)
	}
}

// hello exchanges hellos on c with rank want: the dialer speaks first, the
// acceptor checks and answers. The acceptor gives a connection at most
// ringHelloWait to speak, so a silent stray cannot hold up the accept loop
// for long. The dialer waits for the answer as long as ctx allows: its hello
// may sit in the successor's accept backlog until the successor calls
// NewRing, and giving up early would leave a closed connection there for the
// successor to take as its predecessor.
func (r *Ring) hello(ctx context.Context, c net.Conn, want int, dialer bool) error {
	deadline, _ := ctx.Deadline()
	if !dialer {
		if d := time.Now().Add(ringHelloWait); deadline.IsZero() || d.Before(deadline) {
			deadline = d
		}
	}
	if err := c.SetDeadline(deadline); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	err := r.exchangeHellos(c, want, dialer)
	if !stop() && err == nil {
		err = ctx.Err() // the deadline may already be in the past
	}
	if err != nil {
		return err
	}
	return c.SetDeadline(time.Time{})
}

// exchangeHellos writes this rank's hello and reads and checks the peer's,
// in the order of the side given by dialer.
func (r *Ring) exchangeHellos(c net.Conn, want int, dialer bool) error {
	var mine, theirs [ringHelloLen]byte
	copy(mine[:], ringHelloMagic)
	mine[4] = ringVersion
	binary.BigEndian.PutUint32(mine[8:], uint32(r.rank))
	binary.BigEndian.PutUint32(mine[12:], uint32(r.world))
	binary.BigEndian.PutUint64(mine[16:], r.fingerprint)

	if dialer {
		if _, err := c.Write(mine[:]); err != nil {
			return err
		}
	}
	if _, err := io.ReadFull(c, theirs[:]); err != nil {
		return err
	}
	if err := r.checkHello(theirs[:], want); err != nil {
		return err
	}
	if !dialer {
		_, err := c.Write(mine[:])
		return err
	}
	return nil
}

// checkHello reports how a received hello differs from the one expected
// from rank want.
func (r *Ring) checkHello(h []byte, want int) error {
	rank := binary.BigEndian.Uint32(h[8:])
	world := binary.BigEndian.Uint32(h[12:])
	switch {
	case string(h[:4]) != ringHelloMagic:
		return fmt.Errorf("%w: not a ring peer (hello starts % x)", ErrRingProtocol, h[:4])
	case h[4] != ringVersion:
		return fmt.Errorf("%w: ring version %d, want %d", ErrRingProtocol, h[4], ringVersion)
	case world != uint32(r.world):
		return fmt.Errorf("%w: peer has world size %d, this rank %d", ErrRingProtocol, world, r.world)
	case rank != uint32(want):
		return fmt.Errorf("%w: peer is rank %d, want rank %d (do all ranks use the same Peers and Order?)", ErrRingProtocol, rank, want)
	case binary.BigEndian.Uint64(h[16:]) != r.fingerprint:
		return fmt.Errorf("%w: peer rank %d was given a different ring Order", ErrRingProtocol, rank)
	}
	return nil
}

// ringFingerprint hashes the ring order, so ranks given different orders
// refuse each other instead of exchanging chunks that do not line up.
func ringFingerprint(order []int) uint64 {
	h := fnv.New64a()
	var b [4]byte
	for _, rank := range order {
		binary.BigEndian.PutUint32(b[:], uint32(rank))
		h.Write(b[:])
	}
	return h.Sum64()
}

// AllReduce reduces buf, little-endian elements of dt, with op across every
// rank of the ring, in place: on return every rank holds the same bytes.
// Every rank must call it with the same length, dtype and op; a mismatch is
// reported as ErrRingProtocol. Any length that is a whole number of elements
// works, down to one element (ranks then exchange empty chunks).
//
// A failure, a peer closing or the cancellation of ctx closes the ring's
// connections, which makes the neighbours' calls fail in turn, so one failure
// ends the call on every rank instead of leaving some blocked; the ring is
// unusable afterwards and later calls return the first failure. When ctx is
// cancelled just as a call completes, the call returns nil (buf holds the
// result) but the ring is closed.
func (r *Ring) AllReduce(ctx context.Context, buf []byte, dt wire.DType, op wire.Op) error {
	fold, err := elem.KernelFor(dt, op)
	if err != nil {
		return fmt.Errorf("hostlib: ring allreduce: %w", err)
	}
	if len(buf)%dt.Size() != 0 {
		return fmt.Errorf("hostlib: ring allreduce: buffer of %d bytes is not a whole number of %v elements (%d bytes each)",
			len(buf), dt, dt.Size())
	}
	if maxChunk := (len(buf)/dt.Size() + r.world - 1) / r.world * dt.Size(); uint64(maxChunk) > ringMaxChunk {
		return fmt.Errorf("hostlib: ring allreduce: chunks of %d bytes exceed the frame limit of %d; split the vector", maxChunk, uint64(ringMaxChunk))
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("hostlib: ring allreduce: %w", err)
	}

	r.callMu.Lock()
	defer r.callMu.Unlock()
	if err := r.cause(); err != nil {
		return fmt.Errorf("hostlib: ring rank %d: unusable after an earlier failure: %w", r.rank, err)
	}
	if r.world == 1 {
		r.calls.Add(1)
		return nil
	}
	stop := context.AfterFunc(ctx, func() {
		r.abort(fmt.Errorf("hostlib: ring rank %d: allreduce interrupted: %w", r.rank, ctx.Err()))
	})
	err = r.run(buf, dt, op, fold)
	stop()
	if err != nil {
		r.failed.Add(1)
		return err
	}
	r.calls.Add(1)
	return nil
}

// run performs the 2(P−1) steps of one call. Chunk i is elements
// [i·n/P, (i+1)·n/P), so chunk sizes differ by at most one element and some
// are empty when n < P.
func (r *Ring) run(buf []byte, dt wire.DType, op wire.Op, fold elem.Kernel) error {
	r.gen++
	p, size := r.world, dt.Size()
	n := len(buf) / size
	chunk := func(i int) []byte {
		i = (i%p + p) % p
		return buf[i*n/p*size : (i+1)*n/p*size]
	}
	// Reduce-scatter: send the chunk folded last step, fold the
	// predecessor's into the next one. Afterwards position pos holds chunk
	// pos+1 reduced over every rank.
	for s := range p - 1 {
		if err := r.step(s, dt, op, chunk(r.pos-s), chunk(r.pos-s-1), fold); err != nil {
			return err
		}
	}
	// All-gather: pass the reduced chunks on, each overwriting the partial
	// one it replaces.
	for s := range p - 1 {
		if err := r.step(p-1+s, dt, op, chunk(r.pos+1-s), chunk(r.pos-s), nil); err != nil {
			return err
		}
	}
	return nil
}

// step sends out to the successor while receiving the predecessor's chunk
// into in (folding it when fold is set, copying otherwise). Sending runs on
// its own goroutine: were both sides to write a large chunk before reading,
// each would block once the socket buffers filled, and the ring would
// deadlock.
func (r *Ring) step(s int, dt wire.DType, op wire.Op, out, in []byte, fold elem.Kernel) error {
	return r.exchange(s, dt, op, out, func() error { return r.receive(s, dt, op, in, fold) })
}

// exchange sends out as step s's frame to the successor on the writer
// goroutine while receive reads the predecessor's, and returns the ring's
// failure, if any, once both are done.
func (r *Ring) exchange(s int, dt wire.DType, op wire.Op, out []byte, receive func() error) error {
	h := r.sendHdr[:]
	binary.BigEndian.PutUint16(h[0:], ringMarker)
	binary.BigEndian.PutUint16(h[2:], r.gen)
	binary.BigEndian.PutUint16(h[4:], uint16(s))
	h[6], h[7] = byte(dt), byte(op)
	binary.BigEndian.PutUint32(h[8:], uint32(len(out)))

	r.writer.Go(func() {
		r.iov = [2][]byte{h, out}
		v := net.Buffers(r.iov[:])
		if _, err := v.WriteTo(r.send); err != nil {
			r.abort(r.stepErr(s, "sending to", r.next, err))
			return
		}
		r.sent.Add(uint64(ringHeaderLen + len(out)))
	})
	if err := receive(); err != nil {
		r.abort(err)
	}
	r.writer.Wait()
	return r.cause()
}

// receive reads step s's frame from the predecessor into in.
func (r *Ring) receive(s int, dt wire.DType, op wire.Op, in []byte, fold elem.Kernel) error {
	h := r.recvHdr[:]
	if _, err := io.ReadFull(r.in, h); err != nil {
		return r.stepErr(s, "receiving from", r.prev, err)
	}
	if err := r.checkHeader(s, dt, op, len(in)); err != nil {
		return err
	}
	if fold == nil {
		if _, err := io.ReadFull(r.in, in); err != nil {
			return r.stepErr(s, "receiving from", r.prev, err)
		}
	} else {
		// Folding piece by piece overlaps the arithmetic with the rest of
		// the chunk arriving and keeps the scratch buffer small.
		for off := 0; off < len(in); off += len(r.scratch) {
			piece := r.scratch[:min(len(r.scratch), len(in)-off)]
			if _, err := io.ReadFull(r.in, piece); err != nil {
				return r.stepErr(s, "receiving from", r.prev, err)
			}
			fold(in[off:off+len(piece)], piece)
		}
	}
	r.received.Add(uint64(ringHeaderLen + len(in)))
	return nil
}

// checkHeader compares the frame header just read with what step s expects.
func (r *Ring) checkHeader(s int, dt wire.DType, op wire.Op, length int) error {
	h := r.recvHdr[:]
	marker := binary.BigEndian.Uint16(h[0:])
	gen, step := binary.BigEndian.Uint16(h[2:]), binary.BigEndian.Uint16(h[4:])
	gotDT, gotOp := wire.DType(h[6]), wire.Op(h[7])
	gotLen := binary.BigEndian.Uint32(h[8:])
	switch {
	case marker != ringMarker:
		return r.stepErr(s, "receiving from", r.prev,
			fmt.Errorf("%w: frame header % x does not start with the ring marker", ErrRingProtocol, h))
	case gen != r.gen || step != uint16(s) || gotDT != dt || gotOp != op || gotLen != uint32(length):
		return r.stepErr(s, "receiving from", r.prev, fmt.Errorf(
			"%w: got call %d step %d %v/%v %d bytes, want call %d step %d %v/%v %d bytes (do all ranks pass the same length, dtype and op?)",
			ErrRingProtocol, gen, step, gotDT, gotOp, gotLen, r.gen, s, dt, op, length))
	}
	return nil
}

// stepErr names the rank, the step and the peer an I/O error happened with.
// A connection closed or reset by the peer also wraps ErrRingPeerClosed.
func (r *Ring) stepErr(s int, verb string, peer int, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		err = fmt.Errorf("%w (%w)", ErrRingPeerClosed, err)
	}
	phase, k := "reduce-scatter", s
	if s >= r.world-1 {
		phase, k = "all-gather", s-(r.world-1)
	}
	return fmt.Errorf("hostlib: ring rank %d, %s step %d of %d, %s %s: %w",
		r.rank, phase, k+1, r.world-1, verb, r.peer(peer), err)
}

// peer names a rank and its address for error messages.
func (r *Ring) peer(rank int) string {
	return fmt.Sprintf("rank %d (%s)", rank, r.peers[rank])
}

// abort records err as the ring's failure, unless one is recorded already,
// and closes the connections so that any blocked read or write returns.
// It returns the errors of closing, for Close.
func (r *Ring) abort(err error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.broken != nil {
		return nil
	}
	r.broken = err
	var errs []error
	for _, c := range []net.Conn{r.send, r.recv} {
		if c != nil {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// cause returns the ring's recorded failure, nil while it is healthy.
func (r *Ring) cause() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.broken
}

// Close closes the ring's connections. A call in progress on this rank
// fails with ErrRingClosed and the neighbours' calls with ErrRingPeerClosed.
// Closing twice is harmless.
func (r *Ring) Close() error {
	return r.abort(ErrRingClosed)
}

// Stats returns the ring's counters so far.
func (r *Ring) Stats() RingStats {
	return RingStats{
		Calls:         r.calls.Load(),
		Failed:        r.failed.Load(),
		BytesSent:     r.sent.Load(),
		BytesReceived: r.received.Load(),
	}
}

// RunLocalRing runs one ring allreduce among len(bufs) ranks inside this
// process, over TCP on 127.0.0.1 ephemeral ports: bufs[i] is rank i's vector,
// reduced in place. order is the ring order as in RingConfig.Order (nil for
// rank order). It serves in-process runs of the baseline and tests; the
// first failure of any rank is returned.
func RunLocalRing(ctx context.Context, bufs [][]byte, dt wire.DType, op wire.Op, order []int) error {
	if len(bufs) == 0 {
		return errors.New("hostlib: RunLocalRing needs at least one buffer")
	}
	for i, b := range bufs {
		if len(b) != len(bufs[0]) {
			return fmt.Errorf("hostlib: RunLocalRing: bufs[%d] has %d bytes, bufs[0] %d; every rank needs the same length", i, len(b), len(bufs[0]))
		}
	}
	if _, err := elem.KernelFor(dt, op); err != nil {
		return fmt.Errorf("hostlib: RunLocalRing: %w", err)
	}
	rings, err := NewLocalRings(ctx, len(bufs), order)
	if err != nil {
		return err
	}
	defer closeRings(rings)
	g, gctx := errgroup.WithContext(ctx)
	for i, r := range rings {
		g.Go(func() error { return r.AllReduce(gctx, bufs[i], dt, op) })
	}
	return g.Wait()
}

// NewLocalRings builds a ring of p ranks inside this process on 127.0.0.1
// (ring order as in RingConfig.Order, nil for rank order): it binds every
// port first, so each rank knows all addresses, then builds the ranks
// concurrently. The caller closes each ring.
func NewLocalRings(ctx context.Context, p int, order []int) ([]*Ring, error) {
	lns := make([]net.Listener, p)
	peers := make([]string, p)
	for i := range lns {
		ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			for _, l := range lns[:i] {
				l.Close()
			}
			return nil, fmt.Errorf("hostlib: local ring: listen: %w", err)
		}
		lns[i], peers[i] = ln, ln.Addr().String()
	}
	rings := make([]*Ring, p)
	g, gctx := errgroup.WithContext(ctx)
	for i := range rings {
		g.Go(func() (err error) {
			cfg := RingConfig{Rank: i, Peers: peers, Order: order, Listener: lns[i]}
			rings[i], err = NewRing(gctx, cfg)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		closeRings(rings)
		return nil, err
	}
	return rings, nil
}

// closeRings closes every ring that was built.
func closeRings(rings []*Ring) {
	for _, r := range rings {
		if r != nil {
			r.Close()
		}
	}
}

// closeListener closes ln if there is one.
func closeListener(ln net.Listener) {
	if ln != nil {
		ln.Close()
	}
}
