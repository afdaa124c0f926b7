package bench

import (
	"slices"
	"strings"
	"testing"
	"time"

	swtch "github.com/flare-net/flare/switch"
	"github.com/flare-net/flare/wire"
)

// row is a measured row of path at packet size pk.
func row(path string, median float64, pk int) *Row {
	return &Row{Path: path, Result: Result{MedianS: median, PacketBytes: pk}}
}

func TestParsePeerRows(t *testing.T) {
	good := `{"path":"mpi-tcp","ranks":8,"bytes":1048576,"dtype":"float32","op":"sum","algo":"tuned","iters":5,"median_s":0.08,"p99_s":0.09,"algbw_GBps":0.013,"verified":true,"retransmits":0,"tx_bytes":0,"rx_bytes":0,"packet_bytes":0,"vs_ring":0,"of_relay":0,"of_fanout":0}`
	p, err := ParsePeers(strings.NewReader("\n"+good+"\n\n"+strings.Replace(good, "mpi-tcp", "gloo-ring", 1)+"\n"), "f")
	if err != nil || len(p.rows) != 2 || p.rows[1].Path != "gloo-ring" || p.rows[0].MedianS != 0.08 {
		t.Fatalf("parsePeerRows: %+v, %v; want the two rows", p, err)
	}
	if got := p.at(8, 1<<20, "int32", "sum"); len(got) != 0 || p.Unused() != 2 {
		t.Errorf("at(8, 1MiB, int32) = %d rows, %d unused; want 0, 2", len(got), p.Unused())
	}
	if got := p.at(8, 1<<20, "float32", "max"); len(got) != 0 || p.Unused() != 2 {
		t.Errorf("at(8, 1MiB, float32 max) = %d rows, %d unused; want 0, 2", len(got), p.Unused())
	}
	if got := p.at(8, 1<<20, "float32", "sum"); len(got) != 2 || p.Unused() != 0 {
		t.Errorf("at(8, 1MiB, float32) = %d rows, %d unused; want 2, 0", len(got), p.Unused())
	}
	for _, tc := range []struct{ from, to, err string }{
		{`"path":"mpi-tcp"`, `"path":"switch"`, `line 1: path "switch"`},
		{`"path":"mpi-tcp"`, `"path":""`, `path ""`},
		{`"ranks":8`, `"ranks":0`, "ranks 0: must be in 1..1024"},
		{`"ranks":8`, `"ranks":1025`, "ranks 1025: must be in 1..1024"},
		{`"bytes":1048576`, `"bytes":0`, "bytes 0: must be in 1..1GiB"},
		{`"bytes":1048576`, `"bytes":1073741825`, "bytes 1073741825: must be in 1..1GiB"},
		{`"median_s":0.08`, `"median_s":0`, "median_s 0 p99_s 0.09"},
		{`"p99_s":0.09`, `"p99_s":0.01`, "p99 >= median"},
		{`"packet_bytes":0`, `"packet_bytes":1024`, "packet_bytes 1024"},
		{`"verified":true`, `"verifed":true`, `unknown field "verifed"`},
		{`{`, `[`, "not a flare bench --json row"},
	} {
		_, err := ParsePeers(strings.NewReader(strings.Replace(good, tc.from, tc.to, 1)), "f")
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, want %q", tc.to, err, tc.err)
		}
	}
	// A row may be long (a library's own fields, spaces): up to 1 MiB.
	long := strings.Replace(good, "}", strings.Repeat(" ", 100<<10)+"}", 1)
	if p, err := ParsePeers(strings.NewReader(long+"\n"+good), "f"); err != nil || len(p.rows) != 2 {
		t.Errorf("a 100 KiB row: %v", err)
	}
}

