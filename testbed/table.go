package testbed

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/flare-net/flare/internal/units"
)

// WriteTable writes a run's rows as the table of `flare testbed`: the
// setting, a line per path, every link's bytes and utilisation, and the
// model command and rules the columns come from.
func WriteTable(w io.Writer, cfg Config, rows []Row) {
	if len(rows) == 0 {
		return
	}
	r0 := rows[0]
	fmt.Fprintf(w, "Flare testbed: %s hosts (%d), %s per host, %s links, %d-byte packets, window %d blocks, loss %g\n", r0.Topology, r0.Ranks,
		units.FormatSize(r0.Bytes), FormatRate(r0.LinkBps), r0.PacketBytes, r0.Window, r0.Loss)
	if r0.UplinkBps > 0 {
		fmt.Fprintf(w, "uplinks (leaf-root) %s\n", FormatRate(r0.UplinkBps))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "path\tdensity\talgo\tmedian\tideal\tof ideal\tmodel\tvs ring\tmodel vs ring\talgbw\thost↑\thost↓\tretransmits\tcpu busy\tswitch cpu\tcpu-bound\tverified\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%g\t%s\t%.2f ms\t%.2f ms\t%.2f×\t%.2f ms\t%s\t%s\t%.3f GB/s\t%s\t%s\t%d\t%.0f%%\t%.2f\t%.2f\t%.2f\t%v\t%v\t\n",
			r.Path, r.Density, r.Algo, r.MedianS*1e3, r.IdealS*1e3, r.OfIdeal, r.ModelS*1e3, units.Ratio(r.VsRing), units.Ratio(r.ModelVsRing),
			r.AlgbwGBps, units.HumanBytes(int64(r.HostUpBytes)), units.HumanBytes(int64(r.HostDownBytes)), r.Retransmits,
			r.CPUBusy*100, r.SwitchCPU, r.SwitchThreadCPU, r.HostCPU, r.CPUBound, r.Verified)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nper link (bytes per call up/down, and utilisation over the median call):")
	for _, r := range rows {
		var b strings.Builder
		for _, l := range r.Links {
			fmt.Fprintf(&b, " %s %s/%s %.0f%%/%.0f%%", l.Link, units.HumanBytes(int64(l.UpBytes)), units.HumanBytes(int64(l.DownBytes)), l.UpUtil*100, l.DownUtil*100)
			if l.Drops > 0 {
				fmt.Fprintf(&b, " (%d dropped)", l.Drops)
			}
			if l.Lost > 0 {
				fmt.Fprintf(&b, " (%d lost)", l.Lost)
			}
		}
		fmt.Fprintf(w, "  %s %g:%s\n", r.Path, r.Density, b.String())
	}
	topo := "single"
	if cfg.Tree() {
		topo = fmt.Sprintf("fattree --ports %d", 2*cfg.PerLeaf)
	}
	fmt.Fprintf(w, "\nmodel: flare model collectives --hosts %d --bytes %s --dtype %s --link-gbps %g --topology %s --overlap %g\n"+
		"ideal: the model's time with every header the host link carries (Flare/UDP/IP/Ethernet per packet, TCP/IP per segment).\n"+
		"cpu-bound: slower than %.2f× ideal while the machine was >= %.0f%% busy or a switch daemon, one of its threads, or a host used >= %.2f CPUs.\n",
		cfg.World(), units.FormatSize(cfg.Bytes), "float32", cfg.LinkBps/1e9, topo, cfg.Overlap,
		IdealSlack, BusyCPU*100, BusyProcess)
}

// WriteSweepHeader writes the capacity sweep's title and column heads.
func WriteSweepHeader(w io.Writer, cfg Config) {
	fmt.Fprintf(w, "Flare testbed capacity sweep: %s hosts, %s per host, in-network dense; held = verified and within %.0f%% of ideal\n\n",
		cfg.Shape(), units.FormatSize(cfg.Bytes), (IdealSlack-1)*100)
	fmt.Fprintf(w, "%8s %10s %10s %10s %8s %9s %11s %10s %5s\n", "packet", "link", "median", "ideal", "of ideal", "cpu busy", "switch cpu", "cpu-bound", "held")
}

// WriteSweepRow writes one rate of the sweep as a line under the header.
func WriteSweepRow(w io.Writer, r SweepRow) {
	fmt.Fprintf(w, "%8d %10s %8.2fms %8.2fms %7.2f× %8.0f%% %5.2f/%.2f %10v %5v\n", r.PacketBytes, FormatRate(r.LinkBps),
		r.MedianS*1e3, r.IdealS*1e3, r.OfIdeal, r.CPUBusy*100, r.SwitchCPU, r.SwitchThreadCPU, r.CPUBound, r.Held)
}

// WriteCapacity writes the sweep's answer for one packet size.
func WriteCapacity(w io.Writer, c Capacity) {
	held := "none"
	if c.HeldBps > 0 {
		held = FormatRate(c.HeldBps)
	}
	line := fmt.Sprintf("capacity at %d-byte packets: %s", c.PacketBytes, held)
	if c.FailedBps > 0 {
		why := "link-bound, over the slack"
		if c.FailedCPU {
			why = "CPU-bound"
		}
		line += fmt.Sprintf(" (%s: %.2f× ideal, %s)", FormatRate(c.FailedBps), c.FailedOfIdeal, why)
	}
	fmt.Fprintln(w, line)
}
