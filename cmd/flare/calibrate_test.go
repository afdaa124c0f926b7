package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flare-net/flare/internal/bench"
)

// calibrateBound is the documented bound of `flare model calibrate`: the
// predicted in-process packets/s within 25% of the measured.
const calibrateBound = 0.25

// calibrateAttempts is how many calibrations the test takes before it
// fails. The VMs this runs on change speed from one second to the next
// (docs/PERFORMANCE.md's spells: D doubles within seconds), so a
// calibration whose inputs and measurement fall in different spells is
// off by that much. CI failed once at +28.8% with A = 2.00 and no other
// process, its rounds measuring 1.74..2.48 M packets/s against 2.47 M
// predicted. The bound stays 25%: one calibration of three must meet it.
const calibrateAttempts = 3

// The prediction holds within the bound. Each figure is a median over
// rounds that measure the inputs and the harness in turn, so a change in
// the machine's load during the test moves both.
func TestModelCalibrate(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("timing test: the race detector slows handlers and hosts unevenly")
	}
	excused := 0
	for attempt := 1; attempt <= calibrateAttempts; attempt++ {
		miss, why := calibrateOnce(t)
		if miss == "" {
			return
		}
		t.Logf("attempt %d of %d: %s", attempt, calibrateAttempts, miss)
		if why != "" {
			excused++
			t.Logf("not counted: %s", why)
		}
	}
	if excused == calibrateAttempts {
		t.Skipf("every attempt missed with other work holding the CPUs: the %.0f%% bound is for an otherwise idle machine", 100*calibrateBound)
	}
	t.Errorf("%d of %d calibrations missed ±%.0f%% on an otherwise idle machine", calibrateAttempts-excused, calibrateAttempts, 100*calibrateBound)
}

// calibrateOnce runs `flare model calibrate` once and checks its figures.
// It returns "" when the prediction holds; else what missed, and why the
// miss does not count where other work held the CPUs.
func calibrateOnce(t *testing.T) (miss, why string) {
	t.Helper()
	var out string
	others, wall, othersKnown := othersCPU(func() {
		out = runFlare(t, "model", "calibrate", "--format", "json", "--runs", "5", "--run-time", "80ms")
	})
	var c bench.Calibration
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Logf("%s, GOMAXPROCS %d, A = %.2f CPUs, U = %.2f busy: tau %.0f ns, h1 %.0f ns, D %.0f ns per packet; predicted %.0f, measured %.0f (%.0f..%.0f) packets/s, error %+.1f%%; naive %.0f, one-CPU cost %.0f",
		c.Algo, c.GOMAXPROCS, c.CPUs, c.BusyCPUs, c.TauNs, c.HostNs1, c.CostNs, c.Predicted, c.Measured, c.MeasuredMin, c.MeasuredMax,
		100*c.Error, c.NaivePPS, c.SerialPPS)
	if othersKnown {
		t.Logf("other processes used %.2f CPUs during the measurement (%v)", others.Seconds()/wall.Seconds(), wall.Round(time.Millisecond))
	}
	if c.Algo != "single" || c.Cores != 32 || c.Runs != 5 || !(c.TauNs > 0) || !(c.HostNs1 > 0) || !(c.TauCycles > 0) {
		t.Fatalf("implausible calibration: %+v", c)
	}
	if _, ok := bench.ProcessCPU(); ok && !(c.CostNs > 0 && c.BusyCPUs > 0) {
		t.Fatalf("no CPU time per packet D or busy CPUs U where the process CPU time can be read: %+v", c)
	}
	if math.Abs(c.Error) <= calibrateBound {
		return "", ""
	}
	miss = fmt.Sprintf("predicted %.0f packets/s, measured %.0f: %+.1f%%, outside ±%.0f%%; a cache line took %.0f..%.0f ns between CPUs",
		c.Predicted, c.Measured, 100*c.Error, 100*calibrateBound, c.LineNSMin, c.LineNSMax)
	// The bound is for CPUs this process has to itself. Where other work
	// takes some (go test running packages side by side), the harness,
	// which sleeps and wakes, gets less of what is left than the spinning
	// that measures A, and the prediction runs high: say so, don't fail.
	if c.CPUs < 0.9*float64(c.GOMAXPROCS) {
		return miss, fmt.Sprintf("other work held the CPUs (A = %.2f of %d)", c.CPUs, c.GOMAXPROCS)
	}
	// A measures the CPUs once, before the rounds; other processes (go
	// test's other packages) may start during them.
	if othersKnown && others > wall/10 {
		return miss, fmt.Sprintf("other processes used %.2f CPUs during the measurement", others.Seconds()/wall.Seconds())
	}
	return miss, ""
}

// othersCPU runs f and reports the CPU time the machine spent outside
// this process meanwhile, and the wall time f took. ok is false where the
// machine's CPU time cannot be read (/proc/stat, Linux).
func othersCPU(f func()) (others, wall time.Duration, ok bool) {
	busy0, ok0 := machineBusy()
	self0, okSelf := bench.ProcessCPU()
	start := time.Now()
	f()
	wall = time.Since(start)
	busy1, ok1 := machineBusy()
	self1, _ := bench.ProcessCPU()
	if !ok0 || !ok1 || !okSelf {
		return 0, wall, false
	}
	return (busy1 - busy0) - (self1 - self0), wall, true
}

// machineBusy is the CPU time all CPUs have spent busy since boot, from
// the first line of /proc/stat (user, nice, system, irq, softirq, steal;
// in USER_HZ = 100 ticks a second).
func machineBusy() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, false
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, false
		}
		ticks += v
	}
	return time.Duration(ticks) * 10 * time.Millisecond, true
}
