package inproctest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/flare-net/flare/hostlib"
	swtch "github.com/flare-net/flare/switch"
	"github.com/flare-net/flare/wire"
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

// JoinAll joins every rank of a job to an in-process switch at once; their
// allreduce sums.
func TestJoinAll(t *testing.T) {
	sw, err := Group(t).Switch(swtch.Config{})
	if err != nil {
		t.Fatal(err)
	}
	const world, n = 3, 300
	ss := JoinAll(t, world, func(r int) hostlib.Options {
		return hostlib.Options{Switch: sw.Addr().String(), Job: 9, Token: 7, Rank: r, World: world,
			DType: wire.Int32, Op: wire.OpSum, Elements: n, Timeout: 20 * time.Second}
	})
	bufs := make([][]int32, world)
	var g errgroup.Group
	for r, s := range ss {
		bufs[r] = make([]int32, n)
		for i := range bufs[r] {
			bufs[r][i] = int32(r*n + i)
		}
		g.Go(func() error { return hostlib.AllReduce(context.Background(), s, bufs[r]) })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	for r, b := range bufs {
		for i, v := range b {
			if want := int32(world*i + n*(0+1+2)); v != want {
				t.Fatalf("rank %d element %d: %d, want %d", r, i, v, want)
			}
		}
	}
}
