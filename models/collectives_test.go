package models

import (
	"math"
	"strings"
	"testing"
)

// findCollective returns the row of alg on topo, failing the test if absent.
func findCollective(t *testing.T, rows []CollectiveRow, topo Topology, alg string) CollectiveRow {
	t.Helper()
	for _, r := range rows {
		if r.Topology == topo && r.Algorithm == alg {
			return r
		}
	}
	t.Fatalf("no %s row on %s", alg, topo)
	return CollectiveRow{}
}

func near(a, b, rel float64) bool { return math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b)) }

// beyond reports whether d, a result's difference from what it should be,
// is more than tol away from 0; a NaN always is (|NaN| > tol is false, so
// a formula that gave NaN passed the plain comparison).
func beyond(d, tol float64) bool { return !(math.Abs(d) <= tol) }

// TestFigure15 is the analogue of the paper's Figure 15: 64 hosts on a
// two-level fat tree of 8-port 100 Gbit/s switches, 100 MiB of float32.
func TestFigure15(t *testing.T) {
	c := Figure15Params()
	rows := Collectives(c)
	if len(rows) != 7 {
		t.Fatalf("got %d rows, want 7 (5 dense, 2 sparse) on the fat tree", len(rows))
	}
	ring := findCollective(t, rows, TopoFatTree, AlgRing)
	dense := findCollective(t, rows, TopoFatTree, AlgInNetworkDense)
	hostSparse := findCollective(t, rows, TopoFatTree, AlgHostSparse)
	sparse := findCollective(t, rows, TopoFatTree, AlgInNetworkSparse)
	Z := float64(c.Bytes)
	P := float64(c.Hosts)

	// Ring: 2(P−1) steps of Z/P; 48 of the 64 ring links stay in a leaf
	// (2 links), 16 cross the spine (4 links).
	if want := 2 * (P - 1) / P * Z; !near(ring.HostBytes, want, 1e-12) {
		t.Errorf("ring sends %g bytes per host, want 2(P-1)/P·Z = %g", ring.HostBytes, want)
	}
	if want := 2 * (P - 1) / P * Z * (48*2 + 16*4); !near(ring.WireBytes, want, 1e-12) {
		t.Errorf("ring traffic %g, want %g", ring.WireBytes, want)
	}
	// In-network: Z up and down on every host link, and once per leaf on
	// the leaf-spine links: 2Z(P + leaves).
	if want := 2 * Z * (P + 16); !near(dense.WireBytes, want, 1e-12) {
		t.Errorf("in-network dense traffic %g, want %g", dense.WireBytes, want)
	}
	if want := Z / (c.LinkGbps * 1e9 / 8); dense.TimeS < want || dense.TimeS > want*1.01 {
		t.Errorf("in-network dense time %g s, want Z/bandwidth = %g s plus a round trip", dense.TimeS, want)
	}
	// The paper: "more than 2x speedup ... and a 2x reduction in the network traffic".
	if s := ring.TimeS / dense.TimeS; s < 1.95 || s > 2.1 {
		t.Errorf("in-network dense is %.2fx faster than the ring, want about 2x", s)
	}
	if r := ring.WireBytes / dense.WireBytes; r < 1.9 || r > 2.1 {
		t.Errorf("in-network dense moves %.2fx less than the ring, want about 2x", r)
	}
	// Sparse at 0.2%: in-network sparse beats host sparse on traffic and
	// time, and both beat in-network dense on time.
	if !(sparse.WireBytes < hostSparse.WireBytes/3) {
		t.Errorf("in-network sparse traffic %g not well below host sparse %g", sparse.WireBytes, hostSparse.WireBytes)
	}
	if !(sparse.TimeS < hostSparse.TimeS && hostSparse.TimeS < dense.TimeS) {
		t.Errorf("times: in-network sparse %g, host sparse %g, in-network dense %g: want increasing", sparse.TimeS, hostSparse.TimeS, dense.TimeS)
	}
	// Each host sends its 0.2% as (index, value) pairs: 8 bytes each.
	if want := 0.002 * Z / 4 * 8; !near(sparse.HostBytes, want, 1e-9) {
		t.Errorf("in-network sparse sends %g bytes per host, want %g", sparse.HostBytes, want)
	}
}

