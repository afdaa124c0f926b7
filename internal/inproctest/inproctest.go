// Package inproctest runs in-process switches, relays and trees for tests:
// an inproc.Group that stops when the test ends and fails the test when a
// server's Run returned an error.
package inproctest

import (
	"context"
	"testing"

	"github.com/flare-net/flare/internal/inproc"
)

// Group returns an empty group that is closed when t and its subtests end;
// an error from Close (the first a server stopped with) fails t.
func Group(t testing.TB) *inproc.Group {
	t.Helper()
	g := inproc.New(context.Background())
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return g
}
