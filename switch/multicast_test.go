package swtch_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flare-net/flare/hostlib"
	"github.com/flare-net/flare/internal/inproctest"
	swtch "github.com/flare-net/flare/switch"
	"github.com/flare-net/flare/wire"
	"golang.org/x/sync/errgroup"
)

// txPackets is how many datagrams sw has sent on the links of role that
// live jobs name now, "group" (their multicast groups) or "child" (their
// members, one by one), and how many of those answered retransmissions.
func txPackets(sw *swtch.Switch, role string) (all, retransmit int64) {
	for _, l := range sw.LinkTraffic() {
		if l.Role == role {
			all += l.TxPackets
			retransmit += l.Retransmit.TxPackets
		}
	}
	return all, retransmit
}

// groupTxPackets is how many datagrams sw has sent to multicast groups.
func groupTxPackets(sw *swtch.Switch) int64 {
	all, _ := txPackets(sw, "group")
	return all
}

// mcRanks joins world float32-sum ranks of job at sw, rank r asking for
// multicast results when ask(r).
func mcRanks(t *testing.T, sw *swtch.Switch, job uint32, world, elements int, ask func(r int) bool) []*hostlib.Session {
	t.Helper()
	return inproctest.JoinAll(t, world, func(r int) hostlib.Options {
		return hostlib.Options{Switch: sw.Addr().String(), Job: job, Token: 42, Rank: r, World: world,
			DType: wire.Float32, Op: wire.OpSum, Elements: elements, Timeout: 20 * time.Second, Multicast: ask(r)}
	})
}

// checkSums runs calls allreduces of sumInputs on ss and checks every
// rank's result against the plain sum.
func checkSums(t *testing.T, ss []*hostlib.Session, elements, calls int) {
	t.Helper()
	for call := range calls {
		bufs, want := sumInputs(len(ss), elements)
		allreduceAll(t, ss, bufs)
		checkExact(t, fmt.Sprintf("call %d, ", call), bufs, want)
	}
}

// A job whose ranks all ask gets a group of the pool: each result is sent
// once, to the group, and every rank's sum is right; unicast sends to the
// members are the join-acks and answers to retransmissions alone (a slow
// run, under the race detector, retransmits). The group goes back to the
// pool when the job ends, and its link with it.
func TestMulticastResults(t *testing.T) {
	sw := startSwitch(t, swtch.Config{Multicast: netip.MustParsePrefix("239.255.81.0/30"), Admin: "127.0.0.1:0"})
	const elements, world, calls = 50_000, 4, 3
	ss := mcRanks(t, sw, 1, world, elements, func(int) bool { return true })
	blocks := int64(ss[0].Blocks())
	checkSums(t, ss, elements, calls)
	if got := groupTxPackets(sw); got < calls*blocks {
		t.Errorf("%d datagrams sent to the group, want at least %d (every block of %d calls)", got, calls*blocks, calls)
	}
	if all, retx := txPackets(sw, "child"); all-retx >= blocks {
		t.Errorf("%d datagrams sent to members one by one, %d of them answers to retransmissions: want the rest join-acks (< %d)", all, retx, blocks)
	}
	if got, exported := sw.MulticastGroupsInUse(), metric(t, sw, "flare_multicast_groups_in_use"); got != 1 || exported != 1 {
		t.Errorf("%d groups in use (%v exported), want 1", got, exported)
	}
	for _, s := range ss {
		s.Close()
	}
	waitFor(t, "the group back in the pool", func() bool { return sw.MulticastGroupsInUse() == 0 && groupTxPackets(sw) == 0 })
	if n := metric(t, sw, "flare_multicast_groups_in_use"); n != 0 {
		t.Errorf("%v groups in use exported once the job ended, want 0", n)
	}
}

// A job with one rank that does not ask runs unicast for everyone; a
// pool of one group serves one job at a time, and a second job running
// alongside falls back to unicast. Both sum right. Once the first ends,
// a third job gets the group.
func TestMulticastFallsBackToUnicast(t *testing.T) {
	sw := startSwitch(t, swtch.Config{Multicast: netip.MustParsePrefix("239.255.81.8/32")})
	const elements = 20_000
	mixed := mcRanks(t, sw, 2, 3, elements, func(r int) bool { return r != 1 })
	checkSums(t, mixed, elements, 1)
	if got := sw.MulticastGroupsInUse(); got != 0 {
		t.Errorf("a job with a rank that did not ask holds %d groups, want 0", got)
	}
	first := mcRanks(t, sw, 3, 2, elements, func(int) bool { return true })
	second := mcRanks(t, sw, 4, 2, elements, func(int) bool { return true })
	checkSums(t, first, elements, 2) // (both jobs hold their state meanwhile)
	checkSums(t, second, elements, 2)
	if got := sw.MulticastGroupsInUse(); got != 1 {
		t.Errorf("%d groups in use with a pool of one and two jobs asking, want 1", got)
	}
	// Once the job holding it ends, the group serves the next job.
	for _, s := range first {
		s.Close()
	}
	waitFor(t, "the group back in the pool", func() bool { return sw.MulticastGroupsInUse() == 0 })
	third := mcRanks(t, sw, 6, 2, elements, func(int) bool { return true })
	before := groupTxPackets(sw)
	checkSums(t, third, elements, 1)
	if got := sw.MulticastGroupsInUse(); got != 1 || groupTxPackets(sw) == before {
		t.Errorf("a job asking after the group came back: %d groups in use and %d datagrams sent to it, want 1 and more than %d", got, groupTxPackets(sw), before)
	}
}

