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
	busy, all float64         // ticks, summed over every CPU
	procTicks map[int]float64 // utime + stime by pid
}

// takeCPU reads /proc/stat's cpu line and each pid's /proc/PID/stat.
func takeCPU(pids []int) cpuSnap {
	s := cpuSnap{at: time.Now(), procTicks: map[int]float64{}}
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
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command name (which may hold spaces) in ")".
		_, rest, ok := strings.Cut(string(b), ") ")
		if !ok {
			continue
		}
		f := strings.Fields(rest) // state ppid ... utime(12th) stime(13th) from here
		if len(f) > 12 {
			u, _ := strconv.ParseFloat(f[11], 64)
			st, _ := strconv.ParseFloat(f[12], 64)
			s.procTicks[pid] = u + st
		}
	}
	return s
}

// cpuUse is the machine's busy share between two snapshots and the most
// CPU seconds per second any one of the processes used.
func cpuUse(a, b cpuSnap) (busy, maxProc float64) {
	if d := b.all - a.all; d > 0 {
		busy = (b.busy - a.busy) / d
	}
	wall := b.at.Sub(a.at).Seconds()
	if wall <= 0 {
		return busy, 0
	}
	for pid, t := range b.procTicks {
		if t0, ok := a.procTicks[pid]; ok {
			maxProc = max(maxProc, (t-t0)/clockTicks/wall)
		}
	}
	return busy, maxProc
}
