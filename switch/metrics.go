package swtch

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flare-net/flare/hpu"
)

// collector turns the daemon's plain atomic counters into Prometheus
// metrics at scrape time; nothing on the packet path knows Prometheus.
type collector struct {
	s                                                                                          *Switch
	rx, tx, reader, drops, jobs, bufs, bufsTotal, blocks, blockLat, bufSeconds, handler, queue *prometheus.Desc
	queueMean, coreBusy, corePackets, lockWait, jobRx, jobTx, tauC                             *prometheus.Desc
	linkBytes, linkPackets                                                                     *prometheus.Desc
	memBudget, memReserved, pending, refusals, evictions, ioErrors, groups                     *prometheus.Desc
}

func newCollector(s *Switch) *collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &collector{
		s:           s,
		rx:          d("flare_rx_packets_total", "Datagrams received on the data port."),
		reader:      d("flare_reader_packets_total", "Datagrams received (rx) and sent (tx) on each socket of the data port (--readers), by the reader's index.", "reader", "dir"),
		tx:          d("flare_tx_packets_total", "Datagrams sent from the data port."),
		drops:       d("flare_dropped_packets_total", "Packets dropped, by reason.", "reason"),
		jobs:        d("flare_jobs_active", "Jobs in the job table (pending or admitted)."),
		bufs:        d("flare_buffers_in_use", "Aggregation buffers allocated in L1 right now."),
		bufsTotal:   d("flare_buffers", "Aggregation buffers the L1 memory holds."),
		blocks:      d("flare_blocks_completed_total", "Blocks fully aggregated and emitted."),
		blockLat:    d("flare_block_latency_seconds_total", "Summed over completed blocks: the time from the handler of a block's first packet to the handler that completed it (how long it held its buffers)."),
		bufSeconds:  d("flare_buffer_seconds_total", "Aggregation buffers in use integrated over time (every allocation and free counted): its rate is the mean working memory in buffers."),
		handler:     d("flare_handler_seconds", "Handler service time per packet (wall clock)."),
		queue:       d("flare_queue_occupancy", "Handler requests queued or running in a cluster now.", "cluster"),
		queueMean:   d("flare_queue_occupancy_mean", "Mean input-queue occupancy seen by arriving packets since start.", "cluster"),
		coreBusy:    d("flare_core_busy_seconds_total", "Time a core spent running handlers.", "core"),
		corePackets: d("flare_core_packets_total", "Packets a core's handlers ran.", "core"),
		lockWait:    d("flare_lock_wait_seconds_total", "Time handlers spent waiting for buffer locks."),
		jobRx:       d("flare_job_rx_packets_total", "Data packets accepted for a job.", "job"),
		jobTx:       d("flare_job_tx_packets_total", "Packets a job's handler emitted (before multicast).", "job"),
		tauC:        d("flare_tau_cycles", "Mean handler service time in PsPIN cycles (the paper's tau)."),
		linkBytes:   d("flare_link_bytes_total", "UDP payload bytes (Flare header included) exchanged with a peer: a child (host or child switch), the parent switch, or a job's multicast group (link group: its results, sent once for every member).", "peer", "link", "direction"),
		linkPackets: d("flare_link_packets_total", "Datagrams exchanged with a peer: a child (host or child switch), the parent switch, or a job's multicast group.", "peer", "link", "direction"),
		memBudget:   d("flare_memory_budget_bytes", "Host memory all jobs together may hold besides L1 (the switch's memory budget)."),
		memReserved: d("flare_memory_reserved_bytes", "Host memory reserved against the budget now: admitted jobs' footprints, sparse streams, pending joins."),
		pending:     d("flare_jobs_pending", "Jobs in the table whose ranks have not all joined."),
		refusals:    d("flare_join_refusals_total", "Joins refused, by reason (answered or not).", "reason"),
		evictions:   d("flare_pending_evictions_total", "Pending jobs ended to make room or for taking too long to gather their ranks, by reason.", "why"),
		ioErrors:    d("flare_io_errors_total", "Socket errors the reader (rx) and writer (tx) lived through, by errno.", "dir", "errno"),
		groups:      d("flare_multicast_groups_in_use", "Multicast groups of the pool (--multicast) held by running jobs."),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.rx, c.tx, c.reader, c.drops, c.jobs, c.bufs, c.bufsTotal, c.blocks, c.blockLat, c.bufSeconds, c.handler, c.queue,
		c.queueMean, c.coreBusy, c.corePackets, c.lockWait, c.jobRx, c.jobTx, c.tauC, c.linkBytes, c.linkPackets,
		c.memBudget, c.memReserved, c.pending, c.refusals, c.evictions, c.ioErrors, c.groups} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	counter := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, l...)
	}
	gauge := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
	}
	rx, tx := s.packets()
	counter(c.rx, float64(rx))
	counter(c.tx, float64(tx))
	for i := range s.perReader {
		r := strconv.Itoa(i)
		counter(c.reader, float64(s.perReader[i].rx.Load()), r, "rx")
		counter(c.reader, float64(s.perReader[i].tx.Load()), r, "tx")
	}
	drops := s.drops.snapshot()
	for _, cn := range s.conns {
		if tc, ok := cn.(interface{ Truncated() uint64 }); ok {
			drops[dropOversize] += int64(tc.Truncated())
		}
	}
	for reason, n := range drops {
		counter(c.drops, float64(n), reason)
	}
	jobs := s.jobs.all()
	gauge(c.jobs, float64(len(jobs)))
	completed, latency := s.completedEnded.Load(), s.latencyEnded.Load()
	for _, j := range jobs {
		id := strconv.FormatUint(uint64(j.id), 10)
		rx, tx := j.packets()
		counter(c.jobRx, float64(rx), id)
		counter(c.jobTx, float64(tx), id)
		if live := j.live.Load(); live != nil {
			completed += live.handler.completed()
			latency += live.handler.latencyNs()
		}
	}
	counter(c.blocks, float64(completed))
	counter(c.blockLat, float64(latency)/1e9)
	counter(c.bufSeconds, float64(s.unit.Memory().HeldNs())/1e9)
	for peer, l := range s.links.load() {
		p := peer.String()
		all, _ := l.traffic()
		counter(c.linkBytes, float64(all.RxBytes), p, l.role, "rx")
		counter(c.linkBytes, float64(all.TxBytes), p, l.role, "tx")
		counter(c.linkPackets, float64(all.RxPackets), p, l.role, "rx")
		counter(c.linkPackets, float64(all.TxPackets), p, l.role, "tx")
	}
	gauge(c.memBudget, float64(s.budget.limit))
	gauge(c.memReserved, float64(s.budget.reserved.Load()))
	gauge(c.pending, float64(s.pending.n.Load()))
	gauge(c.groups, float64(s.groups.held()))
	s.refusals.each(func(reason string, n int64) {
		counter(c.refusals, float64(n), reason)
	})
	s.evictions.each(func(why string, n int64) {
		counter(c.evictions, float64(n), why)
	})
	for k, n := range s.ioErrors.snapshot() {
		counter(c.ioErrors, float64(n), k.dir, k.errno)
	}
	c.collectUnit(counter, gauge, ch)
}

