// Package inproctest runs in-process switches, relays and trees for tests,
// joins hosts to them and reads their metrics: an inproc.Group that stops
// when the test ends and fails the test when a server's Run returned an
// error, sessions joined all at once that close when the test ends, a
// scrape of a switch's /metrics (in-process or a daemon), and the
// addresses a daemon's log says it bound.
package inproctest

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/flare-net/flare/hostlib"
	"github.com/flare-net/flare/internal/inproc"
)

// stopWithin is how long a group's servers get to stop when a test ends.
const stopWithin = time.Minute

// Group returns an empty group that is closed when t and its subtests end;
// an error from Close (the first a server stopped with) fails t, and so
// does a server that has not stopped within a minute (a job's teardown
// waiting for packets that will never be done, say), instead of the
// test binary hanging until its timeout.
func Group(t testing.TB) *inproc.Group {
	t.Helper()
	g := inproc.New(context.Background())
	t.Cleanup(func() {
		closed := make(chan error, 1)
		go func() { closed <- g.Close() }()
		select {
		case err := <-closed:
			if err != nil {
				t.Errorf("Close: %v", err)
			}
		case <-time.After(stopWithin):
			t.Errorf("a server of the group did not stop within %v of the test's end", stopWithin)
		}
	})
	return g
}

// JoinAll joins n sessions at once (a switch answers the joins only once
// every rank has joined), session i with the options opts(i) gives; they
// close when t ends. A failed join fails t, once all have returned.
func JoinAll(t testing.TB, n int, opts func(i int) hostlib.Options) []*hostlib.Session {
	t.Helper()
	ss := make([]*hostlib.Session, n)
	g, ctx := errgroup.WithContext(context.Background())
	for i := range n {
		o := opts(i)
		g.Go(func() error {
			s, err := hostlib.Join(ctx, o)
			ss[i] = s
			return err
		})
	}
	err := g.Wait()
	t.Cleanup(func() {
		for _, s := range ss {
			if s != nil {
				s.Close()
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

// Scrape returns the /metrics text of the switch whose admin port is at
// addr (HOST:PORT).
func Scrape(t testing.TB, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// listening is a `flare switch` process's log line once its ports are
// bound, with the addresses it bound.
var listening = regexp.MustCompile(`msg="switch listening" data=(\S+) admin=(\S+)`)

// DaemonAddrs reads the data and admin addresses a `flare switch` process
// bound from its log, once it has said: a daemon started on port 0 (a
// port found free and handed to it could be another socket's by the time
// it binds it) tells its tests where it listens this way.
func DaemonAddrs(log string) (data, admin string, ok bool) {
	m := listening.FindStringSubmatch(log)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}
