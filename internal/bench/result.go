package bench

import "slices"

// Result is one measured configuration: the row `flare allreduce --json`
// prints, and the allreduce part of every `flare bench --json` row. Every
// field is always present, zero where it does not apply, so a reader can
// rely on the schema (docs/PERFORMANCE.md lists it).
type Result struct {
	Ranks   int     `json:"ranks"` // the world size P
	Bytes   int64   `json:"bytes"` // the (dense) vector per rank
	DType   string  `json:"dtype"`
	Op      string  `json:"op"`
	Algo    string  `json:"algo"`
	Iters   int     `json:"iters"`
	MedianS float64 `json:"median_s"`
	P99S    float64 `json:"p99_s"`
	// AlgbwGBps is Bytes over the median call, in GB/s; BusbwGBps is
	// AlgbwGBps × 2(P−1)/P, the bus bandwidth nccl-tests report for an
	// allreduce: the rate each rank's link would carry in a ring
	// allreduce of this time, comparable across P.
	AlgbwGBps   float64 `json:"algbw_GBps"`
	BusbwGBps   float64 `json:"busbw_GBps"`
	Verified    bool    `json:"verified"`
	Retransmits int64   `json:"retransmits"` // over every call, warmup included, over the local ranks
	// PacketBytes is the payload per packet the switch (or relay) granted
	// the hosts of a dense in-network call: 0 for the ring, sparse calls
	// and the peers, which send no dense switch packets.
	PacketBytes int `json:"packet_bytes"`
	// Bounded time (Config.Deadline) and injected tails (Config.TailRatio).
	DeadlineMS      float64 `json:"deadline_ms"`
	TailRatio       float64 `json:"tail_ratio"`
	DroppedFraction float64 `json:"dropped_fraction"` // contributions left out of partial results
	PartialBlocks   int64   `json:"partial_blocks"`   // per call, over the local ranks
	// Payload bytes (UDP, or TCP for the ring) the local ranks sent and
	// received per measured call.
	TxBytes int64 `json:"tx_bytes"`
	RxBytes int64 `json:"rx_bytes"`
	// Sparse runs: the density asked for, the storage (hash, array; host
	// for the ring) and the pairs the switch spilled per call over the
	// local ranks.
	Density      float64 `json:"density"`
	Storage      string  `json:"storage"`
	SpilledPairs int64   `json:"spilled_pairs"`
	// RanksUserS and RanksSysS are the CPU seconds per measured call, user
	// and kernel, that the processes running the ranks spent inside the
	// calls (from each call's start to its end, the filling and checking
	// between calls left out), summed over the rank processes: with the
	// switch's (a row's server CPU), what a call costs the box. With ranks
	// in one process, that process's; 0 in a `flare bench` row whose ranks
	// share their process with the embedded switch or relay, and where the
	// CPU time cannot be read.
	RanksUserS float64 `json:"ranks_user_s"`
	RanksSysS  float64 `json:"ranks_sys_s"`
}

// summarise fills the time fields from the measured calls' times.
func (r *Result) summarise(times []float64) {
	slices.Sort(times)
	r.MedianS = times[len(times)/2]
	r.P99S = times[min(len(times)-1, (len(times)*99+99)/100-1)]
	r.setBandwidth()
}

// setBandwidth derives the bandwidths from Bytes, Ranks and MedianS.
func (r *Result) setBandwidth() {
	r.AlgbwGBps = float64(r.Bytes) / r.MedianS / 1e9
	r.BusbwGBps = Busbw(r.AlgbwGBps, r.Ranks)
}

// Busbw is nccl-tests' bus bandwidth of an allreduce among p ranks:
// algbw × 2(p−1)/p (0 for one rank, which moves nothing).
func Busbw(algbw float64, p int) float64 {
	if p < 1 {
		return 0
	}
	return algbw * 2 * float64(p-1) / float64(p)
}
