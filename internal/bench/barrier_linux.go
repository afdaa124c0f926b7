package bench

import (
	"fmt"
	"io"
	"os"
	"syscall"
	"unsafe"
)

// The barrier's pipes are read and written with raw system calls, waiting
// in the runtime's poller while a pipe is empty. A read or write through
// os.File enters the runtime's system-call path (entersyscall), and that
// path wakes sysmon when it sleeps deeply, as it does while a process's
// every P is idle: in each rank and in the parent, at every call's
// barrier. sysmon then ticks every 20 µs for a millisecond and backs off
// over the next ten, and on a box whose CPUs the ranks and the switch
// share, each tick takes a CPU from them: about 150 wake-ups a call at
// P = 8, 1 MiB (docs/PERFORMANCE.md). That is the harness's cost, not the
// path's, and the host-based peers' barriers do not pay it.

// pipeFile opens inherited descriptor fd non-blocking, so that a read
// through pipe waits for it in the poller. (os/exec hands a child its
// extra files blocking.)
func pipeFile(fd int, name string) (*os.File, error) {
	if err := syscall.SetNonblock(fd, true); err != nil {
		return nil, fmt.Errorf("%s (descriptor %d): %w", name, fd, err)
	}
	return os.NewFile(uintptr(fd), name), nil
}

// pipe is f read and written with raw system calls.
func pipe(f *os.File) io.ReadWriter { return rawPipe{f} }

type rawPipe struct{ f *os.File }

// Read is one read: io.EOF once the other end is closed.
func (p rawPipe) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, err := rawIO(p.f, syscall.SYS_READ, b)
	if err == nil && n == 0 {
		return 0, io.EOF
	}
	return n, err
}

// Write writes the whole of b, or fails.
func (p rawPipe) Write(b []byte) (int, error) {
	done := 0
	for done < len(b) {
		n, err := rawIO(p.f, syscall.SYS_WRITE, b[done:])
		if err != nil {
			return done, err
		}
		done += n
	}
	return done, nil
}

// rawIO makes one read or write (trap) of b on f, waiting in the poller
// until f is ready.
func rawIO(f *os.File, trap uintptr, b []byte) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n uintptr
	var errno syscall.Errno
	do := func(fd uintptr) bool {
		n, _, errno = syscall.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		return errno != syscall.EAGAIN
	}
	if trap == syscall.SYS_READ {
		err = rc.Read(do)
	} else {
		err = rc.Write(do)
	}
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, errno
	}
	return int(n), nil
}
