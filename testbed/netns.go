package testbed

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// RunPrefix is a namespace-name prefix unique to this process and call:
// KIND + PID + "-" + SEQ + "-". Every namespace of one run starts with it,
// so a run's teardown, a test's leak check (Namespaces) and the sweep of
// an aborted run's leftovers (SweepStale) all find them by name.
func RunPrefix(kind string, seq int64) string {
	return fmt.Sprintf("%s%d-%d-", kind, os.Getpid(), seq)
}

// Namespaces lists the named network namespaces whose names start with
// prefix.
func Namespaces(prefix string) ([]string, error) {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return nil, fmt.Errorf("ip netns list: %w", err)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], prefix) {
			names = append(names, f[0])
		}
	}
	return names, nil
}

// DeleteNamespace kills what still runs in the namespace (never this
// process, whose thread may be visiting it) and deletes it; its veth ends
// go with it, and their peers.
func DeleteNamespace(name string) error {
	if pids, err := exec.Command("ip", "netns", "pids", name).Output(); err == nil {
		for _, p := range strings.Fields(string(pids)) {
			if pid, err := strconv.Atoi(p); err == nil && pid != os.Getpid() {
				if proc, err := os.FindProcess(pid); err == nil {
					_ = proc.Kill()
				}
			}
		}
	}
	if out, err := exec.Command("ip", "netns", "delete", name).CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns delete %s: %v: %s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}
