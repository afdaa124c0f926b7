package hostlib

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/flare-net/flare/wire"
)

// Sentinel errors of a session. Errors that carry more detail wrap or match
// them, so callers test with errors.Is.
var (
	// ErrRefused matches a *SwitchError with code refused-memory: the switch
	// has too few free aggregation buffers for the job's window. Retry
	// later, or join with a smaller job (fewer Buffers, a shorter vector).
	ErrRefused = errors.New("hostlib: switch refused the job: not enough aggregation memory")

	// ErrClosed is returned (wrapped) by calls on a session after Close,
	// and by a call that Close interrupted.
	ErrClosed = errors.New("hostlib: session closed")

	// ErrTimeout is matched by every timeout of this package: a join that
	// got no answer in time and a *TimeoutError from AllReduce.
	ErrTimeout = errors.New("hostlib: timed out")

	// ErrAborted is matched by an *AbortedError: another member of the job
	// aborted it, and the switch ended it.
	ErrAborted = errors.New("hostlib: job aborted by a member")
)

// AbortedError reports that another member's call failed and that it
// aborted the job (NCCL's ncclCommAbort): the switch ended the job and told
// every member who and why, so the call fails within a round trip instead
// of at its timeout. The session's later calls fail with it too; Close and
// Join again (the job id is free at once). It matches ErrAborted.
type AbortedError struct {
	Job        uint32 // the job
	Generation uint32 // the call that failed here (0 for a Join)
	// Rank is the rank that aborted, as it joined its switch (in a tree of
	// switches its rank among its leaf's hosts; Reason names the switches).
	Rank int
	// Reason is the switch's account: who and why, e.g. "rank 2: allreduce
	// generation 3 timed out after 30s with 12 of 4096 blocks missing:
	// every stuck block waits for rank 3 (...)".
	Reason string
}

// Error names the job, the call, the aborting rank and its reason.
func (e *AbortedError) Error() string {
	what := fmt.Sprintf("allreduce generation %d", e.Generation)
	if e.Generation == 0 {
		what = "join"
	}
	return fmt.Sprintf("hostlib: %s: job %d aborted by rank %d (%s); Close and Join again", what, e.Job, e.Rank, e.Reason)
}

// Is makes errors.Is(err, ErrAborted) hold.
func (e *AbortedError) Is(target error) bool { return target == ErrAborted }

// SwitchError is an Error packet from the switch: it refused the join or
// failed the job. Code is for programs, Message for people.
type SwitchError struct {
	Code    wire.ErrorCode // why, e.g. wire.CodeRefusedMemory
	Message string         // the switch's explanation, e.g. "job 7 needs 96 buffers of 1 KiB, 40 free"
}

// Error formats the code and the switch's text.
func (e *SwitchError) Error() string {
	if e.Message == "" {
		return "switch error " + e.Code.String()
	}
	return "switch error " + e.Code.String() + ": " + e.Message
}

// Is makes errors.Is(err, ErrRefused) hold for a refused-memory answer.
func (e *SwitchError) Is(target error) bool {
	return target == ErrRefused && e.Code == wire.CodeRefusedMemory
}

// maxFirstMissing is how many missing block ids a TimeoutError lists.
const maxFirstMissing = 8

// TimeoutError reports an allreduce that did not complete in time: some
// blocks' results never arrived, even after retransmission. It matches
// ErrTimeout and context.DeadlineExceeded with errors.Is, and its Timeout
// method reports true, as net package timeouts do.
type TimeoutError struct {
	Generation uint32        // the allreduce call that failed (1 for the session's first)
	Missing    int           // blocks whose result had not arrived
	Blocks     int           // blocks in the vector
	First      []int         // the lowest missing block ids, at most 8
	Switch     string        // the switch's address
	World      int           // ranks in the job, every one of which must call AllReduce
	After      time.Duration // how long the call ran
	LastSend   error         // the last error sending to the switch, if any (why it may be unreachable)
	// Waiting is the switch's latest answer to this call's retransmissions
	// of blocks it already had from this rank, naming the ranks it waits
	// for ("block 12 of allreduce 3 waits for rank 2: nothing from them
	// yet"); empty when the switch never said.
	Waiting string
}

// Error says what is missing and what to check, e.g. "hostlib: allreduce
// generation 3: 12 of 4096 blocks missing after 30s (blocks 17, 18, 40,
// ...): is the switch at 127.0.0.1:7470 running, and are all 4 ranks
// calling AllReduce?".
func (e *TimeoutError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "hostlib: allreduce generation %d: %d of %d blocks missing after %v",
		e.Generation, e.Missing, e.Blocks, e.After.Round(time.Millisecond))
	if len(e.First) > 0 {
		b.WriteString(" (blocks ")
		for i, blk := range e.First {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Itoa(blk))
		}
		if e.Missing > len(e.First) {
			b.WriteString(", ...")
		}
		b.WriteString(")")
	}
	if e.Waiting != "" {
		fmt.Fprintf(&b, ": the switch at %s says %s", e.Switch, e.Waiting)
	} else {
		fmt.Fprintf(&b, ": is the switch at %s running, and are all %d ranks calling AllReduce?", e.Switch, e.World)
	}
	if e.LastSend != nil {
		fmt.Fprintf(&b, " (last send error: %v)", e.LastSend)
	}
	return b.String()
}

// Is makes errors.Is hold for ErrTimeout and context.DeadlineExceeded.
func (e *TimeoutError) Is(target error) bool {
	return target == ErrTimeout || target == context.DeadlineExceeded
}

// Timeout reports true: the call timed out.
func (e *TimeoutError) Timeout() bool { return true }
