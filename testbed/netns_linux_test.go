package testbed

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// skipWithoutNetns skips where namespaces cannot be made: not root, or
// no ip.
func skipWithoutNetns(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("ip not installed (Debian package iproute2)")
	}
}

// addTestNS makes namespace name, deleted when the test ends if still there.
func addTestNS(t *testing.T, name string) {
	t.Helper()
	if err := ipIn("", "netns", "add", name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = DeleteNamespace(name) })
}

// The sweep deletes only its kind's namespaces whose process is gone:
// never this process's, a live process's, or a name not of the form.
func TestSweepStale(t *testing.T) {
	skipWithoutNetns(t)
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	kind := "flaretbsweep" + strconv.Itoa(os.Getpid()) + "-"
	deadRun := kind + strconv.Itoa(done.Process.Pid)
	dead := []string{deadRun + "-1-h0", deadRun + "-1-sw", deadRun + "-2-h0"}
	kept := []string{kind + strconv.Itoa(os.Getpid()) + "-1-h0", kind + "1-1-h0", kind + "x-1-h0", deadRun + "-h0"}
	// Named as a dead run's, but not of this kind: neither swept nor listed.
	other := "x" + dead[0]
	for _, n := range append(append([]string{other}, dead...), kept...) {
		addTestNS(t, n)
	}
	gone := SweepStale(kind)
	slices.Sort(gone)
	slices.Sort(dead)
	if !slices.Equal(gone, dead) {
		t.Errorf("swept %v, want %v", gone, dead)
	}
	left, err := Namespaces(kind)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(left)
	slices.Sort(kept)
	if !slices.Equal(left, kept) {
		t.Errorf("left %v, want %v", left, kept)
	}
	if o, err := Namespaces(other); err != nil || !slices.Equal(o, []string{other}) {
		t.Errorf("%s: listed as %v, %v", other, o, err)
	}
}

// Deleting a namespace ends what runs in it; deleting one that is not
// there says which.
func TestDeleteNamespace(t *testing.T) {
	skipWithoutNetns(t)
	name := "flaretbdel" + strconv.Itoa(os.Getpid())
	addTestNS(t, name)
	cmd := commandIn(context.Background(), name, "sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	for deadline := time.Now().Add(5 * time.Second); ; {
		out, _ := exec.Command("ip", "netns", "pids", name).Output()
		if len(strings.Fields(string(out))) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("sleep never ran in the namespace")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := DeleteNamespace(name); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-waited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != -1 {
			t.Errorf("the process in the namespace ended with %v, want killed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the process in the deleted namespace still runs")
	}
	if left, err := Namespaces(name); err != nil || len(left) > 0 {
		t.Errorf("after delete: %v, %v", left, err)
	}
	if err := DeleteNamespace(name); err == nil || !strings.Contains(err.Error(), "ip netns delete "+name) {
		t.Errorf("deleting it again: %v, want an error naming it", err)
	}
}
