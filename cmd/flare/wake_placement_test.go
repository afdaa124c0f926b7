package main

import (
	"bytes"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// perfSched is `perf script` of sched_waking, sched_wakeup and
// sched_switch on two CPUs: flare thread 100 on CPU 0 wakes 101 while CPU
// 1 idles, and the kernel queues it on CPU 0, where it runs 400 µs later
// when 100 sleeps; then 101 wakes 102 onto the idle CPU 1, where it runs
// 5 µs later. Another process's wake-up (kworker) is not flare's.
const perfSched = `           flare   100 [000]    10.000000: sched:sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=flare next_pid=100 next_prio=120
           flare   101 [001]    10.000001: sched:sched_switch: prev_comm=flare prev_pid=101 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
           flare   100 [000]    10.000100: sched:sched_waking: comm=flare pid=101 prio=120 target_cpu=001
           flare   100 [000]    10.000101: sched:sched_wakeup: comm=flare pid=101 prio=120 target_cpu=000
           flare   100 [000]    10.000300: sched:sched_waking: comm=kworker/0:1 pid=7 prio=120 target_cpu=000
           flare   100 [000]    10.000500: sched:sched_switch: prev_comm=flare prev_pid=100 prev_prio=120 prev_state=S ==> next_comm=flare next_pid=101 next_prio=120
           flare   101 [000]    10.001000: sched:sched_waking: comm=flare pid=102 prio=120 target_cpu=001
           flare   101 [000]    10.001001: sched:sched_wakeup: comm=flare pid=102 prio=120 target_cpu=001
         swapper     0 [001]    10.001005: sched:sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=flare next_pid=102 next_prio=120
`

// tools/wake-placement.py counts each wake-up in its case, with the time
// until the woken thread ran.
func TestWakePlacementScript(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	cmd := exec.Command("python3", "../../tools/wake-placement.py")
	cmd.Stdin = strings.NewReader(perfSched)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tools/wake-placement.py: %v\n%s", err, out)
	}
	for _, want := range []string{
		`on the waker's CPU, another idle +1 +median +400\.0 µs`,
		`on another CPU, another idle +1 +median +5\.0 µs`,
	} {
		if !regexp.MustCompile(want).Match(out) {
			t.Errorf("tools/wake-placement.py printed no %q:\n%s", want, out)
		}
	}
	if bytes.Count(out, []byte("median")) != 2 {
		t.Errorf("tools/wake-placement.py printed other cases than the two wake-ups:\n%s", out)
	}

	cmd = exec.Command("python3", "../../tools/wake-placement.py", "other")
	cmd.Stdin = strings.NewReader(perfSched)
	if out, err := cmd.CombinedOutput(); err == nil || !bytes.Contains(out, []byte("no wake-ups of other")) {
		t.Errorf("tools/wake-placement.py other: %v\n%s, want an error saying it found none", err, out)
	}
}
