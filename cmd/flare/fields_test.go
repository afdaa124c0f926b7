package main

import (
	"errors"
	"fmt"
	"testing"
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
