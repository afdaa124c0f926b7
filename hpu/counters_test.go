package hpu

import "testing"

// A batch's counts reach the core's shared counters whole, each its own,
// every histogram bucket the last included, and the batch starts again
// from zero.
func TestBatchCountersPublish(t *testing.T) {
	var s coreCounters
	b := batchCounters{packets: 1, rejected: 2, busyNs: 3, cycles: 4, waitNs: 5, waitCycles: 6, contended: 7}
	for i := range b.hist {
		b.hist[i] = int32(10 + i)
	}
	for round := int64(1); round <= 2; round++ {
		c := b
		c.publish(&s)
		if c != (batchCounters{}) {
			t.Fatalf("round %d: the batch after publishing: %+v, want zero", round, c)
		}
		got := [...]int64{s.packets.Load(), s.rejected.Load(), s.busyNs.Load(), s.cycles.Load(), s.waitNs.Load(), s.waitCycles.Load(), s.contended.Load()}
		if got != [...]int64{round, 2 * round, 3 * round, 4 * round, 5 * round, 6 * round, 7 * round} {
			t.Errorf("round %d: packets, rejected, busy, cycles, wait, wait cycles, contended = %v", round, got)
		}
		for i := range s.hist {
			if n := s.hist[i].Load(); n != int64(10+i)*round {
				t.Errorf("round %d: histogram bucket %d = %d, want %d", round, i, n, int64(10+i)*round)
			}
		}
	}
}

// A submitter's occupancy samples reach each cluster's counters summed,
// counted and at their maximum, for more clusters than it keeps apart
// (the ninth flushes the eight before it); a cluster's maximum only
// rises.
func TestArrivalsFlush(t *testing.T) {
	cls := make([]*cluster, 10)
	for i := range cls {
		cls[i] = &cluster{id: i}
	}
	cls[3].occMax.Store(100) // above anything this submitter saw
	cls[4].occMax.Store(2)   // below
	var a arrivals
	for round := range 3 {
		for i, cl := range cls {
			a.add(cl, int64(i+round)) // cluster i sees i, i+1, i+2
		}
	}
	a.flush()
	if a.n != 0 {
		t.Fatalf("%d clusters kept after flush", a.n)
	}
	for i, cl := range cls {
		wantMax := int64(i + 2)
		if i == 3 {
			wantMax = 100
		}
		if sum, n, m := cl.occSum.Load(), cl.occSamples.Load(), cl.occMax.Load(); sum != int64(3*i+3) || n != 3 || m != wantMax {
			t.Errorf("cluster %d: occupancy sum %d over %d samples, max %d; want %d, 3, %d", i, sum, n, m, 3*i+3, wantMax)
		}
	}
}

// Within a batch a cluster's samples add up, and its maximum is the
// largest of them, not the first.
func TestArrivalsOneCluster(t *testing.T) {
	cl := &cluster{}
	var a arrivals
	for _, occ := range []int64{1, 5, 3} {
		a.add(cl, occ)
	}
	a.flush()
	if sum, n, m := cl.occSum.Load(), cl.occSamples.Load(), cl.occMax.Load(); sum != 9 || n != 3 || m != 5 {
		t.Errorf("samples 1, 5, 3: sum %d over %d, max %d; want 9, 3, 5", sum, n, m)
	}
}
