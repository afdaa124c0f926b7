package testbed

import (
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/flare-net/flare/internal/bench"
	"github.com/flare-net/flare/wire"
)

// A host's `flare allreduce --json` row reads into hostResult as the
// bench.Result that printed it, and the testbed's row folds the hosts':
// the slowest host's times, the sums of the counts, bench's bus bandwidth.
func TestHostResultsFold(t *testing.T) {
	hosts := []bench.Result{
		{Ranks: 2, Bytes: 1 << 20, DType: "float32", Op: "sum", Algo: "single", Iters: 3, MedianS: 0.002, P99S: 0.003,
			Verified: true, Retransmits: 1, TxBytes: 100, RxBytes: 200, Density: 0.01, Storage: "hash", SpilledPairs: 5},
		{Ranks: 2, Bytes: 1 << 20, DType: "float32", Op: "sum", Algo: "single", Iters: 3, MedianS: 0.004, P99S: 0.0035,
			Verified: true, Retransmits: 2, TxBytes: 10, RxBytes: 20, Density: 0.01, Storage: "hash", SpilledPairs: 7},
	}
	results := make([]hostResult, len(hosts))
	for i, h := range hosts {
		b, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &results[i]); err != nil {
			t.Fatal(err)
		}
		if results[i].Result != h {
			t.Errorf("host %d: read %+v, printed %+v", i, results[i].Result, h)
		}
	}
	c := &cluster{cfg: Config{Hosts: 2, LinkBps: 1e9, PacketBytes: 1024}}
	r := c.row(PathSparse, 0.01, results)
	if r.MedianS != 0.004 || r.P99S != 0.0035 || r.Retransmits != 3 || r.TxBytes != 110 || r.RxBytes != 220 || r.SpilledPairs != 12 ||
		r.Ranks != 2 || r.Storage != "hash" || r.Algo != "single" {
		t.Errorf("row %+v", r)
	}
	if want := float64(1<<20) / 0.004 / 1e9; r.AlgbwGBps != want || r.BusbwGBps != bench.Busbw(want, 2) {
		t.Errorf("algbw %g busbw %g, want %g and %g", r.AlgbwGBps, r.BusbwGBps, want, bench.Busbw(want, 2))
	}
}

// A host's command line: the switches, its rank and the call's shape on
// every path; the ring's peers (each host's link address and the ring
// port) on the host paths; the density and overlap on the sparse ones;
// --verify only on the checked launch; --no-offload only with loss.
func TestHostArgs(t *testing.T) {
	c := &cluster{cfg: Config{Hosts: 3, Bytes: 1 << 20, DType: wire.Float64, Overlap: 0.25, Timeout: 7 * time.Second, Exe: "/x/flare"},
		switches: "10.203.0.1:7470"}
	peers := "10.201.0.2:7600,10.201.1.2:7600,10.201.2.2:7600"
	for _, tc := range []struct {
		path    string
		hr      hostRun
		loss    float64
		density float64
		extra   []string
	}{
		{PathSwitch, hostRun{iters: 1, verify: true}, 0, 0, []string{"--verify"}},
		{PathSwitch, hostRun{iters: 5, warmup: 2}, 0.01, 0, []string{"--no-offload"}},
		{PathRing, hostRun{iters: 5, warmup: 2}, 0, 0, []string{"--algo", "ring", "--peers", peers}},
		{PathSparse, hostRun{iters: 5, warmup: 2}, 0, 0.05, []string{"--sparse", "--density", "0.05", "--overlap", "0.25"}},
		{PathHostSparse, hostRun{iters: 1, verify: true}, 0.02, 0.5, []string{"--verify", "--algo", "ring", "--peers", peers,
			"--sparse", "--density", "0.5", "--overlap", "0.25", "--no-offload"}},
	} {
		c.cfg.Loss = tc.loss
		got := c.hostArgs(tc.path, tc.density, 42, 99, 2, tc.hr)
		want := append([]string{"/x/flare", "allreduce", "--switch", "10.203.0.1:7470", "--rank", "2", "--world", "3",
			"--job", "42", "--token", "99", "--count", "131072", "--dtype", "float64",
			"--iters", strconv.Itoa(tc.hr.iters), "--warmup", strconv.Itoa(tc.hr.warmup), "--timeout", "7s", "--json"}, tc.extra...)
		if !slices.Equal(got, want) {
			t.Errorf("%s %+v loss %g:\n got %q\nwant %q", tc.path, tc.hr, tc.loss, got, want)
		}
	}
}

