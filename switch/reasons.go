package swtch

import "sync/atomic"

// reasonCounters counts events by reason over a fixed label set (refused
// joins, evicted pending jobs, refusals of the registry), so that a
// metric's label values are known and bounded. Plain atomics: the
// collector reads them at scrape time.
type reasonCounters struct {
	what   string // for the panic on a reason outside the set
	names  []string
	counts []atomic.Int64
}

func newReasonCounters(what string, names []string) *reasonCounters {
	return &reasonCounters{what: what, names: names, counts: make([]atomic.Int64, len(names))}
}

// add counts one event of reason, which must be in the set: a reason
// outside it is a bug, not an input.
func (c *reasonCounters) add(reason string) {
	for i, r := range c.names {
		if r == reason {
			c.counts[i].Add(1)
			return
		}
	}
	panic("swtch: unknown " + c.what + " reason " + reason)
}

// get is the count of reason (0 for one outside the set).
func (c *reasonCounters) get(reason string) int64 {
	for i, r := range c.names {
		if r == reason {
			return c.counts[i].Load()
		}
	}
	return 0
}

// each calls f with every reason of the set and its count, in set order.
func (c *reasonCounters) each(f func(reason string, n int64)) {
	for i, r := range c.names {
		f(r, c.counts[i].Load())
	}
}
