package bench

import (
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"
)

// A rank inherits its barrier ends blocking, as os/exec hands them over;
// barrierFromEnv makes them non-blocking, so that a wait for the parent's
// byte is spent in the poller, not in a read the runtime must see
// (barrier_linux.go). The byte still arrives when it is written late, a
// closed parent reads as an error, and a write to a parent that closed
// its end fails instead of killing the rank.
func TestBarrierPipesInheritedBlocking(t *testing.T) {
	var release, ready [2]int
	if err := syscall.Pipe(release[:]); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Pipe(ready[:]); err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, fd := range []int{release[1], ready[0]} {
			if fd >= 0 {
				syscall.Close(fd)
			}
		}
	}()
	t.Setenv(barrierEnv, fmt.Sprintf("%d,%d", release[0], ready[1]))
	b, err := barrierFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	defer b.release.Close()
	defer b.ready.Close()
	for _, f := range []int{release[0], ready[1]} {
		flags, err := fcntlFlags(f)
		if err != nil {
			t.Fatal(err)
		}
		if flags&syscall.O_NONBLOCK == 0 {
			t.Errorf("descriptor %d still blocking (flags %#x)", f, flags)
		}
	}

	go func() {
		time.Sleep(20 * time.Millisecond) // the rank is waiting by now
		syscall.Write(release[1], []byte{1})
	}()
	if err := b.wait(); err != nil { // ready, then the late release
		t.Fatalf("wait: %v", err)
	}
	var got [2]byte
	if n, err := syscall.Read(ready[0], got[:]); n != 1 || err != nil {
		t.Fatalf("the parent read %d bytes of the rank's ready (%v), want 1", n, err)
	}

	syscall.Close(release[1])
	release[1] = -1
	if err := b.wait(); !errors.Is(err, io.EOF) {
		t.Errorf("wait on a parent that ended: %v, want end of file", err)
	}
	syscall.Close(ready[0])
	ready[0] = -1
	if err := b.finish(); !errors.Is(err, syscall.EPIPE) {
		t.Errorf("ready to a parent that ended: %v, want EPIPE", err)
	}
}

func fcntlFlags(fd int) (int, error) {
	r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}
