package inproc_test

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flare-net/flare/conn"
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
	if err := g.Start(&fakeServer{ready: make(chan struct{}), err: errors.New("later"), early: true}); err == nil {
		t.Fatal("Start of a second server that stops first: no error")
	}
	if err := g.Close(); !errors.Is(err, boom) {
		t.Fatalf("Close: %v, want the first error a server stopped with, %v", err, boom)
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

// ctxServer is ready at once and keeps the context it runs with.
type ctxServer struct {
	ready chan struct{}
	ctx   chan context.Context
}

func (s ctxServer) Ready() <-chan struct{} { return s.ready }
func (s ctxServer) Run(ctx context.Context) error {
	s.ctx <- ctx
	close(s.ready)
	<-ctx.Done()
	return nil
}

// The servers outlive the context a group was made with, which bounds
// only the starts: they run until Close, and Close waits for them.
func TestGroupOutlivesItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	g := inproc.New(ctx)
	srv := ctxServer{ready: make(chan struct{}), ctx: make(chan context.Context, 1)}
	if err := g.Start(srv); err != nil {
		t.Fatal(err)
	}
	run := <-srv.ctx
	cancel()
	if err := run.Err(); err != nil {
		t.Fatalf("the server's context ended with the group's: %v", err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if run.Err() == nil {
		t.Fatal("Close returned with the server's context still running")
	}
}

// Defaults gives a switch a loopback port only where it has no socket
// of its own, turns the admin port off and quiets the log; what the
// caller set stays.
func TestDefaults(t *testing.T) {
	d := inproc.Defaults(swtch.Config{})
	if d.Listen != "127.0.0.1:0" || d.Admin != "off" || d.Logger == nil {
		t.Errorf("Defaults of nothing: listen %q, admin %q, logger %v", d.Listen, d.Admin, d.Logger)
	}
	c, err := conn.NewMemNetwork().Listen(netip.MustParseAddrPort("10.0.0.1:9000"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, cfg := range []swtch.Config{{Conn: c}, {Conns: []conn.Conn{c}}} {
		if d := inproc.Defaults(cfg); d.Listen != "" {
			t.Errorf("Defaults of a config with its own socket: listen %q, want none", d.Listen)
		}
	}
	if d := inproc.Defaults(swtch.Config{Listen: "127.0.0.1:9999", Admin: "127.0.0.1:0"}); d.Listen != "127.0.0.1:9999" || d.Admin != "127.0.0.1:0" {
		t.Errorf("Defaults changed what was set: listen %q, admin %q", d.Listen, d.Admin)
	}
}

// Relay(true) starts the fan-out relay, which sends one member's block to
// every member once all have sent it, so both ranks end with the same
// vector; Relay(false) the echo relay, which returns each rank its own.
func TestRelays(t *testing.T) {
	const n = 2000
	for _, fanout := range []bool{false, true} {
		g := inproctest.Group(t)
		r, err := g.Relay(fanout, swtch.Config{})
		if err != nil {
			t.Fatal(err)
		}
		ss := inproctest.JoinAll(t, 2, func(i int) hostlib.Options {
			return hostlib.Options{Switch: r.Addr().String(), Job: 1, Token: 7, Rank: i, World: 2,
				DType: wire.Float32, Op: wire.OpSum, Elements: n, Timeout: 10 * time.Second}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		bufs := [][]float32{make([]float32, n), make([]float32, n)}
		errs := make(chan error, 2)
		for i := range bufs {
			for j := range bufs[i] {
				bufs[i][j] = float32(i + 1)
			}
			go func() { errs <- hostlib.AllReduce(ctx, ss[i], bufs[i]) }()
		}
		for range bufs {
			if err := <-errs; err != nil {
				t.Fatalf("fan-out %v: %v", fanout, err)
			}
		}
		cancel()
		if same := slices.Equal(bufs[0], bufs[1]); same != fanout {
			t.Errorf("fan-out %v: the ranks' vectors alike: %v (rank 0 [0] = %v, rank 1 [0] = %v)", fanout, same, bufs[0][0], bufs[1][0])
		}
	}
}
