// Package sim runs allreduces in virtual time: P simulated hosts stream
// their vectors, staggered and with exponential gaps as in the paper's
// method, into an hpu.VirtualUnit that runs the real handlers.Dense on
// PsPIN's cycle costs. It checks every result against elem.Check and
// reports τ, bandwidth, latency, memory and queue occupancy in cycles, the
// same for a seed on every run; `flare sim` prints its rows and compares
// them with the analytic model (docs/MODEL.md).
//
//	r, err := sim.Run(sim.Config{HPU: hpu.Config{Clusters: 64}, Hosts: 8,
//		Bytes: 1 << 20, Algo: wire.AlgoTree, Seed: 1})
//	fmt.Println(r.TauCycles, r.BandwidthGbps)
package sim
