package main

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// flare version: the module's version and the commit where the build
// recorded them, "(devel)" and "unknown" where it did not; the Go
// version and platform always.
func TestVersionString(t *testing.T) {
	goes := runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
	tagged := &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "fedcba9876543210fedc"}}}
	for _, tc := range []struct {
		bi   *debug.BuildInfo
		want string
	}{
		{tagged, "flare v1.4.0 (commit fedcba987654, " + goes + ")"},
		{&debug.BuildInfo{}, "flare (devel) (commit unknown, " + goes + ")"},
		{nil, "flare (devel) (commit unknown, " + goes + ")"},
	} {
		if got := versionString(tc.bi); got != tc.want {
			t.Errorf("versionString(%+v) = %q, want %q", tc.bi, got, tc.want)
		}
	}
}
