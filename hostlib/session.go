package hostlib

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/wire"
)

// rxBatches is how many receive batches circulate between the reader and
// the goroutine in a call: one being filled, the others queued or being
// processed.
const rxBatches = 4

// Session is one rank's membership in a job on a Flare switch: the socket,
// the job's parameters as the switch admitted them, and the buffers every
// AllReduce reuses. Make one with Join and end it with Close.
//
// Its methods may be called from several goroutines; AllReduce calls run
// one at a time, in the order they take the session's lock. Every rank must
// make the same sequence of calls, as with MPI and NCCL collectives: calls
// are matched across ranks by their number (the generation).
type Session struct {
	opts Options        // validated, defaults applied
	sw   netip.AddrPort // the switch
	conn conn.Conn

	// Set once by the join-ack, read-only afterwards.
	group     conn.Conn      // the job's multicast group (Options.Multicast), when the ack names one; else nil
	groupAddr netip.AddrPort // its address
	window    int            // W as the switch granted it
	algo      wire.Algo
	buffers   int
	pe        int // elements per packet and per block
	blocks    int
	esize     int      // bytes per element
	order     []uint32 // this rank's staggered sending order
	limit     int      // blocks in flight at most: min(window, blocks)

	// The readers (one per socket) hand filled batches over full and get
	// them back over their own free channel (rxBatch.home); every channel
	// has room for every batch, so no send blocks.
	free, full chan *rxBatch
	closing    chan struct{} // closed by Close: ends a running call and the readers
	readers    sync.WaitGroup
	closeOnce  sync.Once
	closeErr   error

	callMu   sync.Mutex // held by Join's handshake and by each call; guards what follows
	gen      uint32     // the current or last call's generation
	trk      tracker    // the call's blocks: done, in flight, due
	buf      []byte     // the call's vector (wire encoding)
	hdr      wire.Header
	session  uint32          // this session's id, in its join's Block field: random, never 0
	tx       []conn.Datagram // data packets queued for the next WriteBatch
	ntx      int
	ctl      []conn.Datagram // control packets: join, leave
	timer    *time.Timer     // the next retransmission check or the call's timeout
	wakeAt   time.Duration   // when timer fires, since the call started
	start    time.Time       // of the call running
	deadline time.Duration   // the call's Options.Timeout
	sendErr  error           // the last transient send error of the call
	wait     waitNotes       // the switch's CodeWaiting answers during this call
	contrib  []uint16        // bounded time: contributors of each block of the last call
	scratch  []byte          // the wire encoding on big-endian machines
	sp       sparseCall      // a sparse session's per-call state
	kind     payloadKind     // dense or sparse (&sp), chosen by admit
	rxHdr    wire.Header     // the header results decodes into
	rxAt     time.Duration   // when results took its batch, since the call's start: every packet's arrival
	aborted  *AbortedError   // set once the switch said a member aborted the job: every later call fails with it

	stats counters
}

// rxBatch is one receive's datagrams with their memory (conn.Batch: a
// region they are lent from, where the conn lends), how many it holds, and
// the free channel of the reader it goes back to.
type rxBatch struct {
	*conn.Batch
	n    int
	home chan *rxBatch
}

// release gives b back to its reader.
func (b *rxBatch) release() { b.home <- b }

// newBatches returns a free channel holding rxBatches receive batches of c.
func newBatches(c conn.Conn) chan *rxBatch {
	free := make(chan *rxBatch, rxBatches)
	for range rxBatches {
		free <- &rxBatch{Batch: conn.NewBatch(c, rxRegionMessages, maxDatagram), home: free}
	}
	return free
}

// rxRegionMessages is how many coalesced messages a batch's region takes
// in one receive: 256 KiB, up to 256 datagrams.
const rxRegionMessages = 4

// counters are the session's statistics, atomics so that Stats may run
// during a call.
type counters struct {
	calls, failed, sent, received, retransmits, duplicates, ignored, partial, sendErrors atomic.Uint64
	sentBytes, receivedBytes, spilledPairs, aborts                                       atomic.Uint64
	last, total                                                                          atomic.Int64
	drops                                                                                [numDropReasons]atomic.Uint64
}

