package hpu

import (
	"testing"
	"time"
)

// TestClockFollowsMonotonic checks the cores' clock against the monotonic
// clock over a run of 5 ms from one mark: every reading lies between two
// monotonic reads that bracket it, within the counter's rate error (0.1%
// allowed, parts in 10⁵ expected), and readings never go back. Where the
// cores read the monotonic clock itself (ticking false), it checks that.
func TestClockFollowsMonotonic(t *testing.T) {
	time.Sleep(2 * time.Millisecond) // past the counter's calibration (minCalibrationTicks)
	c := newClock()
	m := c.mark()
	if ticking && m.tick == 0 {
		t.Fatalf("the counter is read (ticking) but a mark 2 ms into the process has no tick: its rate was not measured")
	}
	t.Logf("ticking %v, %.4f ns a tick", ticking, m.nsPerTick)
	prev := m.last
	for deadline := time.Now().Add(5 * time.Millisecond); time.Now().Before(deadline); {
		lo := c.now()
		x := c.next(&m)
		hi := c.now()
		slack := (hi-m.ns)/1000 + 1000 // 0.1% of the run so far, and 1 µs
		if x < lo-slack || x > hi+slack {
			t.Fatalf("%v into the run: the clock read %d ns, the monotonic clock %d..%d ns around it", time.Duration(hi-m.ns), x, lo, hi)
		}
		if x < prev {
			t.Fatalf("the clock went back from %d to %d ns", prev, x)
		}
		prev = x
	}
}

// TestSteadyFollowsMonotonic checks the arenas' clock over 5 ms: every
// reading of it lies between two reads of the monotonic clock since
// tickBase that bracket it, within 0.1%, and it never goes back.
func TestSteadyFollowsMonotonic(t *testing.T) {
	time.Sleep(2 * time.Millisecond) // past the counter's calibration
	prev := steady()
	for deadline := time.Now().Add(5 * time.Millisecond); time.Now().Before(deadline); {
		lo := int64(time.Since(tickBase.at))
		x := steady()
		hi := int64(time.Since(tickBase.at))
		if slack := hi/1000 + 1000; x < lo-slack || x > hi+slack {
			t.Fatalf("steady read %d ns, the monotonic clock since tickBase %d..%d ns around it", x, lo, hi)
		}
		if x < prev {
			t.Fatalf("steady went back from %d to %d ns", prev, x)
		}
		prev = x
	}
}
