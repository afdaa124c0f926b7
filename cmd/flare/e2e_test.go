package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sync/errgroup"

	"github.com/flare-net/flare/hostlib"
	"github.com/flare-net/flare/internal/bench"
	"github.com/flare-net/flare/internal/inproctest"
	"github.com/flare-net/flare/wire"
)

// flareBin is the binary built once for the end-to-end tests.
var flareBin string

func TestMain(m *testing.M) {
	// A command a test runs in this process may start this binary again as
	// flare (flare bench's rank processes are os.Executable): it gets
	// flare, not a second run of every test, whose bench rows would start
	// ranks of their own.
	if len(os.Args) > 1 && !strings.HasPrefix(os.Args[1], "-test.") {
		main()
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "flare-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	flareBin = filepath.Join(dir, "flare")
	args := []string{"build", "-buildvcs=auto", "-o", flareBin}
	if raceEnabled {
		args = append(args, "-race")
	}
	if out, err := exec.Command("go", append(args, ".")...).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building flare: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// daemon is a `flare switch` process.
type daemon struct {
	cmd   *exec.Cmd
	data  string
	admin string
	log   *syncBuffer
	done  chan error
}

// startDaemon runs the switch as its own process on ports the kernel
// picks, reads them from its log (inproctest.DaemonAddrs), and waits for
// /healthz.
func startDaemon(t *testing.T, extra ...string) *daemon {
	t.Helper()
	d := &daemon{log: &syncBuffer{}, done: make(chan error, 1)}
	d.cmd = exec.Command(flareBin, append([]string{"switch", "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0", "--l1", "4MiB"}, extra...)...)
	d.cmd.Stderr = d.log
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.done <- d.cmd.Wait() }()
	t.Cleanup(func() {
		d.cmd.Process.Kill()
		<-d.done
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if data, admin, ok := inproctest.DaemonAddrs(d.log.String()); ok {
			d.data, d.admin = data, admin
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("switch not listening after 10 s\n%s", d.log)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for {
		resp, err := http.Get("http://" + d.admin + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return d
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("switch not healthy after 10 s: %v\n%s", err, d.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// metric scrapes /metrics and returns the value of the first sample whose
// line starts with name (labels included in name if given).
func (d *daemon) metric(t *testing.T, name string) float64 {
	t.Helper()
	v, found := sumMetric(t, d.scrape(t), name)
	if !found {
		t.Fatalf("metric %s not exported", name)
	}
	return v
}

// scrape returns the daemon's /metrics text.
func (d *daemon) scrape(t *testing.T) string {
	t.Helper()
	return inproctest.Scrape(t, d.admin)
}

// sumMetric sums the samples of metric name in a /metrics text whose
// labels include every one of labels (`k="v"` each, or a prefix of it),
// and reports whether there was any.
func sumMetric(t *testing.T, text, name string, labels ...string) (sum float64, found bool) {
	t.Helper()
next:
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		for _, l := range labels {
			if !strings.Contains(line, l) {
				continue next
			}
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatal(err)
		}
		sum, found = sum+v, true
	}
	return sum, found
}

// allreduce runs `flare allreduce` processes: one per rank when perRank,
// else one process with --ranks. It returns the JSON rows.
func allreduce(ctx context.Context, t *testing.T, d *daemon, job, world int, perRank bool, args ...string) ([]bench.Result, error) {
	base := append([]string{"allreduce", "--switch", d.data, "--job", strconv.Itoa(job), "--verify", "--json",
		"--iters", "2", "--warmup", "1", "--timeout", "60s"}, args...)
	var runs [][]string
	if perRank {
		base = append(base, "--token", strconv.FormatUint(hostlib.NewToken(), 10)) // one process per rank: they share it
		for r := 0; r < world; r++ {
			runs = append(runs, append(append([]string(nil), base...), "--rank", strconv.Itoa(r), "--world", strconv.Itoa(world)))
		}
	} else {
		runs = append(runs, append(base, "--ranks", strconv.Itoa(world)))
	}
	rows := make([]bench.Result, len(runs))
	g, gctx := errgroup.WithContext(ctx)
	for i, a := range runs {
		g.Go(func() error {
			out, err := exec.CommandContext(gctx, flareBin, a...).CombinedOutput()
			if err != nil {
				return fmt.Errorf("flare %s: %v\n%s", strings.Join(a, " "), err, out)
			}
			if err := json.Unmarshal(out, &rows[i]); err != nil {
				return fmt.Errorf("flare %s: output %q: %v", strings.Join(a, " "), out, err)
			}
			return nil
		})
	}
	return rows, g.Wait()
}

// Every design × dtype × op through the daemon process, sizes that are
// not multiples of the packet, 1 element, P = 1, 2, 8, 16, separate host
// processes for some, all verified element by element.
func TestE2EAllReduceMatrix(t *testing.T) {
	d := startDaemon(t)
	ctx := context.Background()
	job := 1
	algos := []string{"single", "multi2", "multi4", "tree"}
	for _, dt := range wire.DTypes {
		ops := []string{"sum", "min", "max", "prod"}
		if !dt.IsFloat() {
			ops = append(ops, "and", "or", "xor")
		}
		for i, op := range ops {
			algo := algos[(int(dt)+i)%len(algos)]
			world := []int{1, 2, 8, 16}[(int(dt)+i)%4]
			count := []int{1, 255, 1000, 70001}[(int(dt)*3+i)%4]
			job++
			rows, err := allreduce(ctx, t, d, job, world, false, "--dtype", dt.String(), "--op", op, "--algo", algo, "--count", strconv.Itoa(count))
			if err != nil {
				t.Fatalf("%s %s %s P=%d n=%d: %v", dt, op, algo, world, count, err)
			}
			if !rows[0].Verified || rows[0].Algo != algo {
				t.Fatalf("%s %s: row %+v", dt, op, rows[0])
			}
		}
	}
	// One process per host.
	for _, algo := range algos {
		job++
		if _, err := allreduce(ctx, t, d, job, 4, true, "--algo", algo, "--bytes", "100KiB", "--dtype", "float32"); err != nil {
			t.Fatal(err)
		}
	}
	if n := d.metric(t, "flare_blocks_completed_total"); n == 0 {
		t.Fatal("no blocks completed according to /metrics")
	}
}

// Several jobs at once on one switch, each with its own quota, and many
// back-to-back calls in one session.
func TestE2EConcurrentJobsAndBackToBack(t *testing.T) {
	d := startDaemon(t)
	ctx := context.Background()
	for _, jobs := range []int{2, 4} {
		g, gctx := errgroup.WithContext(ctx)
		for j := 0; j < jobs; j++ {
			g.Go(func() error {
				_, err := allreduce(gctx, t, d, 100*jobs+j, 4, false, "--bytes", "300KiB", "--dtype", "int32", "--algo", []string{"auto", "tree"}[j%2])
				return err
			})
		}
		if err := g.Wait(); err != nil {
			t.Fatalf("%d concurrent jobs: %v", jobs, err)
		}
	}
	rows, err := allreduce(ctx, t, d, 999, 2, false, "--bytes", "4KiB", "--iters", "50", "--warmup", "0")
	if err != nil || rows[0].Iters != 50 {
		t.Fatalf("50 back-to-back calls: %v %+v", err, rows)
	}
}

// Large vectors through the daemon: 64 MiB per rank, and a length just
// short of a multiple of the packet.
func TestE2ELarge(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("64 MiB per rank is for the plain (non-race) run")
	}
	d := startDaemon(t, "--l1", "8MiB")
	if _, err := allreduce(context.Background(), t, d, 7, 2, false, "--bytes", "64MiB", "--iters", "1", "--warmup", "0"); err != nil {
		t.Fatal(err)
	}
	if _, err := allreduce(context.Background(), t, d, 8, 2, false, "--count", strconv.Itoa(16<<20-3), "--iters", "1", "--warmup", "0", "--dtype", "int32"); err != nil {
		t.Fatal(err)
	}
}

// TestE2ESteerRun: the daemon with two readers steering runs of 64 blocks
// (--steer-run 64) spreads the hosts' GSO runs over both, as its metrics
// show to a scrape: each reader takes at least 30% of a verified 1 MiB
// allreduce's datagrams.
func TestE2ESteerRun(t *testing.T) {
	d := startDaemon(t, "--readers", "2", "--steer-run", "64", "--packet", "1KiB")
	if !strings.Contains(d.log.String(), "steering=key") {
		t.Skipf("the kernel did not take the steering program, so nothing is steered by block:\n%s", d.log)
	}
	if _, err := allreduce(context.Background(), t, d, 7, 4, false, "--bytes", "1MiB"); err != nil {
		t.Fatal(err)
	}
	rx := []float64{d.metric(t, `flare_reader_packets_total{dir="rx",reader="0"}`), d.metric(t, `flare_reader_packets_total{dir="rx",reader="1"}`)}
	t.Logf("datagrams per reader: %v", rx)
	for i, n := range rx {
		if n < 0.3*(rx[0]+rx[1]) {
			t.Errorf("reader %d took %v of %v datagrams: runs of 64 blocks spread over both", i, n, rx[0]+rx[1])
		}
	}
}

// Metrics move with traffic; garbage is dropped and counted by reason; a
// job that cannot fit is refused with the numbers; SIGTERM exits 0.
func TestE2EMetricsRefusalAndShutdown(t *testing.T) {
	d := startDaemon(t, "--l1", "16KiB", "--clusters", "1")
	rx0 := d.metric(t, "flare_rx_packets_total")
	if _, err := allreduce(context.Background(), t, d, 5, 2, false, "--bytes", "4KiB", "--algo", "single"); err != nil {
		t.Fatal(err)
	}
	if rx := d.metric(t, "flare_rx_packets_total"); rx <= rx0 {
		t.Fatalf("rx packets %v after traffic, was %v", rx, rx0)
	}
	// Garbage and a data packet of an unknown job.
	c, err := net.Dial("udp", d.data)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("not a flare packet"))
	h := wire.Header{Version: wire.Version, Type: wire.TypeData, Job: 4242, DType: wire.Int32, Op: wire.OpSum, Count: 1}
	c.Write(wire.AppendPacket(nil, &h, make([]byte, 4)))
	c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for d.metric(t, `flare_dropped_packets_total{reason="unknown-job"}`) < 1 || d.metric(t, `flare_dropped_packets_total{reason="short"}`)+d.metric(t, `flare_dropped_packets_total{reason="version"}`) < 1 {
		if time.Now().After(deadline) {
			t.Fatal("garbage not counted under a drop reason")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// 16 KiB of L1 is 16 buffers; a tree job of 64 ranks needs 2·64.
	_, err = allreduce(context.Background(), t, d, 6, 64, false, "--bytes", "4KiB", "--algo", "tree")
	if err == nil || !regexp.MustCompile(`job 6 needs \d+ buffers of 1 KiB, \d+ free`).MatchString(err.Error()) {
		t.Fatalf("oversized job: %v", err)
	}
	start := time.Now()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.done:
		d.done <- err
		if err != nil {
			t.Fatalf("switch exited with %v after SIGTERM\n%s", err, d.log)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("switch still running 5 s after SIGTERM")
	}
	t.Logf("SIGTERM to exit: %v", time.Since(start))
}

// flareRows runs the flare binary and reads its output, one JSON object
// per line, failing the test if it fails.
func flareRows[T any](t *testing.T, args ...string) []T {
	t.Helper()
	start := time.Now()
	out, err := exec.Command(flareBin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("flare %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("flare %s: %v", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	var rows []T
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r T
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		rows = append(rows, r)
	}
	return rows
}

// flare bench runs the four paths with one process per rank (the ring
// over --peers) and reports every row with its ratios.
func TestE2EBench(t *testing.T) {
	rows := flareRows[bench.Row](t, "bench", "--ranks", "3", "--bytes", "100000", "--iters", "2", "--warmup", "1", "--json")
	if len(rows) != 4 {
		t.Fatalf("%d rows, want switch, ring, relay and fanout: %+v", len(rows), rows)
	}
	for i, want := range []string{"switch", "ring", "relay", "fanout"} {
		r := rows[i]
		if r.Path != want || r.Ranks != 3 || r.Bytes != 100000 || r.MedianS <= 0 || r.VsRing <= 0 || r.OfRelay <= 0 || r.OfFanout <= 0 {
			t.Errorf("row %d: %+v, want path %s with times and ratios", i, r, want)
		}
		if r.Verified != (want == "switch" || want == "ring") {
			t.Errorf("row %s: verified %v", want, r.Verified)
		}
		if wantBus := r.AlgbwGBps * 2 * 2 / 3; r.AlgbwGBps <= 0 || math.Abs(r.BusbwGBps-wantBus) > 1e-9*wantBus {
			t.Errorf("row %s: busbw %v GB/s, want algbw %v × 2(P-1)/P = %v", want, r.BusbwGBps, r.AlgbwGBps, wantBus)
		}
	}
	if rows[1].VsRing != 1 || rows[2].OfRelay != 1 || rows[3].OfFanout != 1 {
		t.Errorf("a path's ratio to itself is not 1: ring vs_ring %v, relay of_relay %v, fanout of_fanout %v",
			rows[1].VsRing, rows[2].OfRelay, rows[3].OfFanout)
	}
	if rows[2].Algo != "echo" || rows[3].Algo != "fan-out" {
		t.Errorf("relay rows' algo %q, %q: want echo, fan-out", rows[2].Algo, rows[3].Algo)
	}
}

// flare version names the commit the binary was built from.
func TestE2EVersion(t *testing.T) {
	out, err := exec.Command(flareBin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("flare version: %v\n%s", err, out)
	}
	head, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		t.Skipf("no git checkout to compare with: %v", err)
	}
	if fi, err := os.Stat(repoFile(".git")); err != nil || !fi.IsDir() {
		t.Skip("a git worktree or submodule checkout: go build does not stamp the commit there")
	}
	if want := "commit " + strings.TrimSpace(string(head)); !strings.Contains(string(out), want) || !strings.HasPrefix(string(out), "flare ") {
		t.Errorf("flare version = %q, want it to name %q", out, want)
	}
}

// Every subcommand has --help with its flags and examples, exit 0.
func TestHelp(t *testing.T) {
	for name := range commands() {
		var out strings.Builder
		if err := run(context.Background(), []string{name, "--help"}, &out, io.Discard); err != nil && !errors.Is(err, pflag.ErrHelp) {
			t.Errorf("flare %s --help: %v", name, err)
		}
		if s := out.String(); !strings.Contains(s, "usage: flare "+name) || !strings.Contains(s, "examples:\n  flare "+name) {
			t.Errorf("flare %s --help lacks its usage or examples:\n%s", name, s)
		}
	}
	// The flags come in the order the command gives them, the switch's
	// address first, not sorted.
	var out strings.Builder
	run(context.Background(), []string{"allreduce", "--help"}, &out, io.Discard)
	if s := out.String(); strings.Index(s, "--switch") > strings.Index(s, "--algo") {
		t.Errorf("flare allreduce --help sorts its flags:\n%s", s)
	}
}

// Bad flags name the flag and the allowed range.
func TestFlagErrors(t *testing.T) {
	t.Setenv(tokenEnv, "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"switch", "--clusters", "0"}, "--clusters 0: must be in 1..1024"},
		{[]string{"switch", "--cores", "300"}, "--cores 300: must be in 1..256"},
		{[]string{"switch", "--policy-s", "9"}, "--policy-s: policy S = 9: must be in 1..8"},
		{[]string{"switch", "--listen", "nowhere"}, "--listen \"nowhere\": want HOST:PORT"},
		{[]string{"switch", "--l1", "lots"}, "--l1: size \"lots\""},
		{[]string{"allreduce", "--ranks", "2", "--dtype", "int128"}, "--dtype: unknown dtype \"int128\""},
		{[]string{"allreduce", "--ranks", "2", "--dtype", "float32", "--op", "xor"}, "--op:"},
		{[]string{"allreduce", "--ranks", "2", "--algo", "multi99"}, "--algo \"multi99\""},
		{[]string{"allreduce", "--rank", "3", "--world", "2"}, "--rank 3 with --world 2: world must be in 1..65535 and rank in 0..world-1"},
		{[]string{"allreduce", "--rank", "0", "--world", "2"}, "--rank 0: no job token. Every rank of the job must give the same secret: set it for all of them with\n  export FLARE_TOKEN=$(flare token)"},
		{[]string{"allreduce", "--rank", "0", "--world", "2", "--token", "0xz"}, "--token \"0xz\": want the job's 64-bit token, decimal or 0x-hex"},
		{[]string{"token", "extra"}, "token: takes no arguments (see 'flare token --help')"},
		{[]string{"allreduce", "--ranks", "2", "--op", "nand"}, "--op: unknown op \"nand\""},
		{[]string{"nosuch"}, "unknown command \"nosuch\""},
		{[]string{"alreduce"}, "did you mean \"allreduce\""},
		{[]string{"allreduce", "--ranks", "2", "--deadline", "1500us"}, "--deadline 1.5ms: must be whole milliseconds"},
		{[]string{"allreduce", "--ranks", "2", "--deadline", "5ms", "--algo", "tree"}, "bounded time works with the dense single-buffer design"},
		{[]string{"allreduce", "--ranks", "2", "--sparse", "--density", "2"}, "--density 2: must be in (0, 1]"},
		{[]string{"allreduce", "--ranks", "2", "--sparse", "--op", "prod"}, "must be sum, min or max"},
		{[]string{"switch", "--windw", "8"}, "unknown flag --windw; did you mean --window?"},
		{[]string{"bench", "--rank", "8"}, "did you mean --ranks?"},
		{[]string{"allreduce", "--zzzzzz"}, "unknown flag --zzzzzz (see 'flare allreduce --help')"},
		{[]string{"bench", "--paths", "switch,mpi"}, "--paths \"mpi\""},
		{[]string{"bench", "--ranks", "0"}, "--ranks 0: must be in 1..1024"},
		{[]string{"bench", "--algo", "ring"}, "--algo ring"},
		{[]string{"allreduce", "--rank", "0", "--world", "2", "--algo", "ring"}, "give --peers with 2 addresses"},
		{[]string{"switch", "--local-hosts", "2"}, "--local-hosts 2 without --children"},
		{[]string{"switch", "--children", "65000", "--local-hosts", "1000"}, "--local-hosts 1000: must be in 0..536"},
		{[]string{"allreduce", "--ranks", "5", "--switch", "127.0.0.1:1=2,127.0.0.1:2=2"}, "the =N counts add up to 4 ranks, want 5"},
		{[]string{"allreduce", "--ranks", "4", "--switch", "127.0.0.1:1=2,127.0.0.1:2"}, "give =N on every entry or on none"},
		{[]string{"allreduce", "--ranks", "4", "--switch", "127.0.0.1:1=0,127.0.0.1:2=4"}, "=N must be a rank count >= 1"},
		{[]string{"allreduce", "--ranks", "2", "--iters", "0"}, "--iters 0 with --warmup 2: want iters >= 1 and warmup >= 0"},
		{[]string{"allreduce", "--ranks", "2", "--count", "-1"}, "--count -1: must be in 1..1073741824 elements"},
		{[]string{"allreduce", "--ranks", "2", "--tail-ratio", "200"}, "--tail-ratio 200 with --tail-median 2ms: want a ratio in 1..100"},
		{[]string{"switch", "--max-jobs", "70000"}, "--max-jobs 70000: must be in 1..65536"},
		{[]string{"switch", "--window", "-1"}, "--window -1: must be in 0..65536 (0: sized by the packet size and the members)"},
		{[]string{"switch", "--steer-run", "48"}, "--steer-run 48: must be a power of two in 1..1024 blocks"},
		// 0 is the Config's "default" for these; on the command line it is
		// refused (before the --listen that would fail New, not serve, if it were not).
		{[]string{"switch", "--max-jobs", "0", "--listen", "x"}, "--max-jobs 0: must be in 1..65536"},
		{[]string{"switch", "--join-rate", "0", "--listen", "x"}, "--join-rate 0: must be in 1..1000000 per second"},
		{[]string{"switch", "--join-timeout", "0", "--listen", "x"}, "--join-timeout 0s: must be in 100ms..1h"},
		{[]string{"switch", "--job-idle", "0s", "--listen", "x"}, "--job-idle 0s: must be in 1s..24h"},
		{[]string{"switch", "--packet", "0", "--listen", "x"}, "--packet 0: must be a multiple of 8 in 8..8192 bytes"},
		{[]string{"switch", "--pcap-max", "0B", "--listen", "x"}, "--pcap-max 0B: must be in 1KiB..1TiB"},
		{[]string{"switch", "--queue", "0", "--listen", "x"}, "--queue 0: must be in 1..65536"},
		{[]string{"switch", "--max-pending", "9", "--max-jobs", "4"}, "--max-pending 9: must be in 1..4 (--max-jobs)"},
		{[]string{"switch", "--batch", "-1"}, "--batch: batch size = -1: must be in 1..1024"},
		{[]string{"switch", "--busy-poll", "20ms"}, "--busy-poll: busy poll = 20ms: must be in 0..10ms"},
		{[]string{"allreduce", "--ranks", "2", "--busy-poll", "-1us"}, "--busy-poll -1µs: must be in 0..10ms"},
		{[]string{"bench", "--busy-poll", "11ms"}, "--busy-poll 11ms: must be in 0..10ms"},
		{[]string{"switch", "--child-index", "3"}, "--child-index 3 without --parent"},
		{[]string{"switch", "--admission", "closed"}, "--admission \"closed\": want open or registered"},
		{[]string{"switch", "--admission", "registered", "--admin", "off"}, "--admission registered with --admin off"},
		{[]string{"bench", "--iters", "0"}, "--iters 0 with --warmup 1: want iters >= 1 and warmup >= 0"},
		{[]string{"bench", "--bytes", "2GiB"}, "--bytes 2GiB: must be in 4..1GiB"},
		{[]string{"bench", "--tree", "1x4"}, "--tree \"1x4\": TreeShape.Leaves = 1: must be in 2..65536"},
		{[]string{"demo", "--ranks", "0"}, "--ranks 0: must be in 1..1024"},
	} {
		err := run(context.Background(), tc.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("flare %s: %v, want %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

// A size is a count of bytes, with binary or decimal units; a negative
// one, a doubled unit, and one whose bytes would not fit an int64 (which
// would wrap: 2^44 + 1 MiB is 1 MiB past 2^64) are refused.
func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1000": 1000, "64KiB": 64 << 10, "16MiB": 16 << 20, "1GiB": 1 << 30, "2KB": 2000,
		"3MB": 3e6, "5GB": 5e9, " 4 KiB ": 4096, "7B": 7, "8589934591GiB": 8589934591 << 30, "9223372036854775807": math.MaxInt64} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"-1", "1BKB", "8589934592GiB", "17592186044417MiB", "9223372036854775808"} {
		if got, err := parseSize(in); err == nil || !strings.Contains(err.Error(), "under 8EiB") {
			t.Errorf("parseSize(%q) = %d, %v; want it refused", in, got, err)
		}
	}
}

// The commands' names, as listed and as suggestions are sought among
// them, come in order.
func TestSortedKeys(t *testing.T) {
	m := map[string]int{"switch": 1, "allreduce": 2, "model": 3, "bench": 4, "token": 5}
	for range 10 {
		if got := sortedKeys(m); !slices.Equal(got, []string{"allreduce", "bench", "model", "switch", "token"}) {
			t.Fatalf("sortedKeys = %v", got)
		}
	}
}

// syncBuffer collects the daemon's log; the process's copier writes while
// a failing test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
