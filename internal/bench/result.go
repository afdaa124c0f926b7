package bench

import "slices"

// Result is one measured configuration: the row `flare allreduce --json`
// prints, and the allreduce part of every `flare bench --json` row.
type Result struct {
	Ranks       int     `json:"ranks"` // the world size P
	Bytes       int64   `json:"bytes"` // the (dense) vector per rank
	DType       string  `json:"dtype"`
	Op          string  `json:"op"`
	Algo        string  `json:"algo"`
	Iters       int     `json:"iters"`
	MedianS     float64 `json:"median_s"`
	P99S        float64 `json:"p99_s"`
	AlgbwGBps   float64 `json:"algbw_GBps"` // Bytes over the median call, in GB/s
	Verified    bool    `json:"verified"`
	Retransmits int64   `json:"retransmits"` // over every call, warmup included, over the local ranks
	// Bounded time (Config.Deadline) and injected tails (Config.TailRatio).
	DeadlineMS      float64 `json:"deadline_ms,omitempty"`
	TailRatio       float64 `json:"tail_ratio,omitempty"`
	DroppedFraction float64 `json:"dropped_fraction,omitempty"` // contributions left out of partial results
	PartialBlocks   int64   `json:"partial_blocks,omitempty"`   // per call, over the local ranks
	// Payload bytes (UDP, or TCP for the ring) the local ranks sent and
	// received per measured call.
	TxBytes int64 `json:"tx_bytes"`
	RxBytes int64 `json:"rx_bytes"`
	// Sparse runs: the density asked for, the storage (hash, array; host
	// for the ring) and the pairs the switch spilled per call over the
	// local ranks.
	Density      float64 `json:"density,omitempty"`
	Storage      string  `json:"storage,omitempty"`
	SpilledPairs int64   `json:"spilled_pairs,omitempty"`
}

// summarise fills the time fields from the measured calls' times.
func (r *Result) summarise(times []float64) {
	slices.Sort(times)
	r.MedianS = times[len(times)/2]
	r.P99S = times[min(len(times)-1, (len(times)*99+99)/100-1)]
	r.setBandwidth()
}

// setBandwidth derives the bandwidth from Bytes and MedianS.
func (r *Result) setBandwidth() {
	r.AlgbwGBps = float64(r.Bytes) / r.MedianS / 1e9
}
