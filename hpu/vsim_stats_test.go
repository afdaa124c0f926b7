package hpu

import "testing"

// Stats reports each counter where it was counted and in its unit: per
// cluster the mean and largest queue occupancy its arrivals saw and its
// buffers' peak; the largest occupancy over every cluster; per core busy
// and lock-wait time converted at the clock (2 GHz here, so that a
// nanosecond is two cycles and a count left in cycles shows); BusyCycles
// summed over all the cores; and the buffers in use when Stats is called.
func TestVirtualStatsFields(t *testing.T) {
	cfg := Config{Clusters: 2, CoresPerCluster: 2}
	cfg.Cost = PsPINCost()
	cfg.Cost.ClockHz, cfg.Cost.LockBackoff = 2e9, 0
	u, _ := newVUnit(t, cfg)
	q, err := u.Memory().Reserve(4)
	if err != nil {
		t.Fatal(err)
	}
	var lk Lock
	locked := HandlerFunc(func(t *Task) {
		t.Lock(&lk)
		t.Charge(100)
		t.Unlock(&lk)
	})
	buffered := HandlerFunc(func(t *Task) {
		b := q.Alloc(t.Cluster)
		t.Charge(50)
		q.Free(b)
	})
	// Block 0's three packets arrive together on cluster 0's two cores
	// (occupancies 1, 2 and 3) and take the lock in turn: the second waits
	// 100 cycles, the third queues until 100 and waits 100 more. Block 1's
	// one packet runs alone on cluster 1 with one buffer.
	st := submitRun(t, u, vpkt(locked, 0, 0), vpkt(locked, 0, 0), vpkt(locked, 0, 0), vpkt(buffered, 1, 10))
	if len(st.Clusters) != 2 {
		t.Fatalf("%d clusters' stats, want 2", len(st.Clusters))
	}
	c0, c1 := st.Clusters[0], st.Clusters[1]
	if c0.QueueMean != 2 || c0.QueueMax != 3 || c1.QueueMean != 1 || c1.QueueMax != 1 || st.QueueMax != 3 {
		t.Errorf("queues: cluster 0 mean %v max %d, cluster 1 mean %v max %d, unit max %d; want 2 3, 1 1, 3",
			c0.QueueMean, c0.QueueMax, c1.QueueMean, c1.QueueMax, st.QueueMax)
	}
	if c1.BuffersPeak != 1 || c1.BuffersInUse != 0 || c0.BuffersPeak != 0 {
		t.Errorf("buffers: cluster 1 peak %d in use %d, cluster 0 peak %d; want 1 0, 0", c1.BuffersPeak, c1.BuffersInUse, c0.BuffersPeak)
	}
	var busyNs, waitNs, waitCycles int64
	for _, c := range st.Cores {
		busyNs += c.BusyNs
		waitNs += c.LockWaitNs
		waitCycles += c.LockWaitCycles
		if c.BusyNs*2 != c.Cycles {
			t.Errorf("cluster %d core %d: busy %d ns for %d cycles at 2 GHz", c.Cluster, c.Core, c.BusyNs, c.Cycles)
		}
	}
	// Busy time runs from a handler's start to its end, lock waiting
	// included: 100 + 200 + 200 cycles for block 0, 50 for block 1.
	if waitCycles != 200 || waitNs != 100 || busyNs != 275 || u.BusyCycles() != 550 {
		t.Errorf("lock wait %d cycles = %d ns, busy %d ns, BusyCycles %d; want 200 = 100 ns, 275 ns, 550",
			waitCycles, waitNs, busyNs, u.BusyCycles())
	}
	// Buffers a caller holds after the run count at the next Stats.
	a, b := q.Alloc(0), q.Alloc(1)
	defer q.Free(a)
	defer q.Free(b)
	if st := u.Stats(); st.BuffersMax != 2 {
		t.Errorf("with two buffers held after the run: most buffers %d, want 2", st.BuffersMax)
	}
}
