package testbed

import (
	"math"
	"testing"

	"github.com/flare-net/flare/models"
)

// A host link carries a Flare datagram per packet (payload, Flare, UDP,
// IPv4 and Ethernet headers) for the in-network paths, and a TCP segment
// per MSS (the MTU less TCP/IP headers) for the host baselines, the last
// one partial.
func TestFraming(t *testing.T) {
	c := Config{PacketBytes: 1024, MTU: 1500}
	mss := 1500.0 - 52
	for _, tc := range []struct {
		path    string
		payload float64
		want    float64
	}{
		{PathSwitch, 3 * 1024, 3 * (1024 + 32 + 28 + 14)},
		{PathSparse, 1024 + 1, 1025 + 2*(32+28+14)},
		{PathRing, 2*mss + 1, 2*mss + 1 + 3*(52+14)},
		{PathHostSparse, mss, mss + 52 + 14},
	} {
		if got := c.framing(tc.path, tc.payload); got != tc.want {
			t.Errorf("%s, %g payload bytes: %g bytes of frames, want %g", tc.path, tc.payload, got, tc.want)
		}
	}
}

// The model of a tree is a fat tree of switches with a port per host of
// a leaf and one up for each, of the hosts' vector, density and overlap.
func TestModelParams(t *testing.T) {
	c := Config{Leaves: 4, PerLeaf: 3, LinkBps: 2e9, Bytes: 8 << 20, Overlap: 0.25}.withDefaults()
	p := c.modelParams(0.01)
	if p.Hosts != 12 || p.Bytes != 8<<20 || p.Topology != models.TopoFatTree || p.SwitchPorts != 6 || p.LinkGbps != 2 ||
		p.Density != 0.01 || p.Overlap != 0.25 || p.ElemBytes != 4 {
		t.Errorf("tree model %+v", p)
	}
	c = Config{Hosts: 5, LinkBps: 1e9, Bytes: 1 << 20}.withDefaults()
	if p := c.modelParams(0); p.Topology != models.TopoSingle || p.SwitchPorts != 10 || p.Hosts != 5 {
		t.Errorf("single-switch model %+v", p)
	}
}

// The sparse paths' ideals: in-network sparse is bound by the union
// coming down the host link, framed per packet, and compared with host
// sparse (as is host sparse itself, 1×), as the ring paths with the ring.
func TestIdealSparse(t *testing.T) {
	c := Config{Hosts: 8, LinkBps: 1e9, Bytes: 16 << 20, Exe: "flare", Overlap: 0.5}.withDefaults()
	model := c.modelRows(0.01)
	in, host := model[models.AlgInNetworkSparse], model[models.AlgHostSparse]
	sp := Row{Path: PathSparse, MedianS: 0.1}
	c.ideal(&sp, model)
	down := in.TimeS * c.LinkBps / 8
	if headers := math.Ceil(down/1024) * (32 + 28 + 14) / (c.LinkBps / 8); sp.ModelS != in.TimeS || math.Abs(sp.IdealS-in.TimeS-headers) > 1e-12 {
		t.Errorf("in-network sparse: model %v, ideal %v; want %v and that with %v of headers on the union", sp.ModelS, sp.IdealS, in.TimeS, headers)
	}
	if sp.ModelVsRing != host.TimeS/in.TimeS || sp.OfIdeal != 0.1/sp.IdealS {
		t.Errorf("in-network sparse: model vs host sparse %v, of ideal %v", sp.ModelVsRing, sp.OfIdeal)
	}
	hs := Row{Path: PathHostSparse, MedianS: 0.1}
	c.ideal(&hs, model)
	if hs.ModelS != host.TimeS || hs.ModelVsRing != 1 || hs.IdealS <= host.TimeS {
		t.Errorf("host sparse: model %v (want %v), model vs itself %v, ideal %v", hs.ModelS, host.TimeS, hs.ModelVsRing, hs.IdealS)
	}
}

// A row is CPU-bound when it is over the slack and anything was saturated:
// the machine, a daemon, one of its threads, or a host.
func TestCPUBound(t *testing.T) {
	for _, tc := range []struct {
		r    Row
		want bool
	}{
		{Row{OfIdeal: 1.2, HostCPU: BusyProcess}, true},
		{Row{OfIdeal: 1.2, SwitchThreadCPU: BusyProcess}, true},
		{Row{OfIdeal: 1.2, SwitchCPU: BusyProcess}, true},
		{Row{OfIdeal: 1.2, CPUBusy: BusyCPU}, true},
		{Row{OfIdeal: 1.2, HostCPU: 0.89, CPUBusy: 0.89}, false},
		{Row{OfIdeal: IdealSlack, CPUBusy: 1, HostCPU: 1}, false},
	} {
		if got := tc.r.cpuBound(); got != tc.want {
			t.Errorf("%+v: CPU-bound %v, want %v", tc.r, got, tc.want)
		}
	}
}