// A rank that restarts while its job runs on a group joins in a new
// session, which ends the job (the other ranks' next call fails, naming
// it): the group goes back to the pool, and the job joined anew by every
// rank gets one again only when every rank asks, here not at first (the
// new rank 0 does not), then yes.
func TestMulticastRejoin(t *testing.T) {
	sw := startSwitch(t, swtch.Config{Multicast: netip.MustParsePrefix("239.255.81.16/30")})
	const elements, world = 20_000, 3
	ss := mcRanks(t, sw, 5, world, elements, func(int) bool { return true })
	checkSums(t, ss, elements, 1)
	restart := func(ask bool) {
		t.Helper()
		ss[0].Close()
		opts := hostlib.Options{Switch: sw.Addr().String(), Job: 5, Token: 42, Rank: 0, World: world, DType: wire.Float32,
			Op: wire.OpSum, Elements: elements, Timeout: 20 * time.Second, Multicast: ask}
		joined := make(chan error, 1)
		go func() {
			var err error
			ss[0], err = hostlib.Join(context.Background(), opts)
			joined <- err
		}()
		for r := 1; r < world; r++ {
			buf := make([]float32, elements)
			var ae *hostlib.AbortedError
			if err := hostlib.AllReduce(context.Background(), ss[r], buf); !errors.As(err, &ae) || ae.Rank != 0 {
				t.Fatalf("rank %d's call after rank 0 restarted: %v, want an abort by rank 0", r, err)
			}
			ss[r].Close()
		}
		var g errgroup.Group
		for r := 1; r < world; r++ {
			o := opts
			o.Rank, o.Multicast = r, true
			g.Go(func() (err error) { ss[r], err = hostlib.Join(context.Background(), o); return err })
		}
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
		if err := <-joined; err != nil {
			t.Fatalf("rank 0's new session: %v", err)
		}
	}
	restart(false)
	checkSums(t, ss, elements, 1)
	if got := sw.MulticastGroupsInUse(); got != 0 {
		t.Errorf("%d groups in use once the job runs again with a rank that did not ask, want 0", got)
	}
	restart(true)
	checkSums(t, ss, elements, 1)
	if got := sw.MulticastGroupsInUse(); got != 1 {
		t.Errorf("%d groups in use once every rank asks again, want the job's 1", got)
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The switch holds its groups' port while it runs: with an ephemeral data
// port, whose neighbour may be any socket's, it is a free port the kernel
// picked, and a socket that would take it on the wildcard address alone
// is refused (the members, who share it, are not). A switch whose port
// another socket has does not start, and names the setting.
func TestMulticastPortHeld(t *testing.T) {
	sw := startSwitch(t, swtch.Config{Multicast: netip.MustParsePrefix("239.255.84.0/30")})
	port := sw.MulticastPort()
	if port == 0 {
		t.Fatal("no multicast port")
	}
	if c, err := net.ListenUDP("udp4", &net.UDPAddr{Port: port}); err == nil {
		c.Close()
		t.Errorf("a wildcard socket took the switch's multicast port %d", port)
	}
	ss := mcRanks(t, sw, 1, 2, 1000, func(int) bool { return true })
	checkSums(t, ss, 1000, 1)

	squat, err := net.ListenUDP("udp4", &net.UDPAddr{})
	if err != nil {
		t.Fatal(err)
	}
	defer squat.Close()
	taken := squat.LocalAddr().(*net.UDPAddr).Port
	sw2, err := swtch.New(swtch.Config{Listen: "127.0.0.1:0", Admin: "off", Multicast: netip.MustParsePrefix("239.255.84.4/30"), MulticastPort: taken})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sw2.Run(ctx); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("Config.MulticastPort = %d", taken)) || !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("a switch whose multicast port %d is taken: Run = %v, want an error naming Config.MulticastPort", taken, err)
	}
}
