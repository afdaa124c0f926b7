package hpu

import (
	"math/bits"
	"sync/atomic"
)

// The real-time unit's counters, and how its goroutines sum their own
// before they add them to the shared ones: a packet costs no atomic
// operation for its statistics.

// coreCounters are what Stats reads; the core's goroutine adds its
// batchCounters to them once per batch, before it gives the batch's last
// packet back, so that whoever has every packet of a run back reads the
// run's every count.
type coreCounters struct {
	packets, rejected, busyNs, cycles, waitNs, waitCycles, contended atomic.Int64
	hist                                                             [HistBuckets]atomic.Int64
}

// batchCounters are one batch's counts, plain fields that only the core's
// goroutine touches: a packet costs no atomic add for its statistics.
type batchCounters struct {
	packets, rejected, busyNs, cycles, waitNs, waitCycles, contended int64
	hist                                                             [HistBuckets]int32
}

// publish adds b to s and clears b.
func (b *batchCounters) publish(s *coreCounters) {
	add := func(c *atomic.Int64, n int64) {
		if n != 0 {
			c.Add(n)
		}
	}
	add(&s.packets, b.packets)
	add(&s.rejected, b.rejected)
	add(&s.busyNs, b.busyNs)
	add(&s.cycles, b.cycles)
	add(&s.waitNs, b.waitNs)
	add(&s.waitCycles, b.waitCycles)
	add(&s.contended, b.contended)
	for i, n := range b.hist {
		add(&s.hist[i], int64(n))
	}
	*b = batchCounters{}
}

// HistBuckets is the number of buckets of the handler service-time
// histogram: bucket i counts handlers that took less than HistBound(i)
// (128 ns doubling up to 256 µs), the last one the rest.
const HistBuckets = 13

// HistBound is the upper bound of histogram bucket i in nanoseconds
// (bucket HistBuckets-1 has none).
func HistBound(i int) int64 { return 128 << i }

func histBucket(ns int64) int {
	return min(bits.Len64(uint64(ns)>>7), HistBuckets-1)
}

// arrivals sums one submitter's occupancy samples per cluster, so that
// the packets of a batch cost the cluster's shared counters a few atomic
// operations per batch, not three per packet. Its sums are added to the
// clusters' by flush, before the submitter returns.
type arrivals struct {
	n   int
	cl  [8]*cluster
	sum [8]int64
	cnt [8]int64
	max [8]int64
}

// add counts one arrival in cl that saw occ requests, itself included.
func (a *arrivals) add(cl *cluster, occ int64) {
	for i := range a.n {
		if a.cl[i] == cl {
			a.sum[i] += occ
			a.cnt[i]++
			a.max[i] = max(a.max[i], occ)
			return
		}
	}
	if a.n == len(a.cl) {
		a.flush()
	}
	a.cl[a.n], a.sum[a.n], a.cnt[a.n], a.max[a.n] = cl, occ, 1, occ
	a.n++
}

// flush adds the sums to the clusters' counters and empties a.
func (a *arrivals) flush() {
	for i := range a.n {
		cl := a.cl[i]
		cl.occSum.Add(a.sum[i])
		cl.occSamples.Add(a.cnt[i])
		for m := cl.occMax.Load(); a.max[i] > m && !cl.occMax.CompareAndSwap(m, a.max[i]); m = cl.occMax.Load() {
		}
		a.cl[i] = nil
	}
	a.n = 0
}