// collectUnit reports the processing unit's metrics: L1 buffers, queues,
// cores, lock waits, τ and the handler-time histogram.
func (c *collector) collectUnit(counter, gauge func(*prometheus.Desc, float64, ...string), ch chan<- prometheus.Metric) {
	s := c.s
	mem := s.unit.Memory()
	gauge(c.bufs, float64(mem.InUse()))
	gauge(c.bufsTotal, float64(mem.Total()))

	st := s.unit.Stats()
	for _, cl := range st.Clusters {
		l := strconv.Itoa(cl.Cluster)
		gauge(c.queue, float64(cl.QueueNow), l)
		gauge(c.queueMean, cl.QueueMean, l)
	}
	for _, co := range st.Cores {
		l := strconv.Itoa(co.Cluster*s.cfg.HPU.CoresPerCluster + co.Core)
		counter(c.coreBusy, float64(co.BusyNs)/1e9, l)
		counter(c.corePackets, float64(co.Packets), l)
	}
	tot := st.Total()
	counter(c.lockWait, float64(tot.LockWaitNs)/1e9)
	gauge(c.tauC, st.TauCycles())
	count, sum, buckets := handlerHistogram(&tot)
	ch <- prometheus.MustNewConstHistogram(c.handler, count, sum, buckets)
}

// handlerHistogram is the unit's handler-time histogram as Prometheus
// takes one: the handlers counted under each bucket's upper bound in
// seconds, cumulatively; all of them, the last bucket's (no bound) too;
// and their time in seconds.
func handlerHistogram(tot *hpu.CoreStats) (count uint64, sum float64, buckets map[float64]uint64) {
	buckets = make(map[float64]uint64, hpu.HistBuckets-1)
	for i := 0; i < hpu.HistBuckets-1; i++ {
		count += uint64(tot.Hist[i])
		buckets[float64(hpu.HistBound(i))/1e9] = count
	}
	count += uint64(tot.Hist[hpu.HistBuckets-1])
	return count, float64(tot.BusyNs) / 1e9, buckets
}
