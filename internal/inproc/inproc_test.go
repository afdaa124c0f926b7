package inproc_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flare-net/flare/hostlib"
	"github.com/flare-net/flare/internal/inproc"
	"github.com/flare-net/flare/internal/inproctest"
	swtch "github.com/flare-net/flare/switch"
	"github.com/flare-net/flare/wire"
)

// fakeServer runs until its context ends, ready at once or never, and
// returns err then (or at once, never ready, with early).
type fakeServer struct {
	ready chan struct{}
	err   error
	early bool
}

func (f *fakeServer) Ready() <-chan struct{} { return f.ready }

func (f *fakeServer) Run(ctx context.Context) error {
	if f.early {
		return f.err
	}
	close(f.ready)
	<-ctx.Done()
	return f.err
}

// A start returns once the server is ready, or the error it stopped with
// before; Close stops every server and returns the first Run error.
func TestGroupStartAndClose(t *testing.T) {
	boom := errors.New("boom")
	g := inproc.New(context.Background())
	if err := g.Start(&fakeServer{ready: make(chan struct{})}); err != nil {
		t.Fatalf("Start of a server that gets ready: %v", err)
	}
	if err := g.Start(&fakeServer{ready: make(chan struct{}), err: boom, early: true}); !errors.Is(err, boom) {
		t.Fatalf("Start of a server that stops first: %v, want %v", err, boom)
	}
	if err := g.Start(&fakeServer{ready: make(chan struct{}), early: true}); err == nil || !strings.Contains(err.Error(), "before it was ready") {
		t.Fatalf("Start of a server that stops first without an error: %v", err)
	}
	if err := g.Close(); !errors.Is(err, boom) {
		t.Fatalf("Close: %v, want the early server's %v", err, boom)
	}

	g = inproc.New(context.Background())
	if err := g.Start(&fakeServer{ready: make(chan struct{}), err: boom}); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); !errors.Is(err, boom) {
		t.Fatalf("Close: %v, want the error the server stopped with, %v", err, boom)
	}
}

// A start gives up when the group's context ends before the server is
// ready.
func TestGroupStartCancelled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	g := inproc.New(ctx)
	if err := g.Start(stuckServer{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Start: %v, want the context's deadline", err)
	}
	if err := g.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// stuckServer never gets ready and stops when told.
type stuckServer struct{}

func (stuckServer) Ready() <-chan struct{}        { return nil }
func (stuckServer) Run(ctx context.Context) error { <-ctx.Done(); return nil }

// A tree's leaves join its root: hosts on two leaves allreduce through
// it and every one gets the sum of all.
func TestTree(t *testing.T) {
	g := inproctest.Group(t)
	cfg := swtch.Config{}
	cfg.HPU.Clusters, cfg.HPU.CoresPerCluster = 2, 2
	tree, err := g.Tree(2, cfg)
	if err != nil {
		t.Fatal(err)
	}
	addrs := strings.Split(tree.Addrs(), ",")
	if len(addrs) != 2 || tree.Root == nil || len(tree.Leaves) != 2 || addrs[0] == addrs[1] {
		t.Fatalf("tree: root %v, leaves %v (%q)", tree.Root, tree.Leaves, tree.Addrs())
	}
	const world, n = 4, 3000
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ss := make([]*hostlib.Session, world)
	errs := make(chan error, world)
	for r := range world {
		go func() {
			s, err := hostlib.Join(ctx, hostlib.Options{Switch: addrs[r/2], Job: 1, Token: 7, Rank: r % 2, World: 2,
				DType: wire.Float32, Op: wire.OpSum, Elements: n, Timeout: 10 * time.Second})
			ss[r] = s
			errs <- err
		}()
	}
	for range world {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	bufs := make([][]float32, world)
	for r := range world {
		defer ss[r].Close()
		bufs[r] = make([]float32, n)
		for i := range bufs[r] {
			bufs[r][i] = float32(r + 1)
		}
		go func() { errs <- hostlib.AllReduce(ctx, ss[r], bufs[r]) }()
	}
	for range world {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for r, b := range bufs {
		for i, v := range b {
			if v != 1+2+3+4 {
				t.Fatalf("rank %d element %d = %v, want 10", r, i, v)
			}
		}
	}
}