// Stats counts a session's traffic and calls.
type Stats struct {
	Calls           uint64        // AllReduce calls that completed
	Failed          uint64        // AllReduce calls that started and returned an error
	PacketsSent     uint64        // datagrams sent: data, retransmissions, joins, leaves
	PacketsReceived uint64        // datagrams received, whatever they held
	Retransmits     uint64        // data packets sent again because their result was overdue
	Duplicates      uint64        // results of blocks already done (answers to retransmissions that crossed)
	Ignored         uint64        // datagrams dropped: the sum of Dropped
	Dropped         Drops         // datagrams dropped, by reason (other sources, jobs, tokens, generations, malformed, ...)
	Aborts          uint64        // calls of this session that failed here and aborted the job for every member
	Partial         uint64        // results the switch released before every rank contributed
	SendErrors      uint64        // datagrams the socket refused (counted as lost)
	BytesSent       uint64        // UDP payload bytes of the datagrams sent (headers included)
	BytesReceived   uint64        // UDP payload bytes of the datagrams received
	SpilledPairs    uint64        // sparse: pairs the switch sent back unaggregated (hash storage)
	LastDuration    time.Duration // of the last completed call
	TotalDuration   time.Duration // of all completed calls
}

// Join opens a socket, joins the job that opts describe on the switch and
// returns once the switch has admitted it, which happens when all World
// ranks have joined. The join is sent again every 100 ms until the switch
// answers or JoinTimeout (or ctx) expires.
//
// Invalid options give an error that names the field and its allowed
// range. A switch that refuses the job gives a *SwitchError (errors.Is
// ErrRefused when it lacks memory); no answer in time gives an error that
// matches ErrTimeout.
func Join(ctx context.Context, opts Options) (*Session, error) {
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, fmt.Errorf("hostlib: join: %w", err)
	}
	sw, err := resolveSwitch(o.Switch)
	if err != nil {
		return nil, fmt.Errorf("hostlib: join: Switch = %q: %w", o.Switch, err)
	}
	if o.Multicast && !sw.Addr().Is4() {
		return nil, fmt.Errorf("hostlib: join: Multicast with Switch = %q (%v): multicast results are IPv4 only", o.Switch, sw)
	}
	c := o.Conn
	if c == nil {
		if c, err = conn.ListenUDP(listenAddr(sw), o.socket()); err != nil {
			return nil, fmt.Errorf("hostlib: join: %w", err)
		}
	}
	s := newSession(o, sw, c)
	s.startReader(s.free)
	if err := s.join(ctx); err != nil {
		// Whatever ended it, a copy of the join may be on its way still
		// (a resend that crossed the switch's refusal or abort notice), and
		// the switch would hold a pending job for it until its join
		// timeout: the Leave, sent after every copy on the same socket,
		// takes it out again. A switch holding nothing drops it.
		s.joinAbort(err)
		s.shutdown(true)
		return nil, fmt.Errorf("hostlib: join job %d as rank %d of %d at %v: %w", o.Job, o.Rank, o.World, sw, err)
	}
	return s, nil
}

// newSession builds a session around c, with the receive batches and the
// control packets; the data path is sized later, by admit.
func newSession(o Options, sw netip.AddrPort, c conn.Conn) *Session {
	s := &Session{
		opts:    o,
		sw:      sw,
		conn:    c,
		esize:   o.DType.Size(),
		free:    newBatches(c),
		full:    make(chan *rxBatch, 2*rxBatches), // the unicast socket's batches and a group's
		closing: make(chan struct{}),
		timer:   time.NewTimer(time.Hour),
	}
	s.timer.Stop()
	s.session = rand.Uint32() | 1
	s.hdr = wire.Header{
		Type:  wire.TypeData,
		Job:   o.Job,
		Token: o.Token,
		Child: uint16(o.Rank),
		DType: o.DType,
		Op:    o.Op,
	}
	const ctlSize = wire.HeaderLen + wire.JoinBodyLen
	backing := make([]byte, leaveCopies*ctlSize)
	s.ctl = make([]conn.Datagram, leaveCopies)
	for i := range s.ctl {
		s.ctl[i] = conn.Datagram{Buf: backing[i*ctlSize : (i+1)*ctlSize : (i+1)*ctlSize], Addr: sw}
	}
	return s
}

// startReader starts the reader goroutine of the socket whose batches
// circulate over free.
func (s *Session) startReader(free chan *rxBatch) {
	s.readers.Add(1)
	go s.read(free)
}

