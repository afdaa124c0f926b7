package xcpu

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Between two CPUs a line moves in tens to hundreds of nanoseconds; a
// value outside 1 ns..50 µs is a broken measurement, not a slow machine
// (the trials' minimum leaves another process's preemption out).
func TestLineTransfer(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: nothing to measure between")
	}
	d, err := LineTransfer()
	if errors.Is(err, unix.EPERM) {
		t.Skipf("the machine refuses to pin a thread to a CPU: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if d < time.Nanosecond || d > 50*time.Microsecond {
		t.Errorf("a line moved in %v, want 1 ns..50 µs", d)
	}
	t.Logf("a cache line between two CPUs: %v", d)
}

// With one CPU to run on, there is nothing to measure, and it says so
// rather than spinning against itself; where GOMAXPROCS is 1 it measures
// and leaves GOMAXPROCS at 1.
func TestLineTransferOneCPU(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU")
	}
	errc := make(chan error, 1)
	go func() {
		// A thread of one CPU; the goroutine ends locked, and its thread
		// with it, rather than going back to the runtime pinned.
		runtime.LockOSThread()
		var one unix.CPUSet
		one.Set(0)
		if err := unix.SchedSetaffinity(0, &one); err != nil {
			errc <- err
			return
		}
		_, err := LineTransfer()
		errc <- err
	}()
	err := <-errc
	if errors.Is(err, unix.EPERM) {
		t.Skipf("the machine refuses to pin a thread to a CPU: %v", err)
	}
	if !errors.Is(err, ErrOneCPU) {
		t.Errorf("a thread of one CPU: %v, want ErrOneCPU", err)
	}

	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	if d, err := LineTransfer(); err != nil || d <= 0 {
		t.Errorf("GOMAXPROCS=1: %v, %v; want a measurement", d, err)
	}
	if p := runtime.GOMAXPROCS(0); p != 1 {
		t.Errorf("GOMAXPROCS after: %d, want 1", p)
	}
}
