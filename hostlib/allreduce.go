package hostlib

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/wire"
)

// AllReduceBytes reduces buf across every rank of the job with the job's
// op, in place: on return every rank holds the same bytes. buf is the
// vector's wire encoding, Elements little-endian elements of the job's
// dtype, so len(buf) must be Elements × DType.Size().
//
// The vector travels in Blocks() packets, sent in this rank's staggered
// order with at most Window() of them in flight; a block whose result is
// late is sent again, with a timeout that starts at 20 ms and doubles up to
// 1 s. The call fails with a *TimeoutError when Options.Timeout passes (or
// ctx's deadline, whichever comes first), with an error wrapping
// ctx.Err() when ctx is cancelled, with a *SwitchError when the switch
// reports the job failed, with an *AbortedError when another rank aborted
// the job, and with ErrClosed after Close. A call that fails here (timeout,
// cancelled, closed) aborts the job for every rank (see the package
// documentation). After a failure buf holds a mix of input and result:
// Close and Join again.
func (s *Session) AllReduceBytes(ctx context.Context, buf []byte) error {
	if want := s.opts.Elements * s.esize; len(buf) != want {
		return fmt.Errorf("hostlib: allreduce: buffer of %d bytes, want %d (%d elements of %v)",
			len(buf), want, s.opts.Elements, s.opts.DType)
	}
	if s.opts.Sparse {
		return errors.New("hostlib: allreduce: the session joined a sparse job: use SparseAllReduce")
	}
	s.callMu.Lock()
	defer s.callMu.Unlock()
	return s.call(ctx, buf)
}

// AllReduce reduces buf across every rank of the job, in place, as
// AllReduceBytes does, with the job's op (Options.Op): the op is the
// job's, fixed at Join, where the switch set up its handler for it, so a
// call takes none. T must be the Go type of the job's dtype (see DTypeOf)
// and len(buf) the job's Elements. On a
// little-endian machine buf's memory is sent and overwritten as it is, with
// no copy; elsewhere it is encoded into a buffer of the session first.
func AllReduce[T Element](ctx context.Context, s *Session, buf []T) error {
	if s.opts.Sparse {
		return errors.New("hostlib: allreduce: the session joined a sparse job: use SparseAllReduce")
	}
	if err := checkElement[T](s.opts.DType); err != nil {
		return err
	}
	if len(buf) != s.opts.Elements {
		return fmt.Errorf("hostlib: AllReduce on %d elements, but the job's vector has %d", len(buf), s.opts.Elements)
	}
	if nativeLittleEndian {
		return s.AllReduceBytes(ctx, viewBytes(buf))
	}
	s.callMu.Lock()
	defer s.callMu.Unlock()
	if s.scratch == nil {
		s.scratch = make([]byte, s.opts.Elements*s.esize)
	}
	encodeLE(s.scratch, buf)
	if err := s.call(ctx, s.scratch); err != nil {
		return err
	}
	decodeLE(buf, s.scratch)
	return nil
}

// call runs one allreduce over buf and keeps the statistics. callMu is held.
func (s *Session) call(ctx context.Context, buf []byte) error {
	select {
	case <-s.closing:
		return fmt.Errorf("hostlib: allreduce: %w", ErrClosed)
	default:
	}
	if s.aborted != nil {
		return s.aborted
	}
	if err := ctx.Err(); err != nil {
		// The other ranks make this call: they would wait for it.
		err = fmt.Errorf("hostlib: allreduce generation %d not started: %w", s.gen+1, err)
		s.abortFor(err, s.gen+1)
		return err
	}
	s.gen++
	start := time.Now()
	err := s.run(ctx, buf, start)
	s.buf = nil // keep no reference to the caller's memory
	s.dropQueued()
	if err != nil {
		s.stats.failed.Add(1)
		s.abortFor(err, s.gen)
		return err
	}
	d := time.Since(start)
	s.stats.calls.Add(1)
	s.stats.last.Store(int64(d))
	s.stats.total.Add(int64(d))
	return nil
}

// run is the loop of one call: launch blocks into the window, send them in
// batches, and wait for results, the next retransmission, the timeout, the
// context or Close. Times are durations since start.
func (s *Session) run(ctx context.Context, buf []byte, start time.Time) error {
	t := &s.trk
	s.begin(buf, start)
	s.deadline, s.wakeAt = s.opts.Timeout, never
	s.arm(0, s.deadline)
	defer s.timer.Stop()
	for t.completed < s.blocks {
		now := time.Since(start)
		if now >= s.deadline {
			return s.timeoutError(now)
		}
		if err := s.launch(now); err != nil {
			return err
		}
		if err := s.flush(); err != nil {
			return err
		}
		select {
		case b := <-s.full:
			if err := s.take(b); err != nil {
				return err
			}
		case <-s.timer.C:
			s.wakeAt = never
			// Results that arrived while this goroutine was not running
			// are taken first: select picks among ready cases at random,
			// and a process that was descheduled wakes with both ready.
			if err := s.drainResults(); err != nil {
				return err
			}
			if err := s.retransmit(time.Since(start)); err != nil {
				return err
			}
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return s.timeoutError(time.Since(start))
			}
			return fmt.Errorf("hostlib: allreduce generation %d: %d of %d blocks missing: %w",
				s.gen, s.blocks-t.completed, s.blocks, ctx.Err())
		case <-s.closing:
			return fmt.Errorf("hostlib: allreduce generation %d interrupted: %w", s.gen, ErrClosed)
		}
	}
	return nil
}

