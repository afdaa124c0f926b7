package swtch_test

import (
	"context"
	"math"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/hostlib"
	"github.com/flare-net/flare/internal/inproctest"
	swtch "github.com/flare-net/flare/switch"
	"github.com/flare-net/flare/wire"
)

// startSwitch runs a switch of inproc.Defaults(cfg) (loopback, no admin
// port, quiet) until the test ends.
func startSwitch(t testing.TB, cfg swtch.Config) *swtch.Switch {
	t.Helper()
	sw, err := inproctest.Group(t).Switch(cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return sw
}

// joinRanks joins world float32-sum sessions of job to addr.
func joinRanks(t *testing.T, addr string, job uint32, world, elements int) []*hostlib.Session {
	t.Helper()
	return inproctest.JoinAll(t, world, func(r int) hostlib.Options {
		return hostlib.Options{Switch: addr, Job: job, Token: 42, Rank: r, World: world,
			DType: wire.Float32, Op: wire.OpSum, Elements: elements, Timeout: 20 * time.Second}
	})
}

func allreduceAll(t *testing.T, ss []*hostlib.Session, bufs [][]float32) {
	t.Helper()
	var g errgroup.Group
	for i, s := range ss {
		g.Go(func() error { return hostlib.AllReduce(context.Background(), s, bufs[i]) })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

// TestSteadyStateAllocs asserts the daemon's packet path (reader, HPU,
// handler, egress, writer) and the host library allocate nothing per
// packet once warm: a whole allreduce call of thousands of packets may
// allocate only a constant few objects (contexts, goroutines of the call).
// It holds over loopback UDP and over a network that loses and duplicates
// datagrams (retransmissions, waiting reports and resent results are on
// the packet path too; the in-memory network's reordering is left out, as
// its hold timers are the test network's own allocations), and with the
// collector running between calls (recycled buffers must survive it: a
// sync.Pool's do not, which is how this failed in CI beside other tests).
func TestSteadyStateAllocs(t *testing.T) {
	const world, elements = 4, 1 << 20 // 4 MiB: 4096 blocks per rank
	for _, tc := range []struct {
		name  string
		ranks func(t *testing.T) []*hostlib.Session
	}{
		{"udp", func(t *testing.T) []*hostlib.Session {
			sw := startSwitch(t, swtch.Config{Readers: 1})
			return joinRanks(t, sw.Addr().String(), 1, world, elements)
		}},
		{"udp-readers-3", func(t *testing.T) []*hostlib.Session {
			sw := startSwitch(t, swtch.Config{Readers: 3})
			return joinRanks(t, sw.Addr().String(), 1, world, elements)
		}},
		{"lossy", func(t *testing.T) []*hostlib.Session {
			network := conn.NewMemNetwork()
			network.Faults = conn.Faults{Drop: 0.003, Dup: 0.003, Seed: 5}
			return memRanks(t, network, memSwitch(t, network), 1, world, elements)
		}},
		{"lossy-readers-2", func(t *testing.T) []*hostlib.Session {
			network := conn.NewMemNetwork()
			network.Faults = conn.Faults{Drop: 0.003, Dup: 0.003, Seed: 5}
			cs, err := network.ListenGroup(netip.MustParseAddrPort("127.0.0.1:7470"), swtch.DataPortGroup(2))
			if err != nil {
				t.Fatal(err)
			}
			return memRanks(t, network, startSwitch(t, swtch.Config{Conns: cs}), 1, world, elements)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss := tc.ranks(t)
			bufs := make([][]float32, world)
			for r := range bufs {
				bufs[r] = make([]float32, elements)
			}
			for range 3 {
				allreduceAll(t, ss, bufs)
			}
			// The fewest allocations of three windows of calls: a busy box
			// only adds to a window (the runtime's own, for goroutines that
			// block at once; retransmissions' answers), while an allocation
			// per packet, or per hundredth packet, is in every window.
			const calls, windows = 4, 3
			packets := calls * world * (elements / 256) * 2 // data in, results out
			fewest, seen := uint64(math.MaxUint64), make([]uint64, 0, windows)
			for range windows {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				for range calls {
					allreduceAll(t, ss, bufs)
					runtime.GC()
				}
				runtime.ReadMemStats(&after)
				allocs := after.Mallocs - before.Mallocs
				seen = append(seen, allocs)
				fewest = min(fewest, allocs)
			}
			perCall := float64(fewest) / calls
			t.Logf("allocations over %d calls of %d packets each, in %d windows: %v; the fewest %.1f per call, %.4f per packet",
				calls, packets/calls, windows, seen, perCall, float64(fewest)/float64(packets))
			if perCall > 200 {
				t.Errorf("%.0f allocations per allreduce call of %d packets in the best of %d windows: the packet path allocates", perCall, packets/calls, windows)
			}
		})
	}
}

// TestRelayEchoes checks the ceiling's contract: it admits a job at once,
// with the switch's window, and every host gets its own data back.
func TestRelayEchoes(t *testing.T) {
	relay, err := inproctest.Group(t).Relay(false, swtch.Config{})
	if err != nil {
		t.Fatal(err)
	}
	const world, elements = 3, 100_000 // 391 blocks, the last one short
	ss := joinRanks(t, relay.Addr().String(), 9, world, elements)
	if got, want := ss[0].Window(), swtch.DefaultWindowFor(world, swtch.DefaultPacketBytes); got != want {
		t.Errorf("window %d, want the switch's default %d", got, want)
	}
	bufs := make([][]float32, world)
	for r := range bufs {
		bufs[r] = make([]float32, elements)
		for i := range bufs[r] {
			bufs[r][i] = float32(r*elements + i)
		}
	}
	allreduceAll(t, ss, bufs)
	for r, b := range bufs {
		for i, v := range b {
			if v != float32(r*elements+i) {
				t.Fatalf("rank %d element %d = %v, want its own %v", r, i, v, float32(r*elements+i))
			}
		}
	}
}