// read is a reader goroutine: it fills free batches from their socket and
// hands them over until the session closes.
func (s *Session) read(free chan *rxBatch) {
	defer s.readers.Done()
	for {
		var b *rxBatch
		select {
		case b = <-free:
		case <-s.closing:
			return
		}
		n, err := b.Read()
		if err != nil {
			b.release()
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Nothing else is expected from an unconnected UDP socket;
			// pause so that a persistent failure does not spin.
			select {
			case <-s.closing:
				return
			case <-time.After(time.Millisecond):
			}
			continue
		}
		s.stats.received.Add(uint64(n))
		var bytes int
		for i := range b.Msgs[:n] {
			bytes += b.Msgs[i].N
		}
		s.stats.receivedBytes.Add(uint64(bytes))
		b.n = n
		s.full <- b
	}
}

// joinTimeoutError is Join's timeout: no admission in time, because the
// switch is not there or because not every rank joined.
type joinTimeoutError struct {
	after time.Duration
	world int
}

func (e *joinTimeoutError) Error() string {
	return fmt.Sprintf("no answer within %v: is the switch running, and are all %d ranks joining?",
		e.after.Round(time.Millisecond), e.world)
}

func (e *joinTimeoutError) Is(target error) bool {
	return target == ErrTimeout || target == context.DeadlineExceeded
}

func (e *joinTimeoutError) Timeout() bool { return true }

// join runs the handshake: send the join, resend it every joinResend, until
// a JoinAck or an Error for this job arrives.
func (s *Session) join(ctx context.Context) error {
	s.callMu.Lock()
	defer s.callMu.Unlock()
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, s.opts.JoinTimeout)
	defer cancel()
	body := wire.JoinBody{
		World:         uint16(s.opts.World),
		Algo:          s.opts.Algo,
		Buffers:       uint8(s.opts.Buffers),
		Storage:       s.opts.Storage,
		Elements:      uint64(s.opts.Elements),
		PacketElems:   uint32(s.opts.PacketElems), // dense only (Options.validate)
		BlockElems:    uint32(s.opts.BlockElems),  // sparse only
		TimeoutMillis: uint32(min(s.opts.Timeout.Milliseconds(), math.MaxUint32)),
	}
	if s.opts.Reproducible {
		body.Options |= wire.OptReproducible
	}
	if s.opts.Sparse {
		body.Options |= wire.OptSparse
	}
	if s.opts.Multicast {
		body.Options |= wire.OptMulticast
	}
	if s.opts.BlockDeadline > 0 {
		body.Options |= wire.OptBounded
		body.DeadlineMillis = uint16(s.opts.BlockDeadline / time.Millisecond)
	}
	// The join names this session (wire: a join's Block), the same in
	// every resend: a switch that admitted the job with another session
	// of this rank knows that one is gone, and that this one's calls,
	// which start again at generation 1, cannot go on with the others'.
	h := s.hdr
	h.Block = s.session
	d := &s.ctl[0]
	d.N = len(wire.AppendJoin(d.Buf[:0], &h, &body))

	resend := time.NewTicker(joinResend)
	defer resend.Stop()
	if err := s.sendControl(s.ctl[:1]); err != nil {
		return err
	}
	for {
		select {
		case b := <-s.full:
			done, err := s.joinReplies(b)
			b.release()
			if done || err != nil {
				return err
			}
		case <-resend.C:
			if err := s.sendControl(s.ctl[:1]); err != nil {
				return err
			}
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				// The configured timeout, unless the caller's deadline came first.
				return &joinTimeoutError{after: min(time.Since(start), s.opts.JoinTimeout), world: s.opts.World}
			}
			return ctx.Err()
		}
	}
}

// joinReplies looks through a batch for the switch's answer to the join.
// It reports whether one settled the join, with the error if it refused.
func (s *Session) joinReplies(b *rxBatch) (bool, error) {
	for i := range b.Msgs[:b.n] {
		var h wire.Header
		payload, ok := s.receive(&b.Msgs[i], &h)
		if !ok {
			continue
		}
		switch h.Type {
		case wire.TypeJoinAck:
			var ack wire.JoinAckBody
			if ack.Unmarshal(payload) != nil {
				s.drop(dropMalformed)
				continue
			}
			return true, s.admit(&ack)
		case wire.TypeError:
			var e wire.ErrorBody
			switch {
			case e.Unmarshal(payload) != nil:
				s.drop(dropMalformed)
			case e.Code == wire.CodeAborted: // another member gave up before the job was admitted
				s.aborted = &AbortedError{Job: s.opts.Job, Rank: int(h.Child), Reason: e.Message()}
				return true, s.aborted
			case e.Code == wire.CodeWaiting:
				s.drop(dropUnexpected) // about a call, and there is none yet
			default:
				return true, &SwitchError{Code: e.Code, Message: e.Message()}
			}
			continue
		}
		if h.Type == wire.TypeResult || h.Type == wire.TypeSparse || h.Type == wire.TypeSpill {
			s.drop(dropUnexpected) // the job runs, and this rank's ack was lost: the join is resent
		} else {
			s.drop(dropType)
		}
	}
	return false, nil
}

