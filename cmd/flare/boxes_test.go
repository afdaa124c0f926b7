//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/flare-net/flare/hostlib"
	"github.com/flare-net/flare/internal/bench"
	"github.com/flare-net/flare/testbed"
)

// The multi-box harness (docs/TESTING-TREES.md): every "box" is a network
// namespace of its own with one address on a private /24, its eth0 one end
// of a veth pair whose other end is a port of a bridge. The bridge lives in
// a namespace of its own, the "fabric", not in the root namespace: nothing
// of a run touches the machine's own interfaces, routes or firewall (a
// host's FORWARD policy or br_netfilter cannot eat the boxes' traffic),
// two runs at once (other engineers' `go test`, a -count=3) can use the
// same subnet without clashing, and deleting the namespaces removes every
// veth and the bridge with them. The test process stays in the root
// namespace; it reaches a box's admin port (metrics) over a socket it
// opens inside the box (box.dial).
const (
	boxPrefix = "flarebox-"  // namespace names: flarebox-PID-SEQ-LABEL
	boxNet    = "10.213.77." // box i (from 0) is boxNet + (i+1), /24
	boxData   = ":7470"      // a box's switch data port
	boxAdmin  = ":9470"      // and its admin (HTTP) port
)

var boxSeq atomic.Int64

// boxes is one run's fabric and boxes.
type boxes struct {
	fabric string // the namespace holding the bridge br0
	all    []*box
}

// box is one namespace on the fabric. The embedded lossNS gives it
// command, must, allreduceIn and droppedAll.
type box struct {
	*lossNS
	label string
	ip    string
	http  *http.Client
}

// newBoxes builds the fabric and one box per label, addresses in label
// order (boxNet+1, +2, ...), each with lo and eth0 up, or skips the test
// naming what is missing. Processes still running in any of them are
// killed and the namespaces deleted when the test ends, failed or not.
func newBoxes(t *testing.T, labels ...string) *boxes {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the multi-box harness needs root for network namespaces, veth pairs and a bridge")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("ip not installed (Debian package iproute2; .ci/run installs it)")
	}
	if len(labels) > 253 {
		t.Fatalf("%d boxes: the /24 holds 253", len(labels))
	}
	// Namespaces an aborted earlier run left (its process gone); never
	// those of a run in progress next to this one.
	for _, ns := range testbed.SweepStale(boxPrefix) {
		t.Logf("deleted namespace %s, left by a process that is gone", ns)
	}
	prefix := testbed.RunPrefix(boxPrefix, boxSeq.Add(1))
	bx := &boxes{fabric: prefix + "fabric"}
	if out, err := exec.Command("ip", "netns", "add", bx.fabric).CombinedOutput(); err != nil {
		t.Skipf("cannot create a network namespace here: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = testbed.DeleteNamespace(bx.fabric) })
	ipMust(t, "-n", bx.fabric, "link", "add", "br0", "type", "bridge")
	ipMust(t, "-n", bx.fabric, "link", "set", "br0", "up")
	for i, label := range labels {
		b := &box{lossNS: &lossNS{name: prefix + label}, label: label, ip: boxNet + strconv.Itoa(i+1)}
		if out, err := exec.Command("ip", "netns", "add", b.name).CombinedOutput(); err != nil {
			t.Fatalf("ip netns add %s: %v: %s", b.name, err, out)
		}
		t.Cleanup(func() { _ = testbed.DeleteNamespace(b.name) })
		// Interface names are per namespace: every box's is eth0, its
		// bridge port v<index> in the fabric.
		port := "v" + strconv.Itoa(i)
		ipMust(t, "-n", bx.fabric, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", b.name)
		ipMust(t, "-n", bx.fabric, "link", "set", port, "master", "br0", "up")
		ipMust(t, "-n", b.name, "link", "set", "lo", "up")
		ipMust(t, "-n", b.name, "addr", "add", b.ip+"/24", "dev", "eth0")
		ipMust(t, "-n", b.name, "link", "set", "eth0", "up")
		b.http = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: b.dial, DisableKeepAlives: true}}
		bx.all = append(bx.all, b)
	}
	return bx
}

// box is the box of that label.
func (bx *boxes) box(t *testing.T, label string) *box {
	t.Helper()
	for _, b := range bx.all {
		if b.label == label {
			return b
		}
	}
	t.Fatalf("no box %q", label)
	return nil
}

func ipMust(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// dial opens a connection from inside the box (testbed.DialIn): the
// socket stays in the box whichever thread uses it afterwards.
func (b *box) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return testbed.DialIn(ctx, b.name, network, addr)
}

