package testbed

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// NetnsDir is where `ip netns` keeps its named namespaces.
const NetnsDir = "/var/run/netns"

// SweepStale deletes the namespaces an aborted earlier run of kind left
// (named KIND PID-..., see RunPrefix) whose process PID is gone, so a run
// in progress next to this one is never touched. It returns the names it
// deleted.
func SweepStale(kind string) []string {
	all, err := Namespaces(kind)
	if err != nil {
		return nil
	}
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(kind) + `(\d+)-\d+-\S+$`)
	var gone []string
	for _, name := range all {
		m := re.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		if pid == os.Getpid() || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue
		}
		if DeleteNamespace(name) == nil {
			gone = append(gone, name)
		}
	}
	return gone
}

// DialIn opens a connection from inside namespace ns: a goroutine locked
// to its OS thread enters the namespace, dials, and returns its thread to
// the namespace it came from; the socket stays in ns whichever thread uses
// it afterwards. Should the way back fail, the thread stays locked and the
// runtime ends it with the goroutine rather than reuse a thread in a
// foreign namespace.
func DialIn(ctx context.Context, ns, network, addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		c, err := dialFromThread(ctx, ns, network, addr)
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

// dialFromThread runs on a locked thread: it unlocks it only once the
// thread is back in its own namespace.
func dialFromThread(ctx context.Context, ns, network, addr string) (net.Conn, error) {
	home, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer home.Close()
	into, err := os.Open(NetnsDir + "/" + ns)
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer into.Close()
	if err := unix.Setns(int(into.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("entering namespace %s: %w", ns, err)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if unix.Setns(int(home.Fd()), unix.CLONE_NEWNET) == nil {
		runtime.UnlockOSThread()
	}
	return c, err
}

// ipIn runs `ip -n NS args...` (ns empty: the root namespace).
func ipIn(ns string, args ...string) error {
	if ns != "" {
		args = append([]string{"-n", ns}, args...)
	}
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// execIn runs a command inside namespace ns and returns its output.
func execIn(ns string, args ...string) ([]byte, error) {
	out, err := exec.Command("ip", append([]string{"netns", "exec", ns}, args...)...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("in namespace %s: %s: %v: %s", ns, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return out, nil
}

// commandIn is a command that runs inside namespace ns (ip netns exec
// execs it, so the process is the command itself).
func commandIn(ctx context.Context, ns string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns}, args...)...)
}
