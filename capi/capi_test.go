package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/internal/inproctest"
	"github.com/flare-net/flare/wire"
)

// TestCExample builds libflare.so, the flare binary and
// examples/c/allreduce.c, starts `flare switch` as its own process and runs
// the example as three rank processes. The example checks every result
// itself; this test checks that each rank passed every step and that the
// example covered exactly the (dtype, op) pairs the switch supports.
func TestCExample(t *testing.T) {
	example, flare := buildC(t, "../examples/c/allreduce.c")
	sw, stop := startSwitch(t, flare)
	defer stop()
	const world = 3
	outs := make([]bytes.Buffer, world)
	errs := make([]bytes.Buffer, world)
	cmds := make([]*exec.Cmd, world)
	for r := range world {
		cmds[r] = exec.Command(example, sw, "100", fmt.Sprint(r), fmt.Sprint(world))
		cmds[r].Stdout, cmds[r].Stderr = &outs[r], &errs[r]
		if err := cmds[r].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for r, c := range cmds {
		if err := waitTimeout(c, 3*time.Minute); err != nil {
			t.Errorf("rank %d: %v\nstdout:\n%s\nstderr:\n%s", r, err, &outs[r], &errs[r])
		}
	}
	if t.Failed() {
		return
	}
	want := supportedPairs()
	for r := range world {
		lines := okLines(outs[r].String())
		var pairs []string
		for _, l := range lines {
			if f := strings.Fields(l); len(f) == 2 {
				pairs = append(pairs, l)
			}
		}
		if !slices.Equal(pairs, want) {
			t.Errorf("rank %d reduced the pairs\n%v\nbut the switch supports\n%v", r, pairs, want)
		}
		for _, step := range []string{"undefined:", "sparse:", "refused:", "timeout:", "fork:", "all"} {
			if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, step) }) {
				t.Errorf("rank %d: no %q line in\n%s", r, step, &outs[r])
			}
		}
	}
	t.Logf("rank 0:\n%s", &outs[0])
}

// TestCChecks runs testdata/checks.c against `flare switch`: the C
// library's own checks of a caller's arguments (options a C type allows
// and hostlib's cannot hold, a call's count, dtype and op against the
// job's, NULL pointers, a dense call on a sparse job and the reverse,
// a closed handle, the contributors' capacity), each refused by name,
// leaving the buffer and the session as they were, and the last error
// cleared by the next call that succeeds.
func TestCChecks(t *testing.T) {
	checks, flare := buildC(t, "testdata/checks.c")
	sw, stop := startSwitch(t, flare)
	defer stop()
	cmd := exec.Command(checks, sw)
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := waitTimeout(cmd, time.Minute); err != nil {
		t.Errorf("checks: %v\n%s", err, &errs)
	}
	t.Logf("%s", &out)
	if n := len(okLines(out.String())); !t.Failed() && n < 26 {
		t.Errorf("%d checks passed, want all 26", n)
	}
}

// buildC builds libflare.so, the flare binary and the C program src
// against the library, in a directory of the test's, and returns the
// program's and flare's paths. It skips the test where there is no C
// compiler or cgo is off.
func buildC(t *testing.T, src string) (prog, flare string) {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skipf("gcc not found: cannot compile %s against libflare (apt-get install gcc)", src)
	}
	if out, err := exec.Command("go", "env", "CGO_ENABLED").Output(); err != nil || strings.TrimSpace(string(out)) != "1" {
		t.Skipf("cgo is disabled (go env CGO_ENABLED = %q, %v): libflare needs it (CGO_ENABLED=1)", strings.TrimSpace(string(out)), err)
	}
	dir := t.TempDir()
	lib := filepath.Join(dir, "libflare.so")
	flare = filepath.Join(dir, "flare")
	prog = filepath.Join(dir, strings.TrimSuffix(filepath.Base(src), ".c"))
	run(t, "go", "build", "-buildmode=c-shared", "-o", lib, ".")
	run(t, "go", "build", "-o", flare, "../cmd/flare")
	run(t, gcc, "-O2", "-Wall", "-Wextra", "-Werror", "-I.", "-o", prog, src, "-L"+dir, "-lflare", "-Wl,-rpath,"+dir)
	return prog, flare
}

// supportedPairs lists "dtype op" for every built-in op defined on every
// dtype, in the example's order.
func supportedPairs() []string {
	var out []string
	for _, dt := range wire.DTypes {
		for _, op := range wire.Ops {
			if _, err := elem.KernelFor(dt, op); err == nil {
				out = append(out, dt.String()+" "+op.String())
			}
		}
	}
	return out
}

// okLines returns the example's "ok ..." lines without the prefix.
func okLines(s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if l, ok := strings.CutPrefix(sc.Text(), "ok "); ok {
			out = append(out, l)
		}
	}
	return out
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func waitTimeout(c *exec.Cmd, d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		c.Process.Kill()
		<-done
		return fmt.Errorf("still running after %v (killed)", d)
	}
}

// startSwitch runs `flare switch` on loopback ports the kernel picks,
// reads them from its log (inproctest.DaemonAddrs), waits for its /healthz
// and returns its data address and a stop function.
func startSwitch(t *testing.T, flare string) (string, func()) {
	t.Helper()
	cmd := exec.Command(flare, "switch", "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0", "--l1", "4MiB")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The log, read to its end so that the switch never blocks writing it.
	var log strings.Builder
	logDone := make(chan struct{})
	addrs := make(chan [2]string, 1)
	go func() {
		defer close(logDone)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if data, admin, ok := inproctest.DaemonAddrs(sc.Text()); ok {
				select {
				case addrs <- [2]string{data, admin}:
				default:
				}
			}
		}
	}()
	stop := func() { cmd.Process.Kill(); cmd.Wait() }
	fail := func(what string) {
		stop()
		<-logDone
		t.Fatalf("switch %s after 10 s\n%s", what, log.String())
	}
	deadline := time.Now().Add(10 * time.Second)
	var data, admin string
	select {
	case m := <-addrs:
		data, admin = m[0], m[1]
	case <-time.After(time.Until(deadline)):
		fail("not listening")
	}
	for ; ; time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get("http://" + admin + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return data, stop
			}
		}
		if time.Now().After(deadline) {
			fail("not healthy")
		}
	}
}

// flare_version: the commit where the build recorded one, "(devel)"
// where it did not, "(unknown)" with no build information at all.
func TestVersion(t *testing.T) {
	built := &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}
	for _, tc := range []struct {
		bi   *debug.BuildInfo
		want string
	}{
		{built, "flare 0123456789ab-dirty"},
		{&debug.BuildInfo{}, "flare (devel)"},
		{nil, "flare (unknown)"},
	} {
		if got := version(tc.bi); got != tc.want {
			t.Errorf("version(%+v) = %q, want %q", tc.bi, got, tc.want)
		}
	}
}
