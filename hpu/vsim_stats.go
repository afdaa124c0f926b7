package hpu

// VirtualStats is what a VirtualUnit measured. The embedded Stats has the
// same per-core and per-cluster counters as HPU.Stats, in virtual time:
// Cycles and BusyNs count from a handler's start to its end (lock waiting
// included), LockWaitNs is the waiting converted at the clock, so
// Stats.TauCycles is the mean τ and Stats.QueueMean the mean input-queue
// occupancy seen by arriving packets.
type VirtualStats struct {
	Stats
	Now               int64   // the virtual clock: the cycle of the last event
	Arrivals          int64   // packets that arrived
	QueueMax          int64   // the largest cluster-queue occupancy any arriving packet saw
	IngressWaited     int64   // packets that found every eligible queue full and waited at the ingress
	IngressWaitCycles int64   // cycles those packets waited there
	IngressMax        int     // most packets waiting at the ingress at once
	BuffersMean       float64 // aggregation buffers allocated, time-weighted mean over cycles [0, Now]
	BuffersMax        int     // most buffers allocated at once
}

// BufferCycles is Σ buffers allocated × cycles over [0, Now]: the integral
// whose mean over an interval is the memory in use then (a driver that
// reads it at two cycles gets the mean between them, as Little's law wants
// for a steady state that excludes the start and the end of a run).
func (u *VirtualUnit) BufferCycles() int64 { return u.memArea }

// Stats reads the counters; it allocates, call it after a run.
func (u *VirtualUnit) Stats() VirtualStats {
	u.observeMem()
	vs := VirtualStats{
		Now: u.clock, Arrivals: u.arrivals, IngressWaited: u.ingressWaited,
		IngressWaitCycles: u.ingressWaitCycles, IngressMax: u.ingressMax, BuffersMax: u.memMax,
	}
	if u.clock > 0 {
		vs.BuffersMean = float64(u.memArea) / float64(u.clock)
	}
	s := &vs.Stats
	for ci := range u.clusters {
		cl := &u.clusters[ci]
		a := u.mem.arenas[ci]
		cs := ClusterStats{
			Cluster: ci, QueueMax: cl.occMax, QueueNow: cl.occ, Overflow: cl.overflowIn,
			BuffersInUse: a.InUse(), BuffersPeak: a.Peak(), BuffersTotal: a.Cap(),
			arrivals: cl.occSamples, occupancySum: cl.occSum,
		}
		if cs.arrivals > 0 {
			cs.QueueMean = float64(cs.occupancySum) / float64(cs.arrivals)
		}
		vs.QueueMax = max(vs.QueueMax, cl.occMax)
		s.Clusters = append(s.Clusters, cs)
	}
	cost := &u.cfg.Cost
	for i := range u.cores {
		c := &u.cores[i]
		st := &c.stats
		s.Cores = append(s.Cores, CoreStats{
			Cluster: c.cluster, Core: c.id, Packets: st.packets, Rejected: st.rejected,
			BusyNs: int64(cost.Nanos(st.busy)), Cycles: st.cycles,
			LockWaitNs: int64(cost.Nanos(st.waitCycles)), LockWaitCycles: st.waitCycles,
			Contended: st.contended, Hist: st.hist,
		})
	}
	return vs
}

// BusyCycles is Σ over the cores of the cycles their finished handlers ran
// (start to end, lock waiting included): read at two cycles, its growth
// over the packets handled between them is the mean τ of those packets.
func (u *VirtualUnit) BusyCycles() int64 {
	var n int64
	for i := range u.cores {
		n += u.cores[i].stats.busy
	}
	return n
}
