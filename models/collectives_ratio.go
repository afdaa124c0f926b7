package models

import (
	"fmt"
	"io"
)

// CollectiveRatio is how an in-network algorithm compares with the host
// algorithm it replaces on one topology: the claims of the paper's §7.1
// (dense: > 2x faster, 2x less traffic; sparse: up to 20x less).
type CollectiveRatio struct {
	Topology  Topology
	Algorithm string  // the in-network algorithm
	Baseline  string  // the algorithm it is set against
	Faster    float64 // Baseline's time over Algorithm's
	LessWire  float64 // Baseline's network traffic over Algorithm's
}

// collectivePairs are the comparisons CollectiveRatios makes, in order.
var collectivePairs = [][2]string{{AlgInNetworkDense, AlgRing}, {AlgInNetworkSparse, AlgHostSparse},
	{AlgInNetworkSparse, AlgInNetworkDense}}

// CollectiveRatios compares, topology by topology in the order of rows,
// in-network dense with the ring, in-network sparse with host sparse,
// and in-network sparse with in-network dense, where rows hold both and
// the in-network row's time and traffic are positive.
func CollectiveRatios(rows []CollectiveRow) []CollectiveRatio {
	get := func(t Topology, alg string) (CollectiveRow, bool) {
		for _, r := range rows {
			if r.Topology == t && r.Algorithm == alg {
				return r, true
			}
		}
		return CollectiveRow{}, false
	}
	var seen []Topology
	for _, r := range rows {
		if len(seen) == 0 || seen[len(seen)-1] != r.Topology {
			seen = append(seen, r.Topology)
		}
	}
	var out []CollectiveRatio
	for _, t := range seen {
		for _, cmp := range collectivePairs {
			a, ok1 := get(t, cmp[0])
			o, ok2 := get(t, cmp[1])
			if !ok1 || !ok2 || a.TimeS <= 0 || a.WireBytes <= 0 {
				continue
			}
			out = append(out, CollectiveRatio{Topology: t, Algorithm: cmp[0], Baseline: cmp[1],
				Faster: o.TimeS / a.TimeS, LessWire: o.WireBytes / a.WireBytes})
		}
	}
	return out
}

// WriteCollectiveRatios prints the ratios one line each.
func WriteCollectiveRatios(w io.Writer, ratios []CollectiveRatio) error {
	for _, r := range ratios {
		if _, err := fmt.Fprintf(w, "%s: %s vs %s: %.2fx faster, %.2fx less traffic\n", r.Topology, r.Algorithm, r.Baseline,
			r.Faster, r.LessWire); err != nil {
			return err
		}
	}
	return nil
}

// DescribeCollectives is a one-line summary of c, printed above the
// collectives' table; dtype names the element type.
func DescribeCollectives(c CollectiveParams, dtype string) string {
	return fmt.Sprintf("%d hosts, %s of %s per host, %g Gbit/s links, %g ns per link, %d-port switches, density %g, overlap %g",
		c.Hosts, FormatBytes(float64(c.Bytes)), dtype, c.LinkGbps, c.LinkLatencyNs, c.SwitchPorts, c.Density, c.Overlap)
}
