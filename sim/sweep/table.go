package sweep

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/flare-net/flare/internal/jsonl"
	"github.com/flare-net/flare/models"
	"github.com/flare-net/flare/sim"
)

// WriteRows prints simulated runs as a table (format "table"), CSV
// (columns named by the JSON fields) or JSON lines ("json").
func WriteRows(w io.Writer, p models.Params, rows []sim.Result, format string) error {
	switch format {
	case "json":
		return jsonl.Write(w, rows)
	case "csv":
		return writeCSV(w, rows)
	}
	fmt.Fprintf(w, "# simulated: K=%d cores (%d clusters x %d), S=%d, Q=%d per cluster, %s L1 per cluster; P=%d hosts at %g Gbit/s, %s\n",
		p.Cores(), p.Clusters, p.CoresPerCluster, p.SubsetS, p.QueueDepth, models.FormatBytes(float64(p.L1Bytes)),
		p.Hosts, p.HostGbps, p.DType)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "design\tsize\trounds\twindow\ttau\tlock wait\tGbit/s\tlatency\tbuffers\tmax\tmemory\toccupancy\tmax\tcycles\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.0f\t%.1f\t%d\t%s\t%.2f\t%d\t%d\t\n",
			r.Algo, models.FormatBytes(float64(r.Bytes)), r.Rounds, r.Window, r.TauCycles, r.LockWaitCycles, r.BandwidthGbps,
			r.LatencyCycles, r.MemoryBuffers, r.MemoryBuffersMax, models.FormatBytes(r.MemoryBytes),
			r.QueueOccupancy, r.QueueOccupancyMax, r.Cycles)
	}
	return tw.Flush()
}

// writeCSV prints the runs as CSV, the columns named by the JSON fields.
func writeCSV(w io.Writer, rows []sim.Result) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"algo", "bytes", "hosts", "dtype", "blocks", "rounds", "window", "stagger_blocks", "inter_arrival_cycles", "tau_cycles",
		"lock_wait_cycles", "bandwidth_pkts_per_cycle", "bandwidth_gbps", "latency_cycles", "memory_buffers",
		"memory_bytes", "memory_buffers_max", "queue_occupancy", "queue_occupancy_max", "ingress_wait_cycles",
		"packets", "cycles", "contended_lock_acquisitions"})
	g := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	i := strconv.Itoa
	for _, r := range rows {
		cw.Write([]string{r.Algo, i(r.Bytes), i(r.Hosts), r.DType, i(r.Blocks), i(r.Rounds), i(r.Window), i(r.StaggerBlocks), g(r.MeanInterArrival),
			g(r.TauCycles), g(r.LockWaitCycles), g(r.BandwidthPktsPerCycle), g(r.BandwidthGbps), g(r.LatencyCycles),
			g(r.MemoryBuffers), g(r.MemoryBytes), i(r.MemoryBuffersMax), g(r.QueueOccupancy),
			strconv.FormatInt(r.QueueOccupancyMax, 10), g(r.IngressWaitCycles), strconv.FormatInt(r.Packets, 10),
			strconv.FormatInt(r.Cycles, 10), strconv.FormatInt(r.ContendedAcquisitions, 10)})
	}
	cw.Flush()
	return cw.Error()
}
