package hostlib

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/wire"
)

// Aborts (NCCL's ncclCommAbort). A call that fails on this host's side
// (its timeout, a cancelled context, Close during the call, a socket that
// cannot send) leaves the other ranks waiting for blocks this rank will
// never send, until their own timeouts. So the session tells the switch:
// an Abort with the cause and a reason ("allreduce generation 3 timed out
// after 30s with 12 of 4096 blocks missing: every stuck block waits for
// rank 2 ..."), after which the switch ends the job and every other member's
// call fails with an *AbortedError naming this rank, within a round trip.
// A rank that dies without a word (kill -9) is detected by the first
// survivor's timeout, whose Abort names the dead rank as the one every
// stuck block waits for.
//
// A call that fails because of the switch (a *SwitchError: the job timed
// out or is unknown there) or because another member aborted sends none:
// the switch has ended the job already.

// abortCopies is how many times an Abort is sent: it is not acknowledged,
// and the copies cost a few hundred bytes once per failed call.
const abortCopies = 3

// abortFor sends the switch an Abort for err, the failure of call gen,
// unless the switch ended the job itself.
func (s *Session) abortFor(err error, gen uint32) {
	code, reason, ok := s.abortReason(err, gen)
	if !ok {
		return
	}
	s.sendAbort(gen, code, reason)
	s.stats.aborts.Add(1)
}

// sendAbort sends abortCopies Aborts: this rank in Child and Block, the
// failed call's generation (0 for a join), the cause and the reason.
func (s *Session) sendAbort(gen uint32, code wire.ErrorCode, reason string) {
	h := wire.Header{Version: wire.Version, Job: s.opts.Job, Token: s.opts.Token, Generation: gen,
		Block: uint32(s.opts.Rank), Child: uint16(s.opts.Rank)}
	pkt := wire.AppendAbort(nil, &h, code, reason)
	msgs := make([]conn.Datagram, abortCopies)
	for i := range msgs {
		msgs[i] = conn.Datagram{Buf: pkt, N: len(pkt), Addr: s.sw}
	}
	_ = s.sendControl(msgs) // best effort: a socket that cannot send has nothing else to say either
}

// abortReason is the cause and the reason an Abort for err gives, and
// false when err needs none.
func (s *Session) abortReason(err error, gen uint32) (wire.ErrorCode, string, bool) {
	var (
		se *SwitchError
		ae *AbortedError
		te *TimeoutError
	)
	switch {
	case errors.As(err, &se), errors.As(err, &ae):
		return 0, "", false
	case errors.As(err, &te):
		var b strings.Builder
		fmt.Fprintf(&b, "allreduce generation %d timed out after %v with %d of %d blocks missing",
			te.Generation, te.After.Round(time.Millisecond), te.Missing, te.Blocks)
		if te.Waiting != "" {
			b.WriteString(": " + te.Waiting)
		}
		return wire.CodeTimeout, b.String(), true
	case errors.Is(err, ErrClosed):
		return wire.CodeAborted, fmt.Sprintf("session closed during allreduce generation %d", gen), true
	case errors.Is(err, context.Canceled):
		return wire.CodeAborted, fmt.Sprintf("allreduce generation %d cancelled", gen), true
	}
	return wire.CodeInternal, fmt.Sprintf("allreduce generation %d failed: %v", gen, err), true
}

// joinAbort tells the switch that this rank's Join was cancelled, so the
// ranks that joined already fail at once instead of at their join timeout.
// A Join that timed out or was refused tells the others nothing: a
// refused one is refused to them too, and after a timeout they time out
// as well.
func (s *Session) joinAbort(err error) {
	if errors.Is(err, context.Canceled) {
		s.sendAbort(0, wire.CodeAborted, "join cancelled")
	}
}
