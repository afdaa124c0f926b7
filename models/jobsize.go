package models

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// JobSize is the switch memory one job needs with one design (`flare
// model size`): the model's M, bandwidth and latency, Little's law's 𝓡,
// and what to reserve.
type JobSize struct {
	Algo          string  `json:"algo"`
	Bytes         int64   `json:"bytes"`
	Hosts         int     `json:"hosts"`
	M             float64 `json:"buffers_per_block"`
	BandwidthGbps float64 `json:"bandwidth_gbps"`
	LatencyCycles float64 `json:"latency_cycles"`
	R             float64 `json:"memory_buffers_exact"` // 𝓡 = M·(𝓑/P)·𝓛, before rounding up
	Buffers       int     `json:"memory_buffers"`       // what to reserve: ⌈𝓡⌉, at least one block's peak (JobMemory)
	MemoryBytes   int64   `json:"memory_bytes"`
}

// JobSizes evaluates each design for a job of p.Bytes per host at p.
func JobSizes(p Params, designs []Design) []JobSize {
	rows := make([]JobSize, 0, len(designs))
	for _, d := range designs {
		r := Evaluate(p, d)
		buffers, bytes := JobMemory(p, d)
		rows = append(rows, JobSize{Algo: r.Algo, Bytes: p.Bytes, Hosts: p.Hosts, M: r.M, BandwidthGbps: r.Gbps,
			LatencyCycles: r.Latency, R: r.R, Buffers: buffers, MemoryBytes: bytes})
	}
	return rows
}

// WriteJobSizeTable writes job sizes as an aligned text table under a
// line describing p.
func WriteJobSizeTable(w io.Writer, p Params, rows []JobSize) error {
	fmt.Fprintf(w, "# %s\n", Describe(p))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "design\thosts\tsize\tM\tGbit/s\tlatency\tR\tbuffers\tmemory\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.2f\t%.1f\t%.0f\t%.1f\t%d\t%s\t\n", r.Algo, r.Hosts, FormatBytes(float64(r.Bytes)),
			r.M, r.BandwidthGbps, r.LatencyCycles, r.R, r.Buffers, FormatBytes(float64(r.MemoryBytes)))
	}
	return tw.Flush()
}
