package hostlib

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/wire"
)

// abortSession is a session of rank 2 of job 9 whose switch is a bare
// conn on an in-memory network, to read what the session sends it.
func abortSession(t *testing.T) (*Session, conn.Conn) {
	t.Helper()
	n := conn.NewMemNetwork()
	host, err := n.Listen(netip.AddrPort{})
	if err != nil {
		t.Fatal(err)
	}
	sw, err := n.Listen(netip.AddrPort{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Close(); sw.Close() })
	return &Session{opts: Options{Job: 9, Token: 77, Rank: 2}, conn: host, sw: sw.LocalAddr()}, sw
}

// abortSent is one Abort the switch received: its header, code and text.
type abortSent struct {
	h    wire.Header
	code wire.ErrorCode
	text string
}

// sent reads what the switch has received up to a marker the host sends
// last, so that nothing sent is nothing read.
func sent(t *testing.T, s *Session, sw conn.Conn) []abortSent {
	t.Helper()
	mark := wire.AppendPacket(nil, &wire.Header{Version: wire.Version, Type: wire.TypeLeave, Job: 12345}, nil)
	if err := s.sendControl([]conn.Datagram{{Buf: mark, N: len(mark), Addr: s.sw}}); err != nil {
		t.Fatal(err)
	}
	var out []abortSent
	msgs := make([]conn.Datagram, 8)
	for i := range msgs {
		msgs[i].Buf = make([]byte, 2048)
	}
	for {
		n, err := sw.ReadBatch(msgs) // the marker is on its way: this returns
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs[:n] {
			var a abortSent
			payload, err := a.h.Unmarshal(m.Buf[:m.N])
			if err != nil {
				t.Fatal(err)
			}
			if a.h.Job == 12345 {
				return out
			}
			var e wire.ErrorBody
			if err := e.Unmarshal(payload); err != nil {
				t.Fatal(err)
			}
			a.code, a.text = e.Code, e.Message()
			out = append(out, a)
		}
	}
}

// A failed call tells the switch why, three times (an Abort is not
// acknowledged), as this rank of this job and call; a failure the switch
// told this rank of (its refusal, another rank's abort) is not echoed.
func TestAbortFor(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code wire.ErrorCode
		text string // "" = no Abort
	}{
		{&TimeoutError{Generation: 3, Missing: 2, Blocks: 8, After: 1500 * time.Millisecond, Waiting: "block 1 of allreduce 3 waits for rank 0: x"},
			wire.CodeTimeout, "allreduce generation 3 timed out after 1.5s with 2 of 8 blocks missing: block 1 of allreduce 3 waits for rank 0: x"},
		{&TimeoutError{Generation: 3, Missing: 2, Blocks: 8, After: time.Second}, wire.CodeTimeout, "allreduce generation 3 timed out after 1s with 2 of 8 blocks missing"},
		{fmt.Errorf("hostlib: allreduce: %w", ErrClosed), wire.CodeAborted, "session closed during allreduce generation 3"},
		{context.Canceled, wire.CodeAborted, "allreduce generation 3 cancelled"},
		{errors.New("boom"), wire.CodeInternal, "allreduce generation 3 failed: boom"},
		{&SwitchError{Code: wire.CodeJobMismatch, Message: "no"}, 0, ""},
		{fmt.Errorf("call: %w", &AbortedError{Job: 9, Generation: 3, Rank: 1, Reason: "rank 1: cancelled"}), 0, ""},
	} {
		s, sw := abortSession(t)
		s.abortFor(tc.err, 3)
		got := sent(t, s, sw)
		if tc.text == "" {
			if len(got) != 0 || s.stats.aborts.Load() != 0 {
				t.Errorf("%v: %d Aborts sent, %d counted; want none", tc.err, len(got), s.stats.aborts.Load())
			}
			continue
		}
		if len(got) != 3 || s.stats.aborts.Load() != 1 {
			t.Fatalf("%v: %d Aborts sent, %d counted; want 3 sent, one counted", tc.err, len(got), s.stats.aborts.Load())
		}
		for _, a := range got {
			if h := a.h; h.Type != wire.TypeAbort || h.Job != 9 || h.Token != 77 || h.Generation != 3 || h.Child != 2 || h.Block != 2 ||
				a.code != tc.code || a.text != tc.text {
				t.Errorf("%v: sent %+v %v %q; want an Abort of job 9, token 77, generation 3, rank 2, %v %q", tc.err, h, a.code, a.text, tc.code, tc.text)
			}
		}
	}
}

// A cancelled join tells the others at once; a join that timed out or was
// refused tells them nothing (they time out, or are refused, too).
func TestJoinAbort(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{fmt.Errorf("join: %w", context.Canceled), 3},
		{fmt.Errorf("join: %w", ErrTimeout), 0},
		{&SwitchError{Code: wire.CodeRefusedMemory}, 0},
	} {
		s, sw := abortSession(t)
		s.joinAbort(tc.err)
		got := sent(t, s, sw)
		if len(got) != tc.want {
			t.Errorf("%v: %d Aborts, want %d", tc.err, len(got), tc.want)
		}
		for _, a := range got {
			if a.h.Generation != 0 || a.code != wire.CodeAborted || a.text != "join cancelled" {
				t.Errorf("%v: %+v %v %q, want generation 0, aborted, \"join cancelled\"", tc.err, a.h, a.code, a.text)
			}
		}
	}
}

// A call whose context is done before it starts does not start, and tells
// the switch so the other ranks, which make the call, do not wait for
// this one: an Abort of the call it would have been, and the generation
// is not used up.
func TestCallNotStarted(t *testing.T) {
	s, sw := abortSession(t)
	s.gen = 4
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.call(ctx, nil)
	if !errors.Is(err, context.Canceled) || err.Error() != "hostlib: allreduce generation 5 not started: context canceled" {
		t.Fatalf("call with a cancelled context: %v; want generation 5 not started, context.Canceled", err)
	}
	got := sent(t, s, sw)
	if len(got) != 3 || s.gen != 4 {
		t.Fatalf("%d Aborts sent, generation %d after; want 3, and 4 still", len(got), s.gen)
	}
	for _, a := range got {
		if a.h.Generation != 5 || a.code != wire.CodeAborted || a.text != "allreduce generation 5 cancelled" {
			t.Errorf("sent %+v %v %q; want generation 5, aborted, \"allreduce generation 5 cancelled\"", a.h, a.code, a.text)
		}
	}
}
