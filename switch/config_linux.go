//go:build linux

package swtch

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// machineMemory is the memory the daemon may use: the physical memory, or
// its cgroup's limit (cgroup v2 memory.max) when that is lower; 0 if
// unknown.
func machineMemory() int64 {
	var si unix.Sysinfo_t
	var physical int64
	if unix.Sysinfo(&si) == nil {
		physical = int64(si.Totalram) * int64(si.Unit)
	}
	memoryMax, _ := os.ReadFile("/sys/fs/cgroup/memory.max")
	return cgroupCapped(physical, string(memoryMax))
}

// cgroupCapped is the physical memory (0: unknown) or the cgroup's
// memory.max, whichever is lower; a memory.max of "max" (no limit), empty
// (no cgroup v2) or unreadable caps nothing.
func cgroupCapped(physical int64, memoryMax string) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(memoryMax), 10, 64)
	if err != nil || n <= 0 || (physical > 0 && n >= physical) {
		return physical
	}
	return n
}
