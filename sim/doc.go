// Package sim runs allreduces in virtual time: P simulated hosts stream
// their vectors, staggered and with exponential gaps as in the paper's
// method, into an hpu.VirtualUnit that runs the real handlers.Dense on
// PsPIN's cycle costs. It checks every result against elem.Check and
// reports τ, bandwidth, latency, memory and queue occupancy in cycles, the
// same for a seed on every run. It knows nothing of the analytic model:
// package sim/sweep runs it over designs and sizes for `flare sim` and
// sets the model beside each run (docs/MODEL.md).
//
//	r, err := sim.Run(sim.Config{HPU: hpu.Config{Clusters: 64}, Hosts: 8,
//		Bytes: 1 << 20, Algo: wire.AlgoTree, Seed: 1})
//	fmt.Println(r.TauCycles, r.BandwidthGbps)
package sim
