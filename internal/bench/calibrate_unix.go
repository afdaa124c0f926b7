//go:build unix

package bench

import (
	"syscall"
	"time"
)

// ProcessCPU is the CPU time this process has used, user and system.
func ProcessCPU() (time.Duration, bool) {
	t, ok := processTimes()
	return t.user + t.sys, ok
}

// processTimes is the CPU time this process has used, user and system
// apart.
func processTimes() (cpuTimes, bool) {
	var ru syscall.Rusage
	if err := getrusage(&ru); err != nil {
		return cpuTimes{}, false
	}
	return cpuTimes{user: time.Duration(ru.Utime.Nano()), sys: time.Duration(ru.Stime.Nano())}, true
}
