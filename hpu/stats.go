package hpu

// CoreStats is a snapshot of one core's counters.
type CoreStats struct {
	Cluster, Core  int
	Packets        int64              // packets whose handler ran
	Rejected       int64              // packets the header stage rejected (duplicates, stale)
	BusyNs         int64              // wall-clock time spent in handlers
	Cycles         int64              // PsPIN cycles charged by handlers
	LockWaitNs     int64              // wall-clock time spent waiting for locks
	LockWaitCycles int64              // cycles charged for waiting (back-off)
	Contended      int64              // lock acquisitions that had to wait
	Hist           [HistBuckets]int64 // handler service time histogram (see HistBound)
}

// ClusterStats is a snapshot of one cluster's counters.
type ClusterStats struct {
	Cluster      int
	QueueMean    float64 // mean occupancy (queued + running) seen by arriving packets
	QueueMax     int64   // largest occupancy seen by an arriving packet
	QueueNow     int     // occupancy now
	Overflow     int64   // packets taken because their home cluster was full
	BuffersInUse int
	BuffersPeak  int
	BuffersTotal int
	arrivals     int64
	occupancySum int64
}

// Stats is a snapshot of the whole unit.
type Stats struct {
	Cores    []CoreStats
	Clusters []ClusterStats
}

// Stats reads every counter. It allocates; call it at scrape time, not per
// packet. A core publishes its counts once per batch, before it gives the
// batch's last packet back, and a submitter its occupancy samples before
// Submit, SubmitWait or SubmitBatch returns: once every packet is back,
// every count is in; while cores run, the counts of the batches running
// are not yet.
func (h *HPU) Stats() Stats {
	var s Stats
	for _, cl := range h.clusters {
		a := h.mem.arenas[cl.id]
		cs := ClusterStats{
			Cluster: cl.id, QueueMax: cl.occMax.Load(), QueueNow: int(cl.occ.Load()),
			Overflow: cl.overflowIn.Load(), BuffersInUse: a.InUse(), BuffersPeak: a.Peak(), BuffersTotal: a.Cap(),
			arrivals: cl.occSamples.Load(), occupancySum: cl.occSum.Load(),
		}
		if cs.arrivals > 0 {
			cs.QueueMean = float64(cs.occupancySum) / float64(cs.arrivals)
		}
		s.Clusters = append(s.Clusters, cs)
		for _, co := range cl.cores {
			c := &co.stats
			s.Cores = append(s.Cores, CoreStats{
				Cluster: cl.id, Core: co.id,
				Packets: c.packets.Load(), Rejected: c.rejected.Load(), BusyNs: c.busyNs.Load(),
				Cycles: c.cycles.Load(), LockWaitNs: c.waitNs.Load(), LockWaitCycles: c.waitCycles.Load(),
				Contended: c.contended.Load(),
			})
			for i := range c.hist {
				s.Cores[len(s.Cores)-1].Hist[i] = c.hist[i].Load()
			}
		}
	}
	return s
}

// Total sums the per-core counters.
func (s Stats) Total() CoreStats {
	t := CoreStats{Cluster: -1, Core: -1}
	for _, c := range s.Cores {
		t.Packets += c.Packets
		t.Rejected += c.Rejected
		t.BusyNs += c.BusyNs
		t.Cycles += c.Cycles
		t.LockWaitNs += c.LockWaitNs
		t.LockWaitCycles += c.LockWaitCycles
		t.Contended += c.Contended
		for i, n := range c.Hist {
			t.Hist[i] += n
		}
	}
	return t
}

// TauCycles is the mean service time per packet in PsPIN cycles: the
// paper's τ, including lock waiting.
func (s Stats) TauCycles() float64 {
	t := s.Total()
	if n := t.Packets + t.Rejected; n > 0 {
		return float64(t.Cycles) / float64(n)
	}
	return 0
}

// TauNs is the mean wall-clock service time per packet on this machine.
func (s Stats) TauNs() float64 {
	t := s.Total()
	if n := t.Packets + t.Rejected; n > 0 {
		return float64(t.BusyNs) / float64(n)
	}
	return 0
}

// QueueMean is the mean input-queue occupancy seen by arriving packets,
// over all clusters.
func (s Stats) QueueMean() float64 {
	var sum, n int64
	for _, c := range s.Clusters {
		sum += c.occupancySum
		n += c.arrivals
	}
	if n == 0 {
		return 0
	}
	return float64(sum) / float64(n)
}
