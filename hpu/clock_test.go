package hpu

import (
	"testing"
	"time"
)

// TestClockFollowsMonotonic checks the cores' clock against the monotonic
// clock over a run of 5 ms from one mark: every reading lies between two
// monotonic reads that bracket it, within the counter's rate error (0.1%
// allowed, parts in 10⁵ expected), and readings never go back. Where the
// cores read the monotonic clock itself (tickBase.ok false), it checks
// that.
func TestClockFollowsMonotonic(t *testing.T) {
	time.Sleep(2 * time.Millisecond) // past the counter's calibration (minCalibrationTicks)
	c := newClock()
	m := c.mark()
	if tickBase.ok && m.tick == 0 {
		m = c.mark() // its pair of reads may have been torn apart: once more
	}
	if tickBase.ok && m.tick == 0 {
		t.Fatalf("the counter is read (ticking) but two marks 2 ms into the process have no tick: its rate was not measured")
	}
	t.Logf("ticking %v (base ok %v), %.4f ns a tick", ticking, tickBase.ok, m.nsPerTick)
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

// TestSteadyFollowsMonotonic checks the arenas' clock over 5 ms once its
// rate is fixed: every reading of it lies between two reads of the
// monotonic clock since tickBase that bracket it, within 0.1%, and it
// never goes back.
func TestSteadyFollowsMonotonic(t *testing.T) {
	if tickBase.ok {
		for ticks()-tickBase.tick < steadyCalibrationTicks { // past steady's calibration
			time.Sleep(10 * time.Millisecond)
		}
		for try := 0; steadyRate.Load() == 0; try++ {
			if steady(); try == 100 {
				t.Fatal("steady fixed no rate past its calibration time: no whole pair of reads in 100 tries")
			}
		}
	}
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

// TestReadPairTorn checks that a pair of reads the scheduler held apart
// anchors nothing: a monotonic read that takes 1 ms between the two
// counter reads is refused, and a plain one is taken (within ten tries).
func TestReadPairTorn(t *testing.T) {
	if !tickBase.ok {
		t.Skip("the cores do not read the counter here (ticking false)")
	}
	if _, _, ok := readPair(func() int64 { time.Sleep(time.Millisecond); return 0 }); ok {
		t.Fatal("a pair 1 ms apart was taken as whole")
	}
	for try := 0; ; try++ {
		if _, _, ok := readPair(func() int64 { return int64(time.Since(tickBase.at)) }); ok {
			break
		}
		if try == 10 {
			t.Fatal("ten plain pairs of reads were all refused as torn")
		}
	}
}

// A mark never gives a time before the one it last gave, whichever clock
// it reads: not from the counter at a rate that puts now behind the last
// reading (a run moved to a CPU whose counter lags, or the rate's
// rounding), nor from the monotonic clock behind it.
func TestClockNeverGoesBack(t *testing.T) {
	c := newClock()
	const last = int64(1e15) // ahead of either clock
	for _, m := range []mark{
		{ns: 0, tick: ticks() - 1, nsPerTick: 1e-9, last: last}, // the counter, tiny rate
		{ns: 0, last: last}, // the monotonic clock
	} {
		if got := c.next(&m); got != last || m.last != last {
			t.Errorf("mark (tick %d): next = %d, last %d; want %d for both", m.tick, got, m.last, last)
		}
	}
}
