package swtch_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/hostlib"
	"github.com/flare-net/flare/internal/inproctest"
	swtch "github.com/flare-net/flare/switch"
	"github.com/flare-net/flare/wire"
)

// memSwitch runs a switch whose data port is a conn on network, until the
// test ends.
func memSwitch(t testing.TB, network *conn.MemNetwork) *swtch.Switch {
	t.Helper()
	c, err := network.Listen(netip.MustParseAddrPort("127.0.0.1:7470"))
	if err != nil {
		t.Fatal(err)
	}
	return startSwitch(t, swtch.Config{Conn: c})
}

// memRanks joins world float32-sum sessions of job, each over its own conn
// on network.
func memRanks(t testing.TB, network *conn.MemNetwork, sw *swtch.Switch, job uint32, world, elements int) []*hostlib.Session {
	t.Helper()
	return inproctest.JoinAll(t, world, func(r int) hostlib.Options {
		c, err := network.Listen(netip.AddrPort{})
		if err != nil {
			t.Fatal(err)
		}
		return hostlib.Options{Switch: sw.Addr().String(), Conn: c, Job: job, Token: 42, Rank: r,
			World: world, DType: wire.Float32, Op: wire.OpSum, Elements: elements, Timeout: 60 * time.Second}
	})
}

// TestAllReduceOverMemNetwork runs the daemon and the host library over the
// in-memory network, injected through swtch.Config.Conn and
// hostlib.Options.Conn, without and with loss, duplication and reordering:
// every rank ends with the exact sum (small integers, so float32 sums are
// exact in any order).
func TestAllReduceOverMemNetwork(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults conn.Faults
	}{
		{"clean", conn.Faults{}},
		{"faulty", conn.Faults{Drop: 0.02, Dup: 0.02, Reorder: 0.02, Seed: 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			network := conn.NewMemNetwork()
			network.Faults = tc.faults
			sw := memSwitch(t, network)
			const world, elements = 4, 100_000 // 391 blocks, the last one short
			ss := memRanks(t, network, sw, 3, world, elements)
			bufs, want := sumInputs(world, elements)
			allreduceAll(t, ss, bufs)
			checkExact(t, "", bufs, want)
			st := network.Stats()
			if tc.faults.Drop > 0 && st.Dropped == 0 {
				t.Errorf("the network dropped nothing (%+v): the faulty case tested no loss", st)
			}
			t.Logf("network: %+v", st)
		})
	}
}

// sumInputs are world ranks' float32 vectors of n small integers (their
// sums exact in float32) and the sum every rank must get.
func sumInputs(world, n int) (bufs [][]float32, want []float32) {
	bufs, want = make([][]float32, world), make([]float32, n)
	for r := range bufs {
		bufs[r] = make([]float32, n)
		for i := range bufs[r] {
			bufs[r][i] = float32((i*(r+3) + r) % 1000)
			want[i] += bufs[r][i]
		}
	}
	return bufs, want
}
