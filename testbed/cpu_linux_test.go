package testbed

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// utime + stime of a /proc stat line, the command name read to its last
// ")" whatever it holds; a file that is not one reads as not there.
func TestStatTicks(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		line string
		want float64
		ok   bool
	}{
		{"42 (flare) S 1 42 42 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 8 0\n", 325, true},
		{"42 (a b) c) (d) R 1 42 42 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0\n", 10, true},
		{"42 (flare) S 1 42 42 0 -1 4194560 100 0 0 0 250\n", 0, false},
		{"42 flare S 1 42 42 0 -1 4194560 100 0 0 0 250 75 0 0\n", 0, false},
	} {
		path := filepath.Join(dir, "stat")
		if err := os.WriteFile(path, []byte(tc.line), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, ok := statTicks(path); got != tc.want || ok != tc.ok {
			t.Errorf("statTicks(%q) = %g, %v, want %g, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := statTicks(filepath.Join(dir, "none")); ok {
		t.Error("a missing file read")
	}
}

// Between two snapshots: the machine's busy share of all its ticks, and
// the most CPU seconds per second of any process and of any thread seen
// in both.
func TestCPUUse(t *testing.T) {
	t0 := time.Unix(100, 0)
	a := cpuSnap{at: t0, busy: 1000, all: 4000,
		procTicks: map[int]float64{1: 100, 2: 500},
		taskTicks: map[string]float64{"1/1": 50, "1/3": 50, "2/2": 500}}
	b := cpuSnap{at: t0.Add(2 * time.Second), busy: 1300, all: 4400,
		procTicks: map[int]float64{1: 250, 2: 600, 9: 10000},
		taskTicks: map[string]float64{"1/1": 60, "1/3": 190, "2/2": 600, "9/9": 10000}}
	busy, proc, thread := cpuUse(a, b)
	if busy != 0.75 || proc != 0.75 || thread != 0.7 {
		t.Errorf("cpuUse = %g, %g, %g, want 0.75, 0.75, 0.7", busy, proc, thread)
	}
	b.at = t0
	if busy, proc, thread := cpuUse(a, b); busy != 0.75 || proc != 0 || thread != 0 {
		t.Errorf("no time between: %g, %g, %g, want the machine's share only", busy, proc, thread)
	}
	if busy, _, _ := cpuUse(a, a); busy != 0 {
		t.Errorf("no ticks between: busy %g", busy)
	}
}

// A snapshot of this process: the machine's ticks (busy fewer than all),
// this process's and each of its threads', keyed pid/tid.
func TestTakeCPU(t *testing.T) {
	end := time.Now().Add(30 * time.Millisecond)
	for time.Now().Before(end) { // some CPU time to read
	}
	pid := os.Getpid()
	s := takeCPU([]int{pid})
	if !(s.all > 0 && s.busy > 0 && s.busy < s.all) {
		t.Errorf("machine ticks: busy %g of %g", s.busy, s.all)
	}
	if _, ok := s.procTicks[pid]; !ok || len(s.procTicks) != 1 {
		t.Errorf("processes %v, want this one's", s.procTicks)
	}
	if _, ok := s.taskTicks[strconv.Itoa(pid)+"/"+strconv.Itoa(pid)]; !ok {
		t.Errorf("threads %v, want the main thread's as %d/%d", s.taskTicks, pid, pid)
	}
	sum := 0.0
	for _, v := range s.taskTicks {
		sum += v
	}
	// A thread's ticks are the process's too (read a moment apart: a
	// tick each at most); an ended thread's stay only the process's.
	if sum < 1 || sum > s.procTicks[pid]+float64(len(s.taskTicks)) {
		t.Errorf("threads' ticks sum to %g, the process's %g", sum, s.procTicks[pid])
	}
}

// A goroutine spinning on each CPU through the window keeps the box
// busy: at least half of it, whatever else runs.
func TestBoxBusy(t *testing.T) {
	var stop atomic.Bool
	for range runtime.NumCPU() {
		go func() {
			for !stop.Load() {
			}
		}()
	}
	busy := BoxBusy(300 * time.Millisecond)
	stop.Store(true)
	if busy < 0.5 || busy > 1 {
		t.Errorf("busy %.2f with every CPU spinning, want 0.5..1", busy)
	}
}