// Peers are compared with the ring and the first packet size's relays,
// and every row with the faster peer.
func TestGroupRowsPeers(t *testing.T) {
	res := map[leg]*Row{
		{"switch", 1024}: row("switch", 4, 1024), {"switch", 8192}: row("switch", 2, 8192),
		{"ring", 0}: row("ring", 8, 0), {"relay", 1024}: row("relay", 1, 1024), {"relay", 8192}: row("relay", 0.5, 8192),
	}
	peers := []Row{{Path: "mpi-tcp", Result: Result{MedianS: 5}}, {Path: "gloo-ring", Result: Result{MedianS: 10}}}
	rows := groupRows(res, peers, []int{1024, 8192})
	var got []string
	for _, r := range rows {
		got = append(got, r.Path)
	}
	if want := []string{"switch", "switch", "ring", "relay", "relay", "mpi-tcp", "gloo-ring"}; !slices.Equal(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	for i, want := range []struct{ overPeer, vsRing, ofRelay float64 }{
		{4.0 / 5, 2, 0.25}, {2.0 / 5, 4, 0.25}, {8.0 / 5, 1, 1.0 / 8}, {1.0 / 5, 8, 1}, {0.5 / 5, 16, 1}, {1, 8.0 / 5, 1.0 / 5}, {2, 0.8, 0.1},
	} {
		r := rows[i]
		if r.OverBestPeer != want.overPeer || r.VsRing != want.vsRing || r.OfRelay != want.ofRelay || r.OfFanout != 0 {
			t.Errorf("row %d (%s): over_best_peer %v vs_ring %v of_relay %v of_fanout %v, want %v %v %v 0",
				i, r.Path, r.OverBestPeer, r.VsRing, r.OfRelay, r.OfFanout, want.overPeer, want.vsRing, want.ofRelay)
		}
	}
}

// Suite.Validate names a packet size the switch refuses, one given twice,
// and a sparse table asked for several sizes or for peers.
func TestSuiteValidatePackets(t *testing.T) {
	ok := Suite{Ranks: []int{2}, Sizes: []int64{1 << 10}, Paths: []string{PathSwitch}, DType: wire.Float32, Op: wire.OpSum,
		Algo: "auto", Iters: 1, Timeout: time.Second, Packets: []int{1024, 8192}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("Validate(%+v): %v", ok, err)
	}
	for _, tc := range []struct {
		edit func(*Suite)
		err  string
	}{
		{func(s *Suite) { s.Packets = []int{12} }, "Suite.Packets 12: must be a multiple of 8 in 8..8192"},
		{func(s *Suite) { s.Packets = []int{16384} }, "Suite.Packets 16384: must be a multiple of 8"},
		{func(s *Suite) { s.Packets = []int{1024, 1024} }, "Suite.Packets 1024: given twice"},
		{func(s *Suite) { s.Sparse, s.Densities = true, []float64{0.1} }, "Suite.Sparse with Suite.Peers or several Suite.Packets"},
		{func(s *Suite) { s.Packets, s.Sparse, s.Peers = nil, true, &Peers{} }, "Suite.Sparse with Suite.Peers"},
	} {
		s := ok
		tc.edit(&s)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("Validate(%+v): %v, want %q", s, err, tc.err)
		}
	}
	if got := (Suite{}).packets(); !slices.Equal(got, []int{swtch.DefaultPacketBytes}) {
		t.Errorf("packets() without Suite.Packets = %v, want the switch's default", got)
	}
}

// Each row is held to the fan-out relay of its own kind: the multicast
// rows to the multicast relay where it was measured, the unicast one
// otherwise.
func TestGroupRowsFanout(t *testing.T) {
	res := map[leg]*Row{
		{PathSwitch, 1024}: row(PathSwitch, 4, 1024), {PathMulticast, 1024}: row(PathMulticast, 2, 1024),
		{PathFanout, 1024}: row(PathFanout, 3, 1024), {PathFanoutMC, 1024}: row(PathFanoutMC, 1, 1024),
	}
	want := map[string]float64{PathSwitch: 3.0 / 4, PathMulticast: 1.0 / 2, PathFanout: 1, PathFanoutMC: 1}
	for _, r := range groupRows(res, nil, []int{1024}) {
		if r.OfFanout != want[r.Path] {
			t.Errorf("%s: of_fanout %v, want %v", r.Path, r.OfFanout, want[r.Path])
		}
	}
	delete(res, leg{PathFanoutMC, 1024})
	for _, r := range groupRows(res, nil, []int{1024}) {
		if r.Path == PathMulticast && r.OfFanout != 3.0/2 {
			t.Errorf("switch-mc without fanout-mc: of_fanout %v, want the unicast relay's 1.5", r.OfFanout)
		}
	}
}
