package hpu

import "time"

// The cores' clock.
//
// A core times every packet it runs (τ, its busy time, the histogram),
// one clock read a packet: each packet starts when the one before it on
// the core ended. On a VM a read of the monotonic clock (time.Since, the
// vDSO's clock_gettime) costs 35–60 ns, a sixth of what the rest of the
// switch spends on a 1 KiB packet. Where the kernel's own clock source is
// the CPU's time-stamp counter (constant and synchronised across CPUs, or
// the kernel would not have chosen it), the clock_gettime the vDSO runs
// reads that counter too, and the cores read it directly instead (13 ns):
// a run of packets starts from a mark, one read of the monotonic clock and
// the counter together, and each packet's end is the mark's time plus the
// ticks since, at a rate measured against the monotonic clock since the
// process began. Each run starts from the monotonic clock again, so the
// counter never drifts from it by more than a run's length times the
// rate's error (parts in 10⁵). Elsewhere, or in the first milliseconds of
// the process while the rate is still being measured, every read is the
// monotonic clock.

// clock is a unit's clock: ns since the unit was built.
type clock struct {
	epoch     time.Time
	epochUnix int64 // epoch in Unix ns, which Task.Started reports
	sinceBase int64 // ns from tickBase to epoch
}

func newClock() clock {
	now := time.Now()
	return clock{epoch: now, epochUnix: now.UnixNano(), sinceBase: int64(now.Sub(tickBase.at))}
}

// now reads the monotonic clock.
func (c *clock) now() int64 { return int64(time.Since(c.epoch)) }

// mark is where a run of packets' times count from.
type mark struct {
	ns        int64   // the monotonic clock at the mark
	tick      int64   // the counter at the mark; 0: read the monotonic clock instead
	nsPerTick float64 // the counter's rate
	last      int64   // the latest time read from the mark
}

// mark starts a run of packets: the monotonic clock now, and the counter
// with it where the cores read the counter.
func (c *clock) mark() mark {
	m := mark{ns: c.now()}
	m.last = m.ns
	if !ticking {
		return m
	}
	t := ticks()
	if d := t - tickBase.tick; d >= minCalibrationTicks {
		m.tick, m.nsPerTick = t, float64(m.ns+c.sinceBase)/float64(d)
	}
	return m
}

// next is the time now, counted from m; never before the time it last
// gave, so that a run that moves between CPUs whose counters differ by a
// few ticks, or the rate's rounding, never times a packet below zero.
func (c *clock) next(m *mark) int64 {
	ns := m.last
	if m.tick == 0 {
		ns = c.now()
	} else if d := ticks() - m.tick; d > 0 {
		ns = m.ns + int64(float64(d)*m.nsPerTick)
	}
	if ns > m.last {
		m.last = ns
	}
	return m.last
}

// tickBase is the monotonic clock and the counter read together when the
// process began, from which a mark measures the counter's rate.
var tickBase = func() (b struct {
	at   time.Time
	tick int64
}) {
	if ticking {
		b.at, b.tick = time.Now(), ticks()
	}
	return b
}()

// minCalibrationTicks is how long after tickBase the counter's rate is
// measured well enough to use: 2²² ticks, about 1.4 ms at 3 GHz, where
// the ~40 ns between the two reads is an error of 3 parts in 10⁵.
const minCalibrationTicks = 1 << 22