// get fetches http://ADDR/path from inside the box.
func (b *box) get(addr, path string) (string, error) {
	resp, err := b.http.Get("http://" + addr + path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return string(body), err
}

// boxSwitch is a `flare switch` daemon in a box.
type boxSwitch struct {
	*daemon
	box *box
}

// startSwitch runs `flare switch` in the box on its address, data port
// boxData and admin port boxAdmin (one switch per box), without GSO/GRO
// so loss rules drop single datagrams, and waits for /healthz.
func (b *box) startSwitch(t *testing.T, extra ...string) *boxSwitch {
	t.Helper()
	d := &daemon{data: b.ip + boxData, admin: b.ip + boxAdmin, log: &syncBuffer{}, done: make(chan error, 1)}
	d.cmd = b.command(context.Background(), append([]string{flareBin, "switch", "--listen", d.data, "--admin", d.admin,
		"--l1", "4MiB", "--no-offload"}, extra...)...)
	d.cmd.Stderr = d.log
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.done <- d.cmd.Wait() }()
	t.Cleanup(func() {
		d.cmd.Process.Kill() // ip netns exec execs: this is the daemon
		<-d.done
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := b.get(d.admin, "/healthz")
		if err == nil {
			return &boxSwitch{daemon: d, box: b}
		}
		select {
		case err := <-d.done:
			t.Fatalf("switch in box %s exited: %v\n%s", b.label, err, d.log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("switch in box %s not healthy after 10 s: %v\n%s", b.label, err, d.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// metricSum scrapes the daemon's /metrics and sums the samples of name
// whose labels include every one of labels (`k="v"` each).
func (s *boxSwitch) metricSum(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	body, err := s.box.get(s.admin, "/metrics")
	if err != nil {
		t.Fatalf("metrics of the switch in box %s: %v", s.box.label, err)
	}
	sum, _ := sumMetric(t, body, name, labels...)
	return sum
}

// linkBytes is tree_test.go's linkBytes for a daemon in a box; peer, if
// given, picks one peer's link (HOST:PORT or a prefix of it).
func (s *boxSwitch) linkBytes(t *testing.T, role, dir, peer string) float64 {
	t.Helper()
	return s.metricSum(t, "flare_link_bytes_total", `link="`+role+`"`, `direction="`+dir+`"`, `peer="`+peer)
}

// linkLoss drops permille ‰ of the UDP datagrams between boxes a and b,
// both directions, each at its sender's output (nftables, as lossNS does,
// one counted rule per direction): the kernel-level loss of one link.
func (bx *boxes) linkLoss(t *testing.T, a, b *box, permille int) {
	t.Helper()
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("nft not installed (Debian package nftables; .ci/run installs it)")
	}
	for _, p := range [][2]*box{{a, b}, {b, a}} {
		from, to := p[0], p[1]
		if from.permille == 0 { // the box's chain, made once
			from.must(t, "nft", "add", "table", "inet", "flareloss")
			from.must(t, "nft", "add", "chain", "inet", "flareloss", "out", "{ type filter hook output priority 0; policy accept; }")
		}
		from.permille = permille
		from.must(t, "nft", "add", "rule", "inet", "flareloss", "out", "ip", "daddr", to.ip, "meta", "l4proto", "udp",
			"numgen", "random", "mod", "1000", "<", strconv.Itoa(permille), "counter", "drop")
	}
}

// dropped sums the loss rules' drop counters over the boxes that have them.
func (bx *boxes) dropped(t *testing.T) int64 {
	var n int64
	for _, b := range bx.all {
		if b.permille > 0 {
			n += b.droppedAll(t)
		}
	}
	return n
}

// A two-level tree over real addresses: a root switch box, two leaf switch
// boxes and four host boxes (two per leaf) each running a one-rank
// `flare allreduce` process, joined by a bridge; 1% of the datagrams
// between leaf 0's box and the root's dropped by the kernel. Dense single
// and tree designs complete verified; each leaf's parent link carries about
// one partial per block per call up, and leaf 0's one result down, to and
// from the root's address; the drops and per-link bytes are logged.
func TestE2ETreeBoxes(t *testing.T) {
	// perBox one-rank processes per host box: two (a box with two
	// accelerators) works, but eight host processes and three daemons on 2
	// loaded cores time out spuriously, and every spurious retransmission
	// makes the leaf send its partial up again (1.5 to 2 partials per
	// block); with one, the uplink stays near one.
	const leaves, hostBoxes, perBox = 2, 4, 1
	size, sizeBytes, iters := "1MiB", 1<<20, 3
	designs := []string{"single", "tree"}
	if raceEnabled {
		// Race-built daemons and hosts under loss on 2 cores: the race pass
		// checks the paths on small vectors, the plain pass the traffic.
		size, sizeBytes, iters = "64KiB", 64<<10, 1
	}
	labels := []string{"root"}
	for i := range leaves {
		labels = append(labels, "leaf"+strconv.Itoa(i))
	}
	for h := range hostBoxes {
		labels = append(labels, "host"+strconv.Itoa(h))
	}
	bx := newBoxes(t, labels...)
	rootBox := bx.box(t, "root")
	root := rootBox.startSwitch(t, append([]string{"--children", strconv.Itoa(leaves)}, treeDaemonFlags...)...)
	var leaf []*boxSwitch
	var leafDaemons []*daemon
	for i := range leaves {
		s := bx.box(t, "leaf"+strconv.Itoa(i)).startSwitch(t, append([]string{"--parent", root.data, "--child-index", strconv.Itoa(i)}, treeDaemonFlags...)...)
		leaf = append(leaf, s)
		leafDaemons = append(leafDaemons, s.daemon)
	}
	sw := leafList(leafDaemons)
	bx.linkLoss(t, leaf[0].box, rootBox, 10)

	world := hostBoxes * perBox
	calls := float64(iters + 1) // and one warmup
	var table strings.Builder
	fmt.Fprintf(&table, "\n%d boxes on %s0/24; root %s, leaves %s; %d ranks in %d host boxes; %s per rank, %d calls per design\n",
		len(bx.all), boxNet, root.data, sw, world, hostBoxes, size, int(calls))
	fmt.Fprintf(&table, "%-7s %10s %11s %8s %13s %13s %13s\n", "design", "median", "retransmits", "dropped", "leaf0 → root", "root → leaf0", "leaf1 → root")
	start := time.Now()
	for d, algo := range designs {
		job := 500 + d
		up0Before := leaf[0].linkBytes(t, "parent", "tx", root.data)
		down0Before := leaf[0].linkBytes(t, "parent", "rx", root.data)
		up1Before := leaf[1].linkBytes(t, "parent", "tx", root.data)
		drop0 := bx.dropped(t)
		rows := make([]bench.Result, world)
		g, gctx := errgroup.WithContext(context.Background())
		token := strconv.FormatUint(hostlib.NewToken(), 10)
		for r := range world {
			// Host box h runs ranks perBox*h .. perBox*h+perBox-1; with
			// contiguous placement, leaf i serves host boxes of its half.
			host := bx.box(t, "host"+strconv.Itoa(r/perBox))
			g.Go(func() error {
				row, err := host.allreduceIn(gctx, sw, job, "--token", token, "--rank", strconv.Itoa(r), "--world", strconv.Itoa(world),
					"--bytes", size, "--algo", algo, "--iters", strconv.Itoa(iters), "--warmup", "1")
				if err != nil {
					return fmt.Errorf("rank %d in box %s: %w", r, host.label, err)
				}
				rows[r] = row
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			t.Fatalf("%s with 1%% loss on leaf 0's link: %v\nleaf 0 log:\n%s", algo, err, leaf[0].log)
		}
		var median float64
		var retransmits int64
		for r, row := range rows {
			if !row.Verified || row.Ranks != world || row.Algo != algo {
				t.Fatalf("%s: rank %d: %+v", algo, r, row)
			}
			median = max(median, row.MedianS)
			retransmits += row.Retransmits
		}
		up := leaf[0].linkBytes(t, "parent", "tx", root.data) - up0Before
		down := leaf[0].linkBytes(t, "parent", "rx", root.data) - down0Before
		up1 := leaf[1].linkBytes(t, "parent", "tx", root.data) - up1Before
		dropped := bx.dropped(t) - drop0
		fmt.Fprintf(&table, "%-7s %8.2fms %11d %8d %10.2f MB %10.2f MB %10.2f MB\n", algo, median*1e3, retransmits, dropped, up/1e6, down/1e6, up1/1e6)
		// One partial per block per call goes up: the vector's bytes, plus
		// headers and the resends of what the kernel dropped or the hosts
		// retransmitted (the same bound as TestE2ETree4x4's).
		if want := calls * float64(sizeBytes); !raceEnabled && (up < want || up > 2*want || up1 < want || up1 > 2*want) {
			t.Errorf("%s: leaves sent %.0f and %.0f bytes up, want about %.0f each (one partial per block per call, headers and resends aside)", algo, up, up1, want)
		}
		if want := calls * float64(sizeBytes); !raceEnabled && down < want {
			t.Errorf("%s: leaf 0 got %.0f bytes of results from the root, want at least %.0f", algo, down, want)
		}
	}
	// The traffic crossed the bridge between the boxes' own addresses: the
	// root, alone in its box, received datagrams (the leaves' partials).
	if n := root.metricSum(t, "flare_rx_packets_total"); n == 0 {
		t.Error("the root switch received nothing")
	}
	if !raceEnabled && bx.dropped(t) == 0 {
		t.Error("the loss rules dropped nothing: the test did not exercise loss")
	}
	t.Logf("%s(%v for both designs)", table.String(), time.Since(start).Round(time.Millisecond))
}
