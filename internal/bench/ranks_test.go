package bench

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flare-net/flare/hostlib"
	"github.com/flare-net/flare/internal/inproctest"
	swtch "github.com/flare-net/flare/switch"
	"github.com/flare-net/flare/wire"
)

// A rank's session asks the switch for what its Config says: every field
// a session takes, each set to a value of its own.
func TestSessionOptions(t *testing.T) {
	c := Config{Job: 9, Token: 0xfeed, DType: wire.Int16, Op: wire.OpMax, Count: 4000, Algo: "multi4", Reproducible: true,
		Timeout: 7 * time.Second, Sparse: true, Storage: wire.StorageArray, BlockElems: 512, NoOffload: true,
		Deadline: 3 * time.Millisecond, Multicast: true, BusyPoll: 20 * time.Microsecond}
	want := hostlib.Options{Switch: "10.0.0.1:7470", Job: 9, Token: 0xfeed, Rank: 2, World: 5, DType: wire.Int16, Op: wire.OpMax,
		Elements: 4000, Algo: wire.AlgoMulti, Buffers: 4, Reproducible: true, Timeout: 7 * time.Second, Sparse: true,
		Storage: wire.StorageArray, BlockElems: 512, DisableOffload: true, BlockDeadline: 3 * time.Millisecond, Multicast: true,
		BusyPoll: 20 * time.Microsecond}
	if got := sessionOptions(c, "10.0.0.1:7470", 2, 5); !reflect.DeepEqual(got, want) {
		t.Errorf("options\n%+v, want\n%+v", got, want)
	}
}

// A session's counters as a rank's traffic: each in its place.
func TestSessionTraffic(t *testing.T) {
	got := sessionTraffic(hostlib.Stats{BytesSent: 1, BytesReceived: 2, PacketsSent: 3, PacketsReceived: 4, Retransmits: 5, SpilledPairs: 6})
	if want := (traffic{tx: 1, rx: 2, packetsTx: 3, packetsRx: 4, retransmits: 5, spilled: 6}); got != want {
		t.Errorf("traffic %+v, want %+v", got, want)
	}
}

// A call that asks for multicast through a switch that has no group for
// it fails and says why, instead of falling back to unicast unnoticed.
func TestMulticastWithoutGroup(t *testing.T) {
	sw, err := inproctest.Group(t).Switch(swtch.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c := Config{Switch: sw.Addr().String(), Job: 1, Token: 7, Ranks: 2, Count: 256, DType: wire.Float32, Op: wire.OpSum, Algo: "auto",
		Iters: 1, Timeout: 5 * time.Second, Multicast: true}
	if _, err := Run(context.Background(), c); err == nil || !strings.Contains(err.Error(), "granted the job no multicast group") {
		t.Errorf("Run with Multicast through a switch without a pool: %v", err)
	}
}