// begin sets up the state of call s.gen, over buf, started at start:
// nothing done or in flight, every block counted whole until the switch
// says otherwise, and the packets of this call that came early taken.
func (s *Session) begin(buf []byte, start time.Time) {
	s.trk.reset()
	for i := range s.contrib {
		s.contrib[i] = uint16(min(s.opts.World, 1<<16-1))
	}
	s.start = start
	s.buf, s.hdr.Generation, s.sendErr = buf, s.gen, nil
	s.wait.reset()
	s.kind.begin(s)
}

// take handles one batch from the reader and gives it back.
func (s *Session) take(b *rxBatch) error {
	err := s.results(b)
	b.release()
	return err
}

// drainResults takes every batch of packets the reader has queued, without
// waiting for more.
func (s *Session) drainResults() error {
	for {
		select {
		case b := <-s.full:
			if err := s.take(b); err != nil {
				return err
			}
		default:
			return nil
		}
	}
}

// arm makes the timer fire at at (since the call started; now is the
// present) unless it is set to fire earlier already. Firing early is
// harmless: retransmit finds nothing due and arms it again.
func (s *Session) arm(now, at time.Duration) {
	if at < s.wakeAt {
		s.wakeAt = at
		s.timer.Reset(at - now)
	}
}

// launch queues first transmissions, in the staggered order, until the
// window is full.
func (s *Session) launch(now time.Duration) error {
	t := &s.trk
	for len(t.flights) < s.limit && t.next < s.blocks {
		b := s.order[t.next]
		t.next++
		if t.isDone(b) {
			continue // released before this rank sent it (a partial result)
		}
		s.arm(now, t.launch(b, now))
		if err := s.queue(b, 0); err != nil {
			return err
		}
	}
	return nil
}

// retransmit queues every block in flight whose result is overdue, backs
// off its timeout, and arms the timer for the next one due.
func (s *Session) retransmit(now time.Duration) error {
	next := s.deadline
	for i := range s.trk.flights {
		f := &s.trk.flights[i]
		if f.due <= now {
			f.backoff(now)
			s.stats.retransmits.Add(1)
			if err := s.queue(f.block, wire.FlagRetransmit); err != nil {
				return err
			}
		}
		next = min(next, f.due)
	}
	s.arm(now, next)
	return nil
}

// blockSpan returns the first element of block b and its element count.
func (s *Session) blockSpan(b uint32) (off, n int) {
	off = int(b) * s.pe
	return off, min(s.pe, s.opts.Elements-off)
}

// flush sends the queued data packets. A datagram the socket refuses for a
// passing reason (no buffer space, a route that went away) counts as lost,
// as if the network had dropped it: retransmission recovers it, and a
// timeout reports the error. A closed socket or a datagram that can never
// go out ends the call.
func (s *Session) flush() error {
	msgs := s.tx[:s.ntx]
	s.ntx = 0
	for len(msgs) > 0 {
		n, err := s.conn.WriteBatch(msgs)
		s.stats.sent.Add(uint64(n))
		var bytes int
		for i := range msgs[:min(n, len(msgs))] {
			bytes += msgs[i].Size()
		}
		s.stats.sentBytes.Add(uint64(bytes))
		if err == nil || n >= len(msgs) {
			return nil
		}
		switch {
		case errors.Is(err, net.ErrClosed):
			return fmt.Errorf("hostlib: allreduce generation %d: %w", s.gen, ErrClosed)
		case errors.Is(err, conn.ErrBadAddr), errors.Is(err, conn.ErrDatagramTooLarge):
			return fmt.Errorf("hostlib: allreduce generation %d: send to %v: %w", s.gen, s.sw, err)
		}
		s.sendErr = err
		s.stats.sendErrors.Add(1)
		msgs = msgs[n+1:]
	}
	return nil
}

// dropQueued forgets the packets a failed call left unsent and every
// reference the send batch holds into the caller's vector.
func (s *Session) dropQueued() {
	s.ntx = 0
	for i := range s.tx {
		s.tx[i].Tail = nil
	}
}

// timeoutError describes the call's missing blocks after running for after.
func (s *Session) timeoutError(after time.Duration) *TimeoutError {

	return &TimeoutError{
		Generation: s.gen,
		Missing:    s.blocks - s.trk.completed,
		Blocks:     s.blocks,
		First:      s.trk.missing(maxFirstMissing),
		Switch:     s.sw.String(),
		World:      s.opts.World,
		After:      after,
		LastSend:   s.sendErr,
		Waiting:    s.waitingSummary(),
	}
}
