package models

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// FormatBytes prints n in the largest binary unit that divides it into a
// number below 1024 ("4KiB", "1.5MiB", "100MiB", "512B").
func FormatBytes(n float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for i < len(units)-1 && (n >= 1024 || n <= -1024) {
		n /= 1024
		i++
	}
	s := strconv.FormatFloat(n, 'f', 1, 64)
	s = strings.TrimSuffix(s, ".0")
	return s + units[i]
}

// ParseBytes parses a size as FormatBytes prints it, or a plain number of
// bytes ("4096", "4KiB", "1MiB", "1.5GiB"; "K", "KB", "M", "MB", "G", "GB"
// are taken as binary units too).
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := 1.0
	for _, u := range []struct {
		suffix string
		mult   float64
	}{
		{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
		{"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10},
		{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1},
	} {
		if v, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(v), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 || f*mult > float64(MaxBytes) {
		return 0, fmt.Errorf("models: size %q: want a number of bytes up to 1TiB, optionally with KiB, MiB or GiB", s)
	}
	return int64(f * mult), nil
}

// Describe is a one-line summary of p, printed above tables.
func Describe(p Params) string {
	p = p.Resolve()
	stagger := "not staggered"
	if p.Staggered {
		stagger = "staggered over the whole vector"
		if p.Window > 0 {
			stagger = fmt.Sprintf("staggered in groups of %d blocks", p.Window)
		}
	}
	copies := "copies free"
	if p.CountCopies {
		copies = "copies counted"
	}
	if p.TreeArrivalOrder {
		copies += ", tree M from the arrival order"
	}
	return fmt.Sprintf("K=%d cores (%d clusters x %d), S=%d, %.3g GHz, %s %s packets, L=%g, DMA=%g cycles; "+
		"P=%d hosts, delta=%.4g cycles (%g Gbit/s each); %s; %s reading, %s; Q=%d per cluster",
		p.Cores(), p.Clusters, p.CoresPerCluster, p.SubsetS, p.ClockHz/1e9, FormatBytes(float64(p.PacketBytes)), p.DType,
		p.CyclesPerPacket, p.DMACycles, p.Hosts, p.InterArrival, p.HostGbps, stagger, p.Reading, copies, p.QueueDepth)
}

// tableHeader and tableRow are the columns of WriteTable and WriteCSV.
var tableHeader = []string{"design", "size", "blocks", "n", "delta_c", "tau", "Gbit/s", "Gelem/s",
	"rho", "occupancy", "wait", "latency", "M", "R", "memory"}

func tableRow(r Row) []string {
	return []string{
		r.Algo, FormatBytes(float64(r.Bytes)), strconv.FormatInt(r.Blocks, 10),
		fmt.Sprintf("%.2f", r.Contenders), fmt.Sprintf("%.1f", r.DeltaC), fmt.Sprintf("%.1f", r.Tau),
		fmt.Sprintf("%.1f", r.Gbps), fmt.Sprintf("%.2f", r.ElementsPerS/1e9),
		fmt.Sprintf("%.3f", r.Utilization), fmt.Sprintf("%.2f", r.Occupancy), fmt.Sprintf("%.0f", r.QueueWait),
		fmt.Sprintf("%.0f", r.Latency), fmt.Sprintf("%.2f", r.M), fmt.Sprintf("%.1f", r.R),
		FormatBytes(r.MemoryBytes),
	}
}

// WriteTable writes rows as an aligned text table: n contenders, δc, τ and
// the wait and latency in cycles, bandwidth in Gbit/s and 10⁹ elements/s,
// utilisation ρ, input-buffer occupancy per cluster, M, 𝓡 in buffers and
// bytes.
func WriteTable(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(tableHeader, "\t")+"\t")
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(tableRow(r), "\t")+"\t")
	}
	return tw.Flush()
}

// WriteCSV writes rows as CSV with full precision, one column per Row
// field, named by its JSON tag.
func WriteCSV(w io.Writer, rows []Row) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"algo", "buffers", "bytes", "hosts", "blocks", "tau_cycles", "work_cycles", "contenders",
		"same_block_interarrival_cycles", "bandwidth_pkts_per_cycle", "bandwidth_gbps", "elements_per_s",
		"link_bound", "utilization", "latency_cycles", "buffers_per_block", "memory_buffers", "memory_bytes",
		"queue_occupancy", "queue_wait_cycles"})
	g := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	for _, r := range rows {
		cw.Write([]string{r.Algo, strconv.Itoa(r.Buffers), strconv.FormatInt(r.Bytes, 10), strconv.Itoa(r.Hosts),
			strconv.FormatInt(r.Blocks, 10), g(r.Tau), g(r.Work), g(r.Contenders), g(r.DeltaC), g(r.Bandwidth),
			g(r.Gbps), g(r.ElementsPerS), strconv.FormatBool(r.LinkBound), g(r.Utilization), g(r.Latency),
			g(r.M), g(r.R), g(r.MemoryBytes), g(r.Occupancy), g(r.QueueWait)})
	}
	cw.Flush()
	return cw.Error()
}
