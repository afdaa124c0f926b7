//go:build unix && !linux

package bench

import "syscall"

// getrusage is this process's resource usage (rusage_linux.go).
func getrusage(ru *syscall.Rusage) error { return syscall.Getrusage(syscall.RUSAGE_SELF, ru) }
