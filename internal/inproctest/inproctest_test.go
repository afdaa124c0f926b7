package inproctest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// The group closes when the test ends, and a server's error fails it.
func TestGroup(t *testing.T) {
	stopped := make(chan struct{})
	t.Run("clean", func(t *testing.T) {
		if err := Group(t).Start(server{stopped: stopped}); err != nil {
			t.Fatal(err)
		}
	})
	select {
	case <-stopped:
	default:
		t.Fatal("the server still runs after its test ended")
	}
	rec := &recorder{TB: t}
	g := Group(rec)
	if err := g.Start(server{err: errors.New("boom"), stopped: make(chan struct{})}); err != nil {
		t.Fatal(err)
	}
	for _, f := range rec.cleanups {
		f()
	}
	if !strings.Contains(rec.errs, "boom") {
		t.Fatalf("a server that stopped with an error did not fail the test (logged %q)", rec.errs)
	}
}

// server is ready at once, and when stopped closes stopped and returns err.
type server struct {
	err     error
	stopped chan struct{}
}

func (server) Ready() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

func (s server) Run(ctx context.Context) error {
	<-ctx.Done()
	close(s.stopped)
	return s.err
}

// recorder keeps what Group registers and reports.
type recorder struct {
	testing.TB
	cleanups []func()
	errs     string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Cleanup(f func())          { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Errorf(f string, a ...any) { r.errs += fmt.Sprintf(f, a...) }
