package bench

import "time"

// cpuTimes is CPU time, user and system apart.
type cpuTimes struct{ user, sys time.Duration }

func (t cpuTimes) sub(u cpuTimes) cpuTimes {
	return cpuTimes{user: t.user - u.user, sys: t.sys - u.sys}
}

// cpuSpan is what this process spent over spans of the measured calls,
// each from start to stop, the kernel's part in sys. The server's is one
// span: while the ranks of a row with a process per rank made their
// measured calls, from the release of the first to the end of the last on
// every rank (barrier.go); this process then runs only the embedded switch
// or relay the row goes through (and the barrier), so it is the server's
// CPU for those calls, and the ranks' fill and check between calls, which
// the server idles through, cost it nothing. A rank process's is one span
// a call: its calls alone, without the filling and checking between them
// (Result.RanksUserS).
type cpuSpan struct {
	from, spent cpuTimes
	started, ok bool // ok: a span was taken
}

// start takes the reading a span starts from.
func (c *cpuSpan) start() { c.startAt(processTimes()) }

// stop adds the time since start to spent.
func (c *cpuSpan) stop() { c.stopAt(processTimes) }

// startAt starts a span at reading t (ok: it could be taken).
func (c *cpuSpan) startAt(t cpuTimes, ok bool) { c.from, c.started = t, ok }

// stopAt ends the span started, at the reading read takes: nothing when
// none was started or read cannot take one.
func (c *cpuSpan) stopAt(read func() (cpuTimes, bool)) {
	if !c.started {
		return
	}
	to, ok := read()
	c.started = false
	if !ok {
		return
	}
	d := to.sub(c.from)
	c.spent.user, c.spent.sys, c.ok = c.spent.user+d.user, c.spent.sys+d.sys, true
}

// perCall is the spent time over calls calls, in seconds; 0, 0 when it
// was not taken.
func (c *cpuSpan) perCall(calls int) (user, sys float64) {
	if !c.ok || calls < 1 {
		return 0, 0
	}
	return c.spent.user.Seconds() / float64(calls), c.spent.sys.Seconds() / float64(calls)
}
