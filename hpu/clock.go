package hpu

import (
	"math"
	"sync/atomic"
	"time"
)

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
// rate's error. A pair of reads that the scheduler tore apart (the
// counter read twice around the clock, too far apart) anchors nothing:
// that run reads the monotonic clock. Elsewhere, or in the first
// milliseconds of the process while the rate is still being measured,
// every read is the monotonic clock.
//
// The arenas integrate the buffers they hold over time at every
// allocation and free, a quarter of a clock read a packet at 1 KiB. They
// need no anchor to the monotonic clock, only a steady one (steady): the
// counter since the process began, at a rate measured once.

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
// with it where the cores read the counter (and the two reads were not
// torn apart).
func (c *clock) mark() mark {
	if !tickBase.ok {
		ns := c.now()
		return mark{ns: ns, last: ns}
	}
	ns, t, ok := readPair(c.now)
	m := mark{ns: ns, last: ns}
	if d := t - tickBase.tick; ok && d >= minCalibrationTicks {
		m.tick, m.nsPerTick = t, float64(ns+c.sinceBase)/float64(d)
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

// readPair reads the monotonic clock (read) between two reads of the
// counter, and returns it with the counter's midpoint. ok is false when
// the counter reads are more than maxPairTicks apart: the goroutine was
// descheduled between them, and the pair would tie the counter to the
// wrong time.
func readPair(read func() int64) (ns, tick int64, ok bool) {
	t1 := ticks()
	ns = read()
	t2 := ticks()
	return ns, t1 + (t2-t1)/2, t2-t1 <= maxPairTicks
}

// maxPairTicks bounds a readPair: 2¹⁴ ticks, about 6 µs at 2.5 GHz,
// against well under 1 µs for a read of the monotonic clock.
const maxPairTicks = 1 << 14

// tickBase is the monotonic clock and the counter read together when the
// process began, from which a mark measures the counter's rate. ok is
// false where the cores do not read the counter, or no read of the pair
// in pairTries was whole (then every read is the monotonic clock).
var tickBase = func() (b struct {
	at   time.Time
	tick int64
	ok   bool
}) {
	b.at = time.Now()
	for try := 0; ticking && !b.ok && try < pairTries; try++ {
		var ns int64
		ns, b.tick, b.ok = readPair(func() int64 { return int64(time.Since(b.at)) })
		b.at = b.at.Add(time.Duration(ns)) // the instant the counter read b.tick
	}
	return b
}()

// pairTries is how many times tickBase reads the pair before it gives up.
const pairTries = 16

// steadyRate is the counter's rate (float64 bits) that steady counts at,
// fixed the first time steady is read after the calibration; 0 before.
var steadyRate atomic.Uint64

// steady is ns since tickBase: the counter times a rate fixed once, where
// the cores read the counter, and the monotonic clock elsewhere or until
// the rate is measured (steadyCalibrationTicks after tickBase, from a
// whole pair of reads). Its rate is the monotonic clock's within parts in
// 10⁷, and it steps (by as much) only once, when the rate is fixed: a
// clock for integrals over time, whose rate over an interval is a mean
// (the arenas' buffers held).
func steady() int64 {
	since := func() int64 { return int64(time.Since(tickBase.at)) }
	if !tickBase.ok {
		return since()
	}
	r := steadyRate.Load()
	if r == 0 {
		ns, t, ok := readPair(since)
		if d := t - tickBase.tick; ok && d >= steadyCalibrationTicks {
			steadyRate.CompareAndSwap(0, math.Float64bits(float64(ns)/float64(d)))
		}
		if r = steadyRate.Load(); r == 0 {
			return ns
		}
	}
	return int64(float64(ticks()-tickBase.tick) * math.Float64frombits(r))
}

// minCalibrationTicks is how long after tickBase the counter's rate is
// measured well enough for a mark: 2²² ticks, about 1.4 ms at 3 GHz,
// where the few µs a whole pair of reads may straddle is an error of a
// few parts in 10³ at first, falling as the process runs on. A mark's
// rate only times its own run.
const minCalibrationTicks = 1 << 22

// steadyCalibrationTicks is when steady fixes its rate for good: 2²⁸
// ticks, about 90 ms at 3 GHz, where the error is a few parts in 10⁵ at
// worst and ~10⁻⁷ for the usual 40 ns pair.
const steadyCalibrationTicks = 1 << 28
