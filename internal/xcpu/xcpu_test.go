package xcpu

import (
	"errors"
	"runtime"
	"testing"
	"time"
)

// Between two CPUs a line moves in tens to hundreds of nanoseconds; a
// value outside 1 ns..50 µs is a broken measurement, not a slow machine
// (the trials' minimum leaves another process's preemption out).
func TestLineTransfer(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: nothing to measure between")
	}
	d, err := LineTransfer()
	if err != nil {
		t.Fatal(err)
	}
	if d < time.Nanosecond || d > 50*time.Microsecond {
		t.Errorf("a line moved in %v, want 1 ns..50 µs", d)
	}
	t.Logf("a cache line between two CPUs: %v", d)
}

// With one CPU to run on, there is nothing to measure, and it says so
// rather than spinning against itself.
func TestLineTransferOneCPU(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	if _, err := LineTransfer(); !errors.Is(err, ErrOneCPU) {
		t.Errorf("GOMAXPROCS=1: %v, want ErrOneCPU", err)
	}
}
