package swtch_test

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"slices"
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
		{"udp-multicast", func(t *testing.T) []*hostlib.Session {
			sw := startSwitch(t, swtch.Config{Readers: 1, Multicast: netip.MustParsePrefix("239.255.83.0/30")})
			return mcRanks(t, sw, 1, world, elements, func(int) bool { return true })
		}},
		{"udp-readers-3", func(t *testing.T) []*hostlib.Session {
			sw := startSwitch(t, swtch.Config{Readers: 3})
			return joinRanks(t, sw.Addr().String(), 1, world, elements)
		}},
		{"udp-shared-cpus", func(t *testing.T) []*hostlib.Session { // the readers send too (sendOwn)
			sw := startSwitch(t, swtch.Config{Readers: 2, SharedCPUs: true})
			return joinRanks(t, sw.Addr().String(), 1, world, elements)
		}},
		{"lossy", func(t *testing.T) []*hostlib.Session {
			network := conn.NewMemNetwork()
			network.Faults = conn.Faults{Drop: 0.003, Dup: 0.003, Seed: 5}
			return memRanks(t, network, memSwitch(t, network), 1, world, elements)
		}},
		{"lossy-readers-2", func(t *testing.T) []*hostlib.Session {
			return lossyGroupRanks(t, swtch.Config{}, world, elements)
		}},
		{"lossy-shared-cpus", func(t *testing.T) []*hostlib.Session { // the readers send too (sendOwn)
			return lossyGroupRanks(t, swtch.Config{SharedCPUs: true}, world, elements)
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
			seen := make([]uint64, 0, windows)
			for range windows {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				for range calls {
					allreduceAll(t, ss, bufs)
					runtime.GC()
				}
				runtime.ReadMemStats(&after)
				seen = append(seen, after.Mallocs-before.Mallocs)
			}
			fewest := slices.Min(seen)
			perCall := float64(fewest) / calls
			t.Logf("allocations over %d calls of %d packets each, in %d windows: %v; the fewest %.1f per call, %.4f per packet",
				calls, packets/calls, windows, seen, perCall, float64(fewest)/float64(packets))
			if perCall > 200 {
				t.Errorf("%.0f allocations per allreduce call of %d packets in the best of %d windows: the packet path allocates", perCall, packets/calls, windows)
			}
		})
	}
}

// lossyGroupRanks joins world ranks of `elements` float32 to a switch
// of cfg with two readers on an in-memory network that drops and
// duplicates datagrams.
func lossyGroupRanks(t *testing.T, cfg swtch.Config, world, elements int) []*hostlib.Session {
	t.Helper()
	network := conn.NewMemNetwork()
	network.Faults = conn.Faults{Drop: 0.003, Dup: 0.003, Seed: 5}
	cs, err := network.ListenGroup(netip.MustParseAddrPort("127.0.0.1:7470"), swtch.DataPortGroup(2, 1))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Conns = cs
	return memRanks(t, network, startSwitch(t, cfg), 1, world, elements)
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

// TestDefaultWindowShare: at its default window a job takes at most an
// eighth of the L1, so a job with one buffer a block gets the window by
// bytes (256 blocks of 1 KiB at P = 8) and a tree job, P buffers a block,
// stays at 64; with both held the L1 has room for the next job, and a
// configured window is granted as asked.
func TestDefaultWindowShare(t *testing.T) {
	const world, elements = 8, 1 << 18 // 1024 blocks of 1 KiB
	sw := startSwitch(t, swtch.Config{})
	join := func(job uint32, algo wire.Algo) []*hostlib.Session {
		return inproctest.JoinAll(t, world, func(r int) hostlib.Options {
			return hostlib.Options{Switch: sw.Addr().String(), Job: job, Token: 42, Rank: r, World: world,
				DType: wire.Float32, Op: wire.OpSum, Elements: elements, Algo: algo, Timeout: 20 * time.Second}
		})
	}
	// Held together: 512 + 1024 + 1024 of the 4096 buffers of 1 KiB. A
	// tree job at the window by bytes alone would take all 4096, and the
	// next job would not fit.
	for _, tc := range []struct {
		job  uint32
		algo wire.Algo
		want int
	}{{1, wire.AlgoSingle, 256}, {2, wire.AlgoTree, 64}, {3, wire.AlgoTree, 64}} {
		if got := join(tc.job, tc.algo)[0].Window(); got != tc.want {
			t.Errorf("job %d, %v, beside the jobs before it: window %d, want %d", tc.job, tc.algo, got, tc.want)
		}
	}
	if got := swtch.DefaultWindowFor(world, 1024); got != 256 {
		t.Errorf("DefaultWindowFor(%d, 1 KiB) = %d, want 256", world, got)
	}

	sw = startSwitch(t, swtch.Config{Window: 10})
	if got := join(3, wire.AlgoSingle)[0].Window(); got != 10 {
		t.Errorf("Config.Window 10: window %d", got)
	}
}

// TestLentRegions: where the socket coalesces datagrams (GRO), the readers
// lend data packets to the processing unit from their receive regions.
// Two jobs at once, one in 8 KiB packets, get every sum right through
// regions that are received into again while other packets of theirs are
// still being handled, and once the calls are done every region is back
// in its reader's pool but the one each reader waits to receive into.
func TestLentRegions(t *testing.T) {
	for _, regions := range []int{0, 1} {
		t.Run(fmt.Sprintf("regions-%d", regions), func(t *testing.T) { testLentRegions(t, regions) })
	}
}

// testLentRegions runs TestLentRegions with n regions a reader (0: the
// default). With one, the reader receives into a region again as soon as
// the last packet lent from it is done, so a region given back early
// shows as wrong sums.
func testLentRegions(t *testing.T, n int) {
	sw := startSwitch(t, swtch.WithRegions(swtch.Config{Readers: 2, PacketBytes: 8 << 10}, n))
	if _, total := sw.RegionsFree(); total == 0 {
		t.Skip("no UDP GRO here: the readers receive into packet buffers")
	}
	const world = 4
	jobs := []struct {
		job      uint32
		elements int
		pe       int
	}{{31, 1 << 20, 256}, {32, 300_001, 0}}
	var g errgroup.Group
	for _, jb := range jobs {
		ss := inproctest.JoinAll(t, world, func(r int) hostlib.Options {
			return hostlib.Options{Switch: sw.Addr().String(), Job: jb.job, Token: 7, Rank: r, World: world,
				DType: wire.Float32, Op: wire.OpSum, Elements: jb.elements, PacketElems: jb.pe, Timeout: 20 * time.Second}
		})
		g.Go(func() error {
			bufs := make([][]float32, world)
			for call := range 5 {
				for r := range bufs {
					bufs[r] = make([]float32, jb.elements)
					for i := range bufs[r] {
						bufs[r][i] = float32((i+call)%1000 + r)
					}
				}
				var calls errgroup.Group
				for r, s := range ss {
					calls.Go(func() error { return hostlib.AllReduce(context.Background(), s, bufs[r]) })
				}
				if err := calls.Wait(); err != nil {
					return err
				}
				for r := range bufs {
					for i, v := range bufs[r] {
						if want := float32(world*((i+call)%1000) + world*(world-1)/2); v != want {
							return fmt.Errorf("job %d call %d rank %d element %d: %v, want %v", jb.job, call, r, i, v, want)
						}
					}
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	const readers = 2
	deadline := time.Now().Add(5 * time.Second)
	for {
		free, total := sw.RegionsFree()
		if free == total-readers {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d receive regions held after the calls ended, want the %d being received into", total-free, total, readers)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