// Every row's vs_ring is its density's baseline over its own time: the
// ring's for the dense paths, the host sparse row's for the sparse ones;
// a density with no baseline, or a row with no time, has none.
func TestSetVsRing(t *testing.T) {
	rows := []Row{
		{Path: PathSwitch, MedianS: 0.5},
		{Path: PathRing, MedianS: 2},
		{Path: PathSparse, Density: 0.01, MedianS: 0.25},
		{Path: PathHostSparse, Density: 0.01, MedianS: 1},
		{Path: PathSparse, Density: 0.1, MedianS: 0.5},
		{Path: PathSwitch, MedianS: 0},
	}
	setVsRing(rows)
	for i, want := range []float64{4, 1, 4, 1, 0, 0} {
		if rows[i].VsRing != want {
			t.Errorf("row %d (%s, density %g): vs_ring %g, want %g", i, rows[i].Path, rows[i].Density, rows[i].VsRing, want)
		}
	}
}

// The links' counters become bytes per call each way (warmup calls
// counted), drops and losses over both ends, the share of the link's rate in the
// median call; the host links' means leave the uplinks out.
func TestLinkRow(t *testing.T) {
	c := &cluster{cfg: Config{Leaves: 2, PerLeaf: 1, Iters: 3, Warmup: 1}, links: []*link{
		{name: "h0", rateBps: 1e6}, {name: "h1", rateBps: 1e6}, {name: "leaf0-root", rateBps: 2e6}}}
	before := [][2]qdiscStats{{{Bytes: 100, Drops: 1, Lost: 5}, {Bytes: 50, Lost: 1}}, {{Bytes: 0}, {Bytes: 0, Drops: 2}}, {{Bytes: 10}, {Bytes: 20}}}
	after := [][2]qdiscStats{{{Bytes: 4100, Drops: 2, Lost: 9}, {Bytes: 8050, Drops: 3, Lost: 11}}, {{Bytes: 12000}, {Bytes: 400, Drops: 2}}, {{Bytes: 410}, {Bytes: 820, Lost: 7}}}
	r := Row{MedianS: 0.5}
	c.linkRow(&r, before, after)
	want := []LinkStat{
		{Link: "h0", UpBytes: 1000, DownBytes: 2000, UpUtil: 1000 * 8 / 0.5e6, DownUtil: 2000 * 8 / 0.5e6, Drops: 4, Lost: 14},
		{Link: "h1", UpBytes: 3000, DownBytes: 100, UpUtil: 3000 * 8 / 0.5e6, DownUtil: 100 * 8 / 0.5e6, Drops: 0},
		{Link: "leaf0-root", UpBytes: 100, DownBytes: 200, UpUtil: 100 * 8 / 1e6, DownUtil: 200 * 8 / 1e6, Drops: 0, Lost: 7},
	}
	if !slices.Equal(r.Links, want) {
		t.Errorf("links\n got %+v\nwant %+v", r.Links, want)
	}
	if r.HostUpBytes != 2000 || r.HostDownBytes != 1050 {
		t.Errorf("host links' means %g up, %g down, want 2000 and 1050", r.HostUpBytes, r.HostDownBytes)
	}
	r = Row{}
	c.linkRow(&r, before, after)
	if r.Links[0].UpUtil != 0 || r.Links[0].DownUtil != 0 || r.Links[0].UpBytes != 1000 {
		t.Errorf("a row with no time: %+v, want the bytes and no shares", r.Links[0])
	}
}

// The most CPU any host used; an error's last lines, joined.
func TestHostCPUAndLastLines(t *testing.T) {
	if got := hostCPU([]hostResult{{cpu: 0.25}, {cpu: 0.75}, {cpu: 0.5}}); got != 0.75 {
		t.Errorf("hostCPU %g, want 0.75", got)
	}
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"a\nb\nc\nd\n", 2, "c | d"},
		{"a\nb", 5, "a | b"},
		{"one\n\n", 3, "one"},
	} {
		if got := lastLines(tc.s, tc.n); got != tc.want {
			t.Errorf("lastLines(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}