// sendControl sends control packets (join, leave). Losing one is fine, as
// both are repeated, but a closed or unusable socket is not.
func (s *Session) sendControl(msgs []conn.Datagram) error {
	n, err := s.conn.WriteBatch(msgs)
	s.stats.sent.Add(uint64(n))
	if err != nil && (errors.Is(err, net.ErrClosed) || errors.Is(err, conn.ErrBadAddr) || errors.Is(err, conn.ErrDatagramTooLarge)) {
		return fmt.Errorf("send to %v: %w", s.sw, err)
	}
	return nil
}

// Rank returns this host's rank in the job.
func (s *Session) Rank() int { return s.opts.Rank }

// World returns the number of ranks in the job.
func (s *Session) World() int { return s.opts.World }

// Window returns W, the blocks this host may have in flight, as the switch
// granted it (sized by Little's law from its buffer quota).
func (s *Session) Window() int { return s.window }

// Algo returns the aggregation design the switch chose (never AlgoAuto).
func (s *Session) Algo() wire.Algo { return s.algo }

// Buffers returns B, the aggregation buffers per block when Algo is multi.
func (s *Session) Buffers() int { return s.buffers }

// Contributors returns, for a bounded-time session (Options.BlockDeadline),
// how many ranks contributed to each block of the last completed call: the
// world size where the block was complete, fewer where the switch released
// it at its deadline. A caller that averages divides each block by its
// count. It returns nil for other sessions; the slice is the session's and
// changes with the next call.
func (s *Session) Contributors() []uint16 { return s.contrib }

// Group returns the multicast group the switch sends this job's results
// to (Options.Multicast), or the zero AddrPort where it sends them to each
// rank.
func (s *Session) Group() netip.AddrPort { return s.groupAddr }

// Blocks returns the number of blocks (packets per host) of one allreduce.
func (s *Session) Blocks() int { return s.blocks }

// PacketElems returns the elements per packet and per block; the last block
// may be shorter.
func (s *Session) PacketElems() int { return s.pe }

// Stats returns the session's counters. It may be called at any time, also
// during a call.
func (s *Session) Stats() Stats {
	c := &s.stats
	return Stats{
		Calls:           c.calls.Load(),
		Failed:          c.failed.Load(),
		PacketsSent:     c.sent.Load(),
		PacketsReceived: c.received.Load(),
		Retransmits:     c.retransmits.Load(),
		Duplicates:      c.duplicates.Load(),
		Ignored:         c.ignored.Load(),
		Dropped:         c.dropped(),
		Aborts:          c.aborts.Load(),
		Partial:         c.partial.Load(),
		SendErrors:      c.sendErrors.Load(),
		BytesSent:       c.sentBytes.Load(),
		BytesReceived:   c.receivedBytes.Load(),
		SpilledPairs:    c.spilledPairs.Load(),
		LastDuration:    time.Duration(c.last.Load()),
		TotalDuration:   time.Duration(c.total.Load()),
	}
}

// Close leaves the job and closes the socket. A call in progress returns an
// error wrapping ErrClosed, and later calls fail the same way. The switch
// is told with a Leave packet, sent twice and not acknowledged, so that it
// can free the job's buffers once every rank has left; a switch that misses
// both copies frees them at its job timeout. Close is idempotent: calls
// after the first return the first one's result.
func (s *Session) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.shutdown(true) })
	return s.closeErr
}

// shutdown stops a running call and the reader, sends Leave if asked, and
// closes the socket.
func (s *Session) shutdown(leave bool) error {
	close(s.closing)
	s.callMu.Lock() // wait for a running call to see closing and return
	defer s.callMu.Unlock()
	if leave {
		h := s.hdr
		h.Type, h.Flags, h.Count = wire.TypeLeave, 0, 0
		for i := range s.ctl {
			d := &s.ctl[i]
			d.N = len(wire.AppendPacket(d.Buf[:0], &h, nil))
		}
		_ = s.sendControl(s.ctl) // best effort
	}
	err := s.conn.Close()
	if s.group != nil {
		err = errors.Join(err, s.group.Close())
	}
	s.readers.Wait()
	s.timer.Stop()
	if err != nil {
		return fmt.Errorf("hostlib: close: %w", err)
	}
	return nil
}
