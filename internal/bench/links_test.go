package bench

import (
	"context"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/flare-net/flare/hostlib"
	"github.com/flare-net/flare/internal/inproctest"
	swtch "github.com/flare-net/flare/switch"
	"github.com/flare-net/flare/wire"
)

// The host link watch stops polling once it has seen the job's links,
// which happens at the joins: it is not running while the calls are
// measured. It still reads their whole traffic at the end, after the job
// has ended and the switch has forgotten them. The links of a job that
// was running when it started are not the job's.
func TestHostLinkWatchEndsWithTheJoins(t *testing.T) {
	sw, err := inproctest.Group(t).Switch(swtch.Config{})
	if err != nil {
		t.Fatal(err)
	}
	const world, n = 3, 4096
	earlier := inproctest.JoinAll(t, 2, func(r int) hostlib.Options {
		return hostlib.Options{Switch: sw.Addr().String(), Job: 10, Token: 5, Rank: r, World: 2,
			DType: wire.Int32, Op: wire.OpSum, Elements: n, Timeout: 20 * time.Second}
	})
	w := watchHostLinks(sw, world, false)
	ss := inproctest.JoinAll(t, world, func(r int) hostlib.Options {
		return hostlib.Options{Switch: sw.Addr().String(), Job: 11, Token: 5, Rank: r, World: world,
			DType: wire.Int32, Op: wire.OpSum, Elements: n, Timeout: 20 * time.Second}
	})
	select {
	case <-w.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the watch still polls 10 s after every rank joined")
	}
	var g errgroup.Group
	for _, s := range ss {
		g.Go(func() error { return hostlib.AllReduce(context.Background(), s, make([]int32, n)) })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	for _, s := range append(ss, earlier...) {
		s.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(sw.LinkCounters()) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // the leaves end the job, and its links go
	}
	up, down, links := w.finish()
	if links != world || up < world*n*4 || down < world*n*4 {
		t.Fatalf("watch: %d links, %d bytes up, %d down; want %d links and at least the vector each way on each", links, up, down, world)
	}
}
