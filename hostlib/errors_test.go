package hostlib

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/flare-net/flare/wire"
)

// Each error of the package matches the sentinels and the standard errors
// a caller tests for, and only those: a program that retries on
// ErrRefused must not retry a job the switch refused for another reason.
func TestErrorsMatch(t *testing.T) {
	timeout := &TimeoutError{Generation: 3, Missing: 1, Blocks: 4}
	sentinels := []error{ErrRefused, ErrClosed, ErrTimeout, ErrAborted, context.DeadlineExceeded, context.Canceled}
	for _, tc := range []struct {
		err   error
		match []error
	}{
		{&SwitchError{Code: wire.CodeRefusedMemory, Message: "job 7 needs 96 buffers of 1 KiB, 40 free"}, []error{ErrRefused}},
		{&SwitchError{Code: wire.CodeJobMismatch, Message: "elements differ"}, nil},
		{&SwitchError{Code: wire.CodeTooManyJobs}, nil},
		{&AbortedError{Job: 1, Generation: 2, Rank: 3, Reason: "rank 3: cancelled"}, []error{ErrAborted}},
		{timeout, []error{ErrTimeout, context.DeadlineExceeded}},
		{fmt.Errorf("hostlib: allreduce: %w", timeout), []error{ErrTimeout, context.DeadlineExceeded}},
	} {
		for _, s := range sentinels {
			want := false
			for _, m := range tc.match {
				want = want || m == s
			}
			if got := errors.Is(tc.err, s); got != want {
				t.Errorf("errors.Is(%q, %q) = %v, want %v", tc.err, s, got, want)
			}
		}
	}
	var to interface{ Timeout() bool } // as a caller asks a net package error
	if !errors.As(error(timeout), &to) || !to.Timeout() {
		t.Errorf("a TimeoutError does not say it timed out")
	}
}

// What each error says: who, what and what to do, as a user reads it.
func TestErrorMessages(t *testing.T) {
	first := []int{17, 18, 40}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&SwitchError{Code: wire.CodeRefusedMemory, Message: "job 7 needs 96 buffers of 1 KiB, 40 free"},
			"switch error refused-memory: job 7 needs 96 buffers of 1 KiB, 40 free"},
		{&SwitchError{Code: wire.CodeTooManyJobs}, "switch error too-many-jobs"},
		{&AbortedError{Job: 4, Generation: 0, Rank: 1, Reason: "rank 1: join cancelled"},
			"hostlib: join: job 4 aborted by rank 1 (rank 1: join cancelled); Close and Join again"},
		{&AbortedError{Job: 4, Generation: 1, Rank: 2, Reason: "rank 2: allreduce generation 1 timed out"},
			"hostlib: allreduce generation 1: job 4 aborted by rank 2 (rank 2: allreduce generation 1 timed out); Close and Join again"},
		{&TimeoutError{Generation: 3, Missing: 12, Blocks: 4096, First: first, Switch: "127.0.0.1:7470", World: 4, After: 30 * time.Second},
			"hostlib: allreduce generation 3: 12 of 4096 blocks missing after 30s (blocks 17, 18, 40, ...): is the switch at 127.0.0.1:7470 running, and are all 4 ranks calling AllReduce?"},
		{&TimeoutError{Generation: 3, Missing: 3, Blocks: 4096, First: first, Switch: "127.0.0.1:7470", World: 4, After: 1500 * time.Microsecond},
			"hostlib: allreduce generation 3: 3 of 4096 blocks missing after 2ms (blocks 17, 18, 40): is the switch at 127.0.0.1:7470 running, and are all 4 ranks calling AllReduce?"},
		{&TimeoutError{Generation: 2, Missing: 1, Blocks: 8, First: []int{5}, Switch: "10.0.0.1:7470", World: 2, After: time.Second,
			Waiting: "block 5 of allreduce 2 waits for rank 1: nothing from them yet", LastSend: errors.New("sendmmsg: connection refused")},
			"hostlib: allreduce generation 2: 1 of 8 blocks missing after 1s (blocks 5): the switch at 10.0.0.1:7470 says block 5 of allreduce 2 waits for rank 1: nothing from them yet (last send error: sendmmsg: connection refused)"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}
}
