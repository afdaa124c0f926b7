package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A daemon's --cpuprofile holds a whole profile once it stops on SIGTERM,
// as systemd and tools/pgo-profile.sh stop it.
func TestSwitchCPUProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "switch.prof")
	d := startDaemon(t, "--cpuprofile", path)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := allreduce(ctx, t, d, 1, 2, false, "--bytes", "1MiB"); err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.done:
		d.done <- err // for the cleanup's wait
		if err != nil {
			t.Fatalf("switch did not stop cleanly: %v\n%s", err, d.log)
		}
	case <-ctx.Done():
		t.Fatal("switch did not stop on SIGTERM")
	}
	checkProfile(t, path)
}

// make pgo's script collects and merges its profiles: a short run of it
// against the binary under test.
func TestPGOProfileScript(t *testing.T) {
	out := filepath.Join(t.TempDir(), "default.pgo")
	cmd := exec.Command("../../tools/pgo-profile.sh", flareBin, out)
	cmd.Env = append(os.Environ(), "PGO_ITERS=1", "PGO_BYTES=256KiB") // on ports the daemon binds itself
	got, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tools/pgo-profile.sh: %v\n%s", err, got)
	}
	if !strings.Contains(string(got), "from 34 profiles") { // 2 daemons and 4 runs of 8 ranks
		t.Errorf("tools/pgo-profile.sh merged another number of profiles:\n%s", got)
	}
	checkProfile(t, out)
	top, err := exec.Command("go", "tool", "pprof", "-top", out).CombinedOutput()
	if err != nil || !strings.Contains(string(top), "Type: cpu") {
		t.Fatalf("go tool pprof cannot read the merged profile: %v\n%s", err, top)
	}
}

// checkProfile fails unless path holds a gzipped, non-empty pprof profile.
func checkProfile(t *testing.T, path string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s is not a pprof profile (gzip): %v", path, err)
	}
	body, err := io.ReadAll(zr)
	if err != nil || len(body) == 0 {
		t.Fatalf("%s: %d bytes of profile, %v", path, len(body), err)
	}
}
