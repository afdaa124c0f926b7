//go:build unix

package swtch_test

import "syscall"

// processCPU is the CPU time this process has used (user and system), in
// nanoseconds, or -1 where it cannot be read. On a shared machine the CPU
// a packet costs is steadier than the wall-clock time, which other users'
// processes stretch.
func processCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return -1
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
