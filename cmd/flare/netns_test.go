package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flare-net/flare/internal/bench"
	"github.com/flare-net/flare/testbed"
)

// lossNS is a fresh network namespace whose kernel drops a share of the
// UDP datagrams every process in it sends (nftables, `numgen random`, on
// the output hook, so host → switch and switch → host alike). Processes
// run in it with `ip netns exec`; the namespace is deleted, and whatever
// still runs in it killed, when the test ends.
type lossNS struct {
	name     string
	permille int
}

var nsSeq atomic.Int64

// newLossNS makes the namespace, or skips the test saying why it cannot:
// not root, no ip or nft (Debian packages iproute2 and nftables, which
// .ci/run installs), or namespaces not permitted here.
func newLossNS(t *testing.T, permille int) *lossNS {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("kernel-level loss needs root for network namespaces and nftables")
	}
	for _, tool := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (Debian packages iproute2 and nftables; .ci/run installs them)", tool)
		}
	}
	ns := &lossNS{name: fmt.Sprintf("flare-%d-%d", os.Getpid(), nsSeq.Add(1)), permille: permille}
	if out, err := exec.Command("ip", "netns", "add", ns.name).CombinedOutput(); err != nil {
		t.Skipf("cannot create a network namespace here: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = testbed.DeleteNamespace(ns.name) })
	ns.must(t, "ip", "link", "set", "lo", "up")
	ns.must(t, "nft", "add", "table", "inet", "flareloss")
	ns.must(t, "nft", "add", "chain", "inet", "flareloss", "out", "{ type filter hook output priority 0; policy accept; }")
	if permille > 0 {
		ns.must(t, "nft", "add", "rule", "inet", "flareloss", "out", "meta", "l4proto", "udp",
			"numgen", "random", "mod", "1000", "<", strconv.Itoa(permille), "counter", "drop")
	}
	return ns
}

func (ns *lossNS) must(t *testing.T, args ...string) {
	t.Helper()
	if out, err := ns.command(context.Background(), args...).CombinedOutput(); err != nil {
		t.Fatalf("in namespace %s: %s: %v\n%s", ns.name, strings.Join(args, " "), err, out)
	}
}

// command runs args inside the namespace.
func (ns *lossNS) command(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns.name}, args...)...)
}

// dropped reads how many datagrams the rule has dropped so far.
func (ns *lossNS) dropped(t *testing.T) int64 {
	out, err := ns.command(context.Background(), "nft", "list", "chain", "inet", "flareloss", "out").Output()
	if err != nil {
		t.Fatalf("nft list: %v", err)
	}
	m := regexp.MustCompile(`counter packets (\d+)`).FindSubmatch(out)
	if m == nil {
		return 0
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return n
}

// startSwitch runs `flare switch` in the namespace on 127.0.0.1:7470 and
// returns the address (startSwitchAt).
func (ns *lossNS) startSwitch(t *testing.T, extra ...string) string {
	t.Helper()
	const addr = "127.0.0.1:7470"
	ns.startSwitchAt(t, addr, extra...)
	return addr
}

// startSwitchAt runs `flare switch` in the namespace at addr (without
// GSO/GRO, so rules drop single datagrams) and waits until it listens.
func (ns *lossNS) startSwitchAt(t *testing.T, addr string, extra ...string) {
	t.Helper()
	cmd := ns.command(context.Background(), append([]string{flareBin, "switch", "--listen", addr, "--admin", "off", "--no-offload"}, extra...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "switch listening") {
				ready <- true
			}
		}
		close(ready)
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("switch exited before listening")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("switch not listening after 10 s")
	}
}

// allreduceIn runs one `flare allreduce --ranks N` process in the namespace.
func (ns *lossNS) allreduceIn(ctx context.Context, sw string, job int, args ...string) (bench.Result, error) {
	all := append([]string{flareBin, "allreduce", "--switch", sw, "--job", strconv.Itoa(job), "--verify", "--json",
		"--no-offload", "--timeout", "60s"}, args...)
	out, err := ns.command(ctx, all...).CombinedOutput()
	var r bench.Result
	if err != nil {
		return r, fmt.Errorf("flare %s: %v\n%s", strings.Join(all[1:], " "), err, out)
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return r, fmt.Errorf("output %q: %v", out, err)
	}
	return r, nil
}

// Kernel-level loss: every allreduce completes and is verified, dense
// (the paper's choice and the tree) and sparse (hash storage, whose spills
// and results the switch resends), with results unicast and on a
// multicast group (a lost group datagram is lost for every member, and
// each one's retransmission is answered unicast), with 0.1%, 1% and 5% of
// all UDP datagrams dropped (and 10% for the small size). The table of
// time overhead and retransmissions against the loss-free run is logged.
func TestE2EKernelLoss(t *testing.T) {
	cases := []struct {
		name string
		args []string
		max  int // highest loss in permille for this case
	}{
		{"64KiB auto", []string{"--ranks", "4", "--bytes", "64KiB", "--iters", "10"}, 100},
		{"64KiB multicast", []string{"--ranks", "4", "--bytes", "64KiB", "--iters", "10", "--multicast"}, 100},
		{"1MiB multicast", []string{"--ranks", "4", "--bytes", "1MiB", "--iters", "5", "--multicast"}, 50},
		{"1MiB sparse multicast", []string{"--ranks", "4", "--bytes", "1MiB", "--iters", "5", "--sparse", "--density", "0.05", "--multicast"}, 50},
		{"1MiB auto", []string{"--ranks", "4", "--bytes", "1MiB", "--iters", "5"}, 50},
		{"1MiB tree", []string{"--ranks", "4", "--bytes", "1MiB", "--iters", "5", "--algo", "tree"}, 50},
		{"1MiB sparse hash 5%", []string{"--ranks", "4", "--bytes", "1MiB", "--iters", "5", "--sparse", "--density", "0.05"}, 50},
	}
	losses := []int{0, 1, 10, 50, 100}
	if testing.Short() || raceEnabled {
		// The race pass checks the loss paths; the plain pass the whole table.
		cases, losses = cases[:2], []int{0, 10}
	}
	base := map[string]float64{}
	var table strings.Builder
	fmt.Fprintf(&table, "\n%-22s %6s %10s %9s %12s %9s\n", "case", "loss", "median", "overhead", "retransmits", "dropped")
	for _, permille := range losses {
		ns := newLossNS(t, permille)
		sw := ns.startSwitch(t, "--multicast", "239.255.86.0/28")
		for i, tc := range cases {
			if permille > tc.max {
				continue
			}
			before := ns.dropped(t)
			r, err := ns.allreduceIn(context.Background(), sw, 10*permille+i+1, tc.args...)
			if err != nil {
				t.Fatalf("%s at %.1f%% loss: %v", tc.name, float64(permille)/10, err)
			}
			if !r.Verified {
				t.Fatalf("%s at %.1f%% loss: not verified", tc.name, float64(permille)/10)
			}
			if permille == 0 {
				base[tc.name] = r.MedianS
			}
			fmt.Fprintf(&table, "%-22s %5.1f%% %8.2fms %8.2f× %12d %9d\n", tc.name, float64(permille)/10, r.MedianS*1e3,
				r.MedianS/base[tc.name], r.Retransmits, ns.dropped(t)-before)
		}
	}
	t.Log(table.String())
}
