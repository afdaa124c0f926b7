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
	var m int64
	if unix.Sysinfo(&si) == nil {
		m = int64(si.Totalram) * int64(si.Unit)
	}
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && (m == 0 || n < m) {
			m = n // "max" (no limit) does not parse
		}
	}
	return m
}
