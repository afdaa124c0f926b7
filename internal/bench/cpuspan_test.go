package bench

import (
	"testing"
	"time"
)

// A span adds up the CPU time between each start and its stop, user and
// system apart, over as many spans as were taken; a stop without a start,
// or a reading that could not be taken, adds nothing; per call is the sum
// over the calls, and 0 where nothing was taken.
func TestCPUSpan(t *testing.T) {
	at := func(user, sys time.Duration) func() (cpuTimes, bool) {
		return func() (cpuTimes, bool) { return cpuTimes{user: user, sys: sys}, true }
	}
	var c cpuSpan
	c.stopAt(at(time.Hour, time.Hour)) // never started
	if u, s := c.perCall(1); u != 0 || s != 0 || c.ok {
		t.Fatalf("a stop without a start: %v s user, %v s sys, taken %t", u, s, c.ok)
	}
	c.startAt(cpuTimes{user: 1 * time.Second, sys: 2 * time.Second}, true)
	c.stopAt(at(4*time.Second, 3*time.Second)) // 3 s user, 1 s sys
	c.startAt(cpuTimes{user: 10 * time.Second, sys: 10 * time.Second}, true)
	c.stopAt(at(11*time.Second, 12*time.Second)) // 1 s user, 2 s sys
	c.startAt(cpuTimes{user: 20 * time.Second}, true)
	c.stopAt(func() (cpuTimes, bool) { return cpuTimes{user: time.Hour}, false }) // no reading
	c.stopAt(at(time.Hour, time.Hour))                                            // stopped already
	if u, s := c.perCall(2); u != 2 || s != 1.5 {
		t.Errorf("per call over 2 calls: %v s user, %v s sys; want 2, 1.5", u, s)
	}
	if u, s := c.perCall(0); u != 0 || s != 0 {
		t.Errorf("per call over no calls: %v, %v; want 0, 0", u, s)
	}
	var never cpuSpan
	never.startAt(cpuTimes{}, false) // the start's reading could not be taken
	never.stopAt(at(time.Hour, time.Hour))
	if u, s := never.perCall(1); u != 0 || s != 0 {
		t.Errorf("a span whose start could not be read: %v, %v; want 0, 0", u, s)
	}
}
