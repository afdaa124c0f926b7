package swtch_test

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/hostlib"
	"github.com/flare-net/flare/wire"
	"golang.org/x/sync/errgroup"
)

// A rank whose process restarts joins the running job again in a new
// session: from its own address (a fixed port), whether its old session
// left or crashed, or from another address once the old one left. The new
// session's calls start again at generation 1, where the job's blocks hold
// the first call's results: answered with them, its first call would
// return the old sum as its own, with no error. The switch ends the job as
// if the rank had aborted, so the other ranks' next call fails at once
// naming it, and the new session's join starts the job anew, which the
// others join again in sessions of their own; every rank's next call then
// has the exact sum, the restarted rank's new data in it.
func TestRestartedRank(t *testing.T) {
	for _, tc := range []struct {
		name         string
		leave, moved bool // the old session of rank 0 closes (else it crashes); the new one takes another port
	}{
		{"crashed, same address", false, false},
		{"closed, same address", true, false},
		{"closed, new address", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			network := conn.NewMemNetwork()
			sw := memSwitch(t, network)
			const world, elements = 3, 2000
			var mu sync.Mutex
			conns := map[uint16]conn.Conn{}
			join := func(r int, port uint16) (*hostlib.Session, error) {
				c, err := network.Listen(netip.AddrPortFrom(netip.MustParseAddr("10.1.0.1"), port))
				if err != nil {
					return nil, err
				}
				mu.Lock()
				conns[port] = c
				mu.Unlock()
				return hostlib.Join(context.Background(), hostlib.Options{Switch: sw.Addr().String(), Conn: c, Job: 3, Token: 42,
					Rank: r, World: world, DType: wire.Float32, Op: wire.OpSum, Elements: elements, Timeout: 20 * time.Second})
			}
			joinAll := func(ss []*hostlib.Session, ranks []int, port func(r int) uint16) {
				t.Helper()
				var g errgroup.Group
				for _, r := range ranks {
					g.Go(func() (err error) { ss[r], err = join(r, port(r)); return err })
				}
				if err := g.Wait(); err != nil {
					t.Fatal(err)
				}
			}
			ss := make([]*hostlib.Session, world)
			joinAll(ss, []int{0, 1, 2}, func(r int) uint16 { return 6000 + uint16(r) })
			bufs, want := sumInputs(world, elements)
			allreduceAll(t, ss, bufs)
			checkExact(t, "", bufs, want)

			if tc.leave {
				ss[0].Close()
			} else {
				mu.Lock()
				conns[6000].Close() // the process dies: no leave
				mu.Unlock()
			}
			port := uint16(6000)
			if tc.moved {
				port = 6100
			}
			restarted := make(chan error, 1)
			go func() {
				s, err := join(0, port)
				ss[0] = s
				restarted <- err
			}()
			// Ranks 1 and 2 go on to their second call: it fails, naming
			// rank 0, instead of waiting out its timeout.
			var g errgroup.Group
			for r := 1; r < world; r++ {
				g.Go(func() error {
					err := hostlib.AllReduce(context.Background(), ss[r], bufs[r])
					var ae *hostlib.AbortedError
					if !errors.As(err, &ae) || ae.Rank != 0 {
						t.Errorf("rank %d's call after rank 0 restarted: %v, want an abort by rank 0", r, err)
					}
					ss[r].Close()
					return nil
				})
			}
			g.Wait()
			joinAll(ss, []int{1, 2}, func(r int) uint16 { return 6200 + uint16(r) })
			if err := <-restarted; err != nil {
				t.Fatalf("rank 0's new session: %v", err)
			}
			bufs, want = sumInputs(world, elements)
			for i := range bufs[0] {
				bufs[0][i] += 1000 // the new session's data is not the first call's
				want[i] += 1000
			}
			allreduceAll(t, ss, bufs)
			checkExact(t, "", bufs, want)
			for _, s := range ss {
				s.Close()
			}
		})
	}
}

// checkExact checks every rank's vector against want; what says which
// call, where a test makes several.
func checkExact(t testing.TB, what string, bufs [][]float32, want []float32) {
	t.Helper()
	for r := range bufs {
		for i, v := range bufs[r] {
			if v != want[i] {
				t.Fatalf("%srank %d: element %d = %v, want %v", what, r, i, v, want[i])
			}
		}
	}
}