func TestCollectivesSingleSwitch(t *testing.T) {
	c := Figure15Params()
	c.Topology = TopoSingle
	c.Hosts = 16
	c.LinkLatencyNs = 0
	rows := Collectives(c)
	Z := float64(c.Bytes)
	bw := c.LinkGbps * 1e9 / 8
	for _, alg := range []string{AlgRing, AlgDirect, AlgHalvingDoubling, AlgHierarchical} {
		r := findCollective(t, rows, TopoSingle, alg)
		// Every bandwidth-optimal host algorithm sends 2(P−1)/P·Z per host
		// over two links, and with no latency takes that over the link.
		want := 2 * 15.0 / 16 * Z
		if !near(r.HostBytes, want, 1e-12) || !near(r.WireBytes, 2*16*want, 1e-12) || !near(r.TimeS, want/bw, 1e-12) {
			t.Errorf("%s: host %g wire %g time %g; want %g, %g, %g", alg, r.HostBytes, r.WireBytes, r.TimeS, want, 2*16*want, want/bw)
		}
	}
	if r := findCollective(t, rows, TopoSingle, AlgHalvingDoubling); r.Steps != 8 {
		t.Errorf("halving-doubling over 16 hosts: %d steps, want 2·log2 16 = 8", r.Steps)
	}
	if r := findCollective(t, rows, TopoSingle, AlgRing); r.Steps != 30 {
		t.Errorf("ring over 16 hosts: %d steps, want 30", r.Steps)
	}
	// A non-power of two adds the fold-in and fold-out steps.
	c.Hosts = 12
	if r := findCollective(t, Collectives(c), TopoSingle, AlgHalvingDoubling); r.Steps != 2*3+2 {
		t.Errorf("halving-doubling over 12 hosts: %d steps, want 8", r.Steps)
	}
}

func TestCollectivesOverlap(t *testing.T) {
	c := Figure15Params()
	c.Overlap = 1 // every host has the same indices: the union is one host's set
	md := model{c: c, elems: float64(c.Bytes) / 4}
	if u, want := md.union(64), 0.002*md.elems; !near(u, want, 1e-12) {
		t.Errorf("union with full overlap = %g, want %g", u, want)
	}
	c.Overlap = 0
	md.c = c
	if u, want := md.union(2), md.elems*(1-math.Pow(1-0.002, 2)); !near(u, want, 1e-12) {
		t.Errorf("union of 2 independent hosts = %g, want %g", u, want)
	}
	// More overlap, less sparse traffic.
	prev := math.Inf(1)
	for _, o := range []float64{0, 0.5, 1} {
		c.Overlap = o
		r := findCollective(t, Collectives(c), TopoFatTree, AlgInNetworkSparse)
		if !(r.WireBytes < prev) {
			t.Errorf("overlap %g: traffic %g not below %g", o, r.WireBytes, prev)
		}
		prev = r.WireBytes
	}
}

func TestCollectiveParamsValidate(t *testing.T) {
	cases := []struct {
		field string
		mut   func(*CollectiveParams)
	}{
		{"Hosts", func(c *CollectiveParams) { c.Hosts = 1 }},
		{"Bytes", func(c *CollectiveParams) { c.Bytes = 0 }},
		{"ElemBytes", func(c *CollectiveParams) { c.ElemBytes = 3 }},
		{"IndexBytes", func(c *CollectiveParams) { c.IndexBytes = 0 }},
		{"Density", func(c *CollectiveParams) { c.Density = 1.5 }},
		{"Overlap", func(c *CollectiveParams) { c.Overlap = -1 }},
		{"LinkGbps", func(c *CollectiveParams) { c.LinkGbps = 0 }},
		{"LinkLatencyNs", func(c *CollectiveParams) { c.LinkLatencyNs = math.NaN() }},
		{"StepOverheadNs", func(c *CollectiveParams) { c.StepOverheadNs = -1 }},
		{"SwitchPorts", func(c *CollectiveParams) { c.SwitchPorts = 7 }},
		{"SwitchGbps", func(c *CollectiveParams) { c.SwitchGbps = -1 }},
		{"SpillRatio", func(c *CollectiveParams) { c.SpillRatio = 0.5 }},
		{"Topology", func(c *CollectiveParams) { c.Topology = "torus" }},
	}
	if err := Figure15Params().Validate(); err != nil {
		t.Fatalf("Figure15Params: %v", err)
	}
	for _, tc := range cases {
		c := Figure15Params()
		tc.mut(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), "CollectiveParams."+tc.field+" ") {
			t.Errorf("%s: error %v does not name the field", tc.field, err)
		}
		if Collectives(c) != nil {
			t.Errorf("%s: Collectives returned rows for invalid params", tc.field)
		}
	}
}

func TestCollectivesSwitchBound(t *testing.T) {
	c := Figure15Params()
	c.SwitchGbps = 200 // a leaf folds 4 × 100 Gbit/s: half speed
	r := findCollective(t, Collectives(c), TopoFatTree, AlgInNetworkDense)
	want := 4 * float64(c.Bytes) / (200e9 / 8)
	if r.TimeS < want || r.TimeS > want*1.01 {
		t.Errorf("switch-bound in-network time %g, want about %g", r.TimeS, want)
	}
}

// A fat tree whose last leaf is not full still has that leaf: 5 hosts on
// leaves of 2 are 3 leaves, each sending one aggregate up and getting the
// result down, 2·Z·(P + leaves) on the wire.
func TestCollectivesPartialLeaf(t *testing.T) {
	c := Figure15Params()
	c.Topology = TopoFatTree
	c.Hosts, c.SwitchPorts = 5, 4
	r := findCollective(t, Collectives(c), TopoFatTree, AlgInNetworkDense)
	if Z := float64(c.Bytes); !near(r.WireBytes, 2*Z*(5+3), 1e-12) {
		t.Errorf("in-network dense over 5 hosts, 2 a leaf: wire %g, want 2·Z·(5+3) = %g", r.WireBytes, 2*Z*8)
	}
}
