package main

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/internal/bench"
	"github.com/flare-net/flare/wire"
)

// withFlags writes the flags where a library's error names the fields
// that set them, leaves other fields as they are, and keeps the error
// chain.
func TestWithFlags(t *testing.T) {
	base := errors.New("listen udp: address in use")
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("Config.Listen = 127.0.0.1:7470: %w", base), "--listen 127.0.0.1:7470: listen udp: address in use"},
		{errors.New("Config.MaxPending = 5: must be in 1..4 (Config.MaxJobs)"), "--max-pending 5: must be in 1..4 (--max-jobs)"},
		{errors.New("Config.HPU.SubsetS: policy S = 9: must be in 1..8"), "--policy-s: policy S = 9: must be in 1..8"},
		{errors.New("Config.Conn = nil: unmapped"), "Config.Conn = nil: unmapped"},
		{errors.New("Params.Hosts = 1: another type"), "Params.Hosts = 1: another type"},
		{errors.New("MyConfig.Listen = x: not Config"), "MyConfig.Listen = x: not Config"},
	} {
		got := withFlags(tc.err, switchFlags)
		if got.Error() != tc.want {
			t.Errorf("withFlags(%q) = %q, want %q", tc.err, got, tc.want)
		}
		if !errors.Is(got, tc.err) {
			t.Errorf("withFlags(%q) does not wrap it", tc.err)
		}
	}
	if !errors.Is(withFlags(fmt.Errorf("Config.Listen = x: %w", base), switchFlags), base) {
		t.Error("withFlags loses the wrapped error")
	}
	if withFlags(nil, switchFlags) != nil {
		t.Error("withFlags(nil) is not nil")
	}
}

// --busy-poll defaults to conn.DefaultBusyPoll where each rank is a
// process of its own and to 0 where ranks share a process, a value given
// wins either way, and a bench's rank processes get the bench's value.
func TestBusyPollDefaults(t *testing.T) {
	benchPoll := func(args ...string) time.Duration { _, s := parsedBench(t, args); return s.BusyPoll }
	allreducePoll := func(args ...string) time.Duration { _, c := parsedAllReduce(t, args); return c.BusyPoll }
	switchPoll := func(args ...string) time.Duration { _, cfg := parsedSwitch(t, args); return cfg.Socket.BusyPoll }
	for _, tc := range []struct {
		name      string
		got, want time.Duration
	}{
		{"bench", benchPoll(), conn.DefaultBusyPoll},
		{"bench --procs=false", benchPoll("--procs=false"), 0},
		{"bench --tree 2x2", benchPoll("--tree", "2x2"), 0},
		{"bench --busy-poll 0", benchPoll("--busy-poll", "0"), 0},
		{"bench --procs=false --busy-poll 20us", benchPoll("--procs=false", "--busy-poll", "20us"), 20 * time.Microsecond},
		{"allreduce --rank 0 --world 2", allreducePoll("--rank", "0", "--world", "2"), conn.DefaultBusyPoll},
		{"allreduce --ranks 2", allreducePoll("--ranks", "2"), 0},
		{"allreduce --rank 0 --world 2 --busy-poll 0", allreducePoll("--rank", "0", "--world", "2", "--busy-poll", "0"), 0},
		{"switch", switchPoll(), conn.DefaultBusyPoll},
		{"switch --busy-poll 0", switchPoll("--busy-poll", "0"), 0},
	} {
		if tc.got != tc.want {
			t.Errorf("flare %s: busy poll %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	args := allreduceArgs(bench.Config{Rank: 1, World: 2, DType: wire.Float32, Op: wire.OpSum, BusyPoll: 20 * time.Microsecond, Timeout: time.Second})
	if got := allreducePoll(args[1:]...); got != 20*time.Microsecond {
		t.Errorf("a bench rank's command line %q: busy poll %v, want the bench's 20µs", args, got)
	}
}
