package bench

import "time"

// cpuTimes is CPU time, user and system apart.
type cpuTimes struct{ user, sys time.Duration }

func (t cpuTimes) sub(u cpuTimes) cpuTimes {
	return cpuTimes{user: t.user - u.user, sys: t.sys - u.sys}
}

// serverCPU is what this process spent while the ranks of a row with a
// process per rank made their measured calls: from the release of the
// first measured call to the end of the last on every rank (barrier.go).
// This process then runs only the embedded switch or relay the row goes
// through (and the barrier), so it is the server's CPU for those calls,
// the kernel's part in sys; the ranks' fill and check between calls,
// which the server idles through, cost it nothing.
type serverCPU struct {
	from, spent cpuTimes
	started, ok bool // ok: spent was taken
}

// start takes the reading the first measured call starts from.
func (c *serverCPU) start() { c.from, c.started = processTimes() }

// stop takes the reading after the last call: the time spent since start.
func (c *serverCPU) stop() {
	to, ok := processTimes()
	c.ok = c.started && ok
	c.spent = to.sub(c.from)
}

// perCall is the spent time over calls calls, in seconds; 0, 0 when it
// was not taken.
func (c *serverCPU) perCall(calls int) (user, sys float64) {
	if !c.ok || calls < 1 {
		return 0, 0
	}
	return c.spent.user.Seconds() / float64(calls), c.spent.sys.Seconds() / float64(calls)
}
