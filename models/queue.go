package models

import "math"

// queue returns the mean number of packets in one cluster's input buffers
// (waiting or being processed) and the mean time a packet waits for a
// core, at throughput bw packets per cycle and service time tau.
//
// The paper's §5 scheduler sends the packets of a block to a subset of S
// cores of its home cluster, so each cluster is C/S independent S-server
// queues, each fed bw·S/K packets per cycle; arrivals are exponential (the
// paper's simulation, §6) and the service time is close to constant. We
// use the Allen–Cunneen approximation of the G/G/S queue: the M/M/S
// (Erlang C) waiting time scaled by (c_a² + c_s²)/2 = 1/2. Reducing τ
// lowers the occupancy, and so does raising S at the same τ; that is the
// trade-off §6 discusses ("by reducing τ we would decrease the input
// buffers occupancy. However, this increase might be canceled out because
// we are also decreasing S").
//
// A switch running at K/τ (utilisation 1) has no finite mean queue: the
// hosts' windows keep its buffers full, so the occupancy is the bound Q
// (Params.QueueDepth) and the wait follows from Little's law.
func queue(p Params, tau, bw float64) (occ, wait float64) {
	K := float64(p.Cores())
	S := p.SubsetS
	rho := bw * tau / K
	capOcc := float64(p.QueueDepth)
	if rho < 1-1e-9 {
		lambdaS := bw * float64(S) / K
		a := lambdaS * tau // busy servers of one subset
		lq := erlangC(S, a) * rho / (1 - rho) / 2
		occ = float64(p.CoresPerCluster) / float64(S) * (lq + a)
		if occ <= capOcc {
			return occ, lq / lambdaS
		}
	}
	lambdaC := bw / float64(p.Clusters)
	return capOcc, math.Max(0, capOcc/lambdaC-tau)
}

// erlangC is the probability that an arrival waits in an M/M/s queue with
// offered load a < s (Erlang's C formula), from the Erlang B recursion,
// which is stable for large s.
func erlangC(s int, a float64) float64 {
	b := 1.0
	for k := 1; k <= s; k++ {
		b = a * b / (float64(k) + a*b)
	}
	return float64(s) * b / (float64(s) - a*(1-b))
}
