package testbed

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc's CPU times (100 on every
// Linux architecture Go supports).
const clockTicks = 100

// cpuSnap is the machine's CPU time and some processes' at one moment.
type cpuSnap struct {
	at        time.Time
	busy, all float64            // ticks, summed over every CPU
	procTicks map[int]float64    // utime + stime by pid
	taskTicks map[string]float64 // and by pid/tid, every thread of those
}

// takeCPU reads /proc/stat's cpu line and each pid's /proc/PID/stat.
func takeCPU(pids []int) cpuSnap {
	s := cpuSnap{at: time.Now(), procTicks: map[int]float64{}, taskTicks: map[string]float64{}}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
		for i, v := range f[1:] {
			n, _ := strconv.ParseFloat(v, 64)
			if i >= 8 { // guest and guest_nice are already in user and nice
				break
			}
			s.all += n
			if i != 3 && i != 4 { // idle, iowait
				s.busy += n
			}
		}
	}
	for _, pid := range pids {
		dir := "/proc/" + strconv.Itoa(pid)
		if t, ok := statTicks(dir + "/stat"); ok {
			s.procTicks[pid] = t
		}
		tasks, _ := os.ReadDir(dir + "/task")
		for _, task := range tasks {
			if t, ok := statTicks(dir + "/task/" + task.Name() + "/stat"); ok {
				s.taskTicks[strconv.Itoa(pid)+"/"+task.Name()] = t
			}
		}
	}
	return s
}

// statTicks is utime + stime of a /proc stat file.
func statTicks(path string) (float64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	// The fields after the command name, which may hold spaces and
	// parentheses: it ends at the line's last ")" (proc(5)).
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:]) // state ppid ... utime (12th) stime (13th) from here
	if len(f) <= 12 {
		return 0, false
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return u + st, true
}

// cpuUse is the machine's busy share between two snapshots, the most CPU
// seconds per second any one of the processes used, and any one thread
// of theirs (a daemon bound by one thread, its reader, shows there while
// the process as a whole uses less than a CPU).
func cpuUse(a, b cpuSnap) (busy, maxProc, maxThread float64) {
	if d := b.all - a.all; d > 0 {
		busy = (b.busy - a.busy) / d
	}
	wall := b.at.Sub(a.at).Seconds()
	if wall <= 0 {
		return busy, 0, 0
	}
	for pid, t := range b.procTicks {
		if t0, ok := a.procTicks[pid]; ok {
			maxProc = max(maxProc, (t-t0)/clockTicks/wall)
		}
	}
	for id, t := range b.taskTicks {
		if t0, ok := a.taskTicks[id]; ok {
			maxThread = max(maxThread, (t-t0)/clockTicks/wall)
		}
	}
	return busy, maxProc, maxThread
}

// BoxBusy is the machine's busy share (0..1, all CPUs) over the next
// window: what other processes leave a run to be timed in.
func BoxBusy(window time.Duration) float64 {
	a := takeCPU(nil)
	time.Sleep(window)
	busy, _, _ := cpuUse(a, takeCPU(nil))
	return busy
}
