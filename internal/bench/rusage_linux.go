package bench

import (
	"syscall"
	"unsafe"
)

// getrusage is syscall.Getrusage(RUSAGE_SELF, ru) as a raw system call:
// every rank reads it around every call, where the runtime's system-call
// path would wake sysmon (barrier_linux.go).
func getrusage(ru *syscall.Rusage) error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_GETRUSAGE, syscall.RUSAGE_SELF, uintptr(unsafe.Pointer(ru)), 0); errno != 0 {
		return errno
	}
	return nil
}
