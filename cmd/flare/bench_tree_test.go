package main

import (
	"math"
	"strings"
	"testing"

	"github.com/flare-net/flare/internal/bench"
	"github.com/flare-net/flare/internal/units"
	"github.com/flare-net/flare/wire"
)

func TestParseTreeShape(t *testing.T) {
	for in, want := range map[string]bench.TreeShape{"4x4": {Leaves: 4, Hosts: 4}, "8X8": {Leaves: 8, Hosts: 8}, " 2x1 ": {Leaves: 2, Hosts: 1}, "3 x 5": {Leaves: 3, Hosts: 5}} {
		if got, err := parseTreeShape(in); err != nil || got != want {
			t.Errorf("parseTreeShape(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "4", "x4", "4x", "1x4", "4x0", "axb", "64x64"} {
		if _, err := parseTreeShape(in); err == nil {
			t.Errorf("parseTreeShape(%q): no error", in)
		}
	}
}

// benchTreeRows runs `flare bench --tree ... --json` and reads its rows.
func benchTreeRows(t *testing.T, args ...string) []bench.TreeRow {
	t.Helper()
	return flareRows[bench.TreeRow](t, append([]string{"bench", "--json"}, args...)...)
}

// near reports whether got is within frac of want.
func near(got, want, frac float64) bool { return math.Abs(got-want) <= frac*want }

// flare bench --tree: a root and two leaves of two hosts in one process;
// the in-network dense row and the ring row are verified, and the bytes
// the switches counted on each link are what the protocol sends: every
// host sends its vector up once and gets the result once (a 32-byte
// header per 1 KiB block), each leaf sends one partial per block up and
// gets one result down; the ring sends 2(P-1)/P of the vector each way.
func TestE2EBenchTree(t *testing.T) {
	size := 64 << 10
	if raceEnabled {
		size = 16 << 10
	}
	rows := benchTreeRows(t, "--tree", "2x2", "--bytes", units.FormatSize(int64(size)), "--iters", "2", "--warmup", "1")
	if len(rows) != 2 || rows[0].Path != "in-network" || rows[1].Path != "ring" {
		t.Fatalf("rows %+v, want in-network then ring", rows)
	}
	const p, leaves = 4, 2
	z := float64(size)
	blocks := math.Ceil(z / 1024)
	for _, r := range rows {
		if !r.Verified || r.Ranks != p || r.Tree != "2x2" || r.Bytes != int64(size) || r.MedianS <= 0 || r.Iters != 2 {
			t.Errorf("%s: %+v, want a verified row of 4 ranks with a time", r.Path, r)
		}
		if r.ModelLinkBytes <= 0 || r.TrafficVsBaseline <= 0 || r.ModelTrafficVsBase <= 0 || r.Baseline != "ring" {
			t.Errorf("%s: model columns or ratios missing: %+v", r.Path, r)
		}
		t.Logf("%-10s median %6.2f ms  host up %.0f down %.0f  leaf up %.0f down %.0f  links %.0f (model %.0f)  retransmits %d, recovery host up %.0f down %.0f leaf up %.0f down %.0f",
			r.Path, r.MedianS*1e3, r.HostUpBytes, r.HostDownBytes, r.LeafUpBytes, r.LeafDownBytes, r.LinkBytes, r.ModelLinkBytes, r.Retransmits,
			r.HostUpRetxBytes, r.HostDownRetxBytes, r.LeafUpRetxBytes, r.LeafDownRetxBytes)
	}
	in, ring := rows[0], rows[1]
	if in.LinkBytesFrom != "switches" || ring.LinkBytesFrom != "hosts" {
		t.Errorf("link bytes from %q and %q, want switches and hosts", in.LinkBytesFrom, ring.LinkBytesFrom)
	}

	// In-network: one packet per block each way on every link, plus loss
	// recovery, which the switches count apart (datagrams marked
	// FlagRetransmit); the counters are read around the measured calls, on
	// a quiet tree, so joins and leaves are not in them and every answer
	// is in the window of what it answers. What is sent as new is once per
	// block, and every block gets through at least once. Recovery follows
	// from its cause, and each answer is at most the size of what it
	// answers (the sizes are whole blocks): a host's retransmission is
	// answered to that host with one packet (its result again, or a
	// waiting report), and makes its leaf send the block's partial up
	// again at most once; the root answers that with one packet, and a
	// result so answered the leaf multicasts to every one of its hosts,
	// unmarked, like the first (so host↓'s unmarked bytes may exceed one
	// result per block by leaf↓'s recovery bytes: leaves × hosts = P).
	want := z + blocks*wire.HeaderLen
	links := []struct {
		name           string
		all, retx, rep float64
	}{
		{"host up", in.HostUpBytes, in.HostUpRetxBytes, 0},
		{"host down", in.HostDownBytes, in.HostDownRetxBytes, in.LeafDownRetxBytes},
		{"leaf up", in.LeafUpBytes, in.LeafUpRetxBytes, 0},
		{"leaf down", in.LeafDownBytes, in.LeafDownRetxBytes, 0},
	}
	for _, k := range links {
		if k.all < 0.99*want || k.all-k.retx > 1.01*want+k.rep {
			t.Errorf("in-network %s: %.0f bytes per call, %.0f of them recovery: want %.0f sent once per block (+%.0f for results sent again)",
				k.name, k.all, k.retx, want, k.rep)
		}
	}
	for _, c := range []struct {
		what            string
		effect, cause   float64
		effectN, causeN float64 // links of each side
	}{
		{"host down, answers to retransmissions", in.HostDownRetxBytes, in.HostUpRetxBytes, p, p},
		{"leaf up, partials sent again", in.LeafUpRetxBytes, in.HostUpRetxBytes, leaves, p},
		{"leaf down, the root's answers", in.LeafDownRetxBytes, in.LeafUpRetxBytes, leaves, leaves},
	} {
		if c.effect*c.effectN > c.cause*c.causeN {
			t.Errorf("in-network %s: %.0f bytes per call over %v links, more than their cause's %.0f over %v",
				c.what, c.effect*c.effectN, c.effectN, c.cause*c.causeN, c.causeN)
		}
	}
	// Every retransmission the leaves counted, a host sent (and counted):
	// one packet of at most a block.
	if got, max := in.HostUpRetxBytes*p*float64(in.Iters), float64(in.Retransmits)*(1024+wire.HeaderLen); got > max {
		t.Errorf("in-network: leaves received %.0f bytes of retransmissions, the hosts sent %d (%.0f bytes at most)", got, in.Retransmits, max)
	}
	if got, want := in.LinkBytes, 2*p*in.HostUpBytes; got < 0.99*want {
		t.Errorf("in-network links %.0f bytes, want at least 2·P·host up = %.0f", got, want)
	}
	if in.Retransmits == 0 && !near(in.TrafficVsModel, 1, 0.05) {
		t.Errorf("in-network traffic ratio vs ring %.3f, the model's %.3f: measured/model %.3f, want within 5%% of 1",
			in.TrafficVsBaseline, in.ModelTrafficVsBase, in.TrafficVsModel)
	}

	// The ring: 2(P-1) steps of Z/P, each with a small frame header; the
	// two hops between leaves cross a leaf's uplink and the next leaf's
	// downlink (one each per leaf).
	wantRing := 2 * (p - 1) * z / p
	if !near(ring.HostUpBytes, wantRing, 0.02) || !near(ring.HostDownBytes, wantRing, 0.02) {
		t.Errorf("ring host link %.0f up, %.0f down per call, want about %.0f", ring.HostUpBytes, ring.HostDownBytes, wantRing)
	}
	if !near(ring.LeafUpBytes, ring.HostUpBytes, 0.001) || !near(ring.LinkBytes, (2*p+2*leaves)*ring.HostUpBytes, 0.01) {
		t.Errorf("ring leaf links %.0f, links %.0f: want one host's sends per leaf link, and the sends of 2P+2L links", ring.LeafUpBytes, ring.LinkBytes)
	}
	if !near(ring.LinkBytes, ring.ModelLinkBytes, 0.02) {
		t.Errorf("ring links %.0f bytes per call, the model %.0f", ring.LinkBytes, ring.ModelLinkBytes)
	}
}

// flare bench --tree --verify=false: the rows say they are not verified.
func TestE2EBenchTreeUnverified(t *testing.T) {
	rows := benchTreeRows(t, "--tree", "2x2", "--bytes", "4KiB", "--iters", "1", "--warmup", "0", "--verify=false")
	if len(rows) != 2 || rows[0].Verified || rows[1].Verified {
		t.Errorf("rows %+v, want in-network and ring, neither verified", rows)
	}
}

// flare bench --tree --sparse: in-network sparse through the tree (hash
// and array storage) and the host sparse baseline, verified, with the
// in-network rows moving fewer bytes than the baseline's.
func TestE2EBenchTreeSparse(t *testing.T) {
	size := "64KiB"
	if raceEnabled {
		size = "16KiB"
	}
	rows := benchTreeRows(t, "--tree", "2x2", "--bytes", size, "--iters", "1", "--warmup", "1", "--sparse", "--densities", "0.01")
	var paths []string
	for _, r := range rows {
		paths = append(paths, r.Path)
	}
	if got := strings.Join(paths, ","); got != "in-network,ring,hash,array,host-sparse" {
		t.Fatalf("rows %s, want in-network,ring,hash,array,host-sparse", got)
	}
	base := rows[4]
	if base.TimeVsBaseline != 1 || base.ModelTimeVsBaseline != 1 || base.ModelTrafficVsBase != 1 || base.TrafficVsModel != 1 {
		t.Errorf("host-sparse against itself: time %v (model %v), traffic model %v, measured/model %v; want 1 each",
			base.TimeVsBaseline, base.ModelTimeVsBaseline, base.ModelTrafficVsBase, base.TrafficVsModel)
	}
	for _, r := range rows[2:] {
		if !r.Verified || r.Density != 0.01 || r.MedianS <= 0 || r.Baseline != "host-sparse" || r.ModelAlgorithm == "" {
			t.Errorf("%s: %+v, want a verified row at 1%% against host-sparse", r.Path, r)
		}
		t.Logf("%-11s median %6.2f ms  host up %.0f down %.0f  leaf up %.0f down %.0f  links %.0f (model %.0f)",
			r.Path, r.MedianS*1e3, r.HostUpBytes, r.HostDownBytes, r.LeafUpBytes, r.LeafDownBytes, r.LinkBytes, r.ModelLinkBytes)
	}
	for _, r := range rows[2:4] {
		if r.LinkBytesFrom != "switches" || r.HostUpBytes <= 0 || r.LeafUpBytes <= 0 || r.LinkBytes >= base.LinkBytes {
			t.Errorf("%s: links %.0f bytes (host up %.0f, leaf up %.0f), want fewer than host-sparse's %.0f, from the switches",
				r.Path, r.LinkBytes, r.HostUpBytes, r.LeafUpBytes, base.LinkBytes)
		}
	}
}

// flare bench (one switch, one process per rank) prints each path's bytes
// per host link: the switch's link counters for the switch path (the job's
// join ack and leave spread over its calls), the ring's own for the ring.
func TestE2EBenchLinkBytes(t *testing.T) {
	const p, size = 3, 100000
	rows := flareRows[bench.Row](t, "bench", "--ranks", "3", "--bytes", "100000", "--iters", "2", "--warmup", "1",
		"--paths", "switch,ring", "--json")
	if len(rows) != 2 || rows[0].Path != "switch" || rows[1].Path != "ring" {
		t.Fatalf("rows %+v, want switch then ring", rows)
	}
	sw, ring := rows[0], rows[1]
	want := size + math.Ceil(size/1024.0)*wire.HeaderLen
	extra := float64(sw.Retransmits) * (1024 + wire.HeaderLen) / p / 3
	if sw.LinkBytesFrom != "switch" || sw.HostUpBytes < want || sw.HostUpBytes > 1.01*want+extra ||
		sw.HostDownBytes < want || sw.HostDownBytes > 1.01*want+extra {
		t.Errorf("switch: host link %.0f up, %.0f down per call from %q, want about %.0f from the switch", sw.HostUpBytes, sw.HostDownBytes, sw.LinkBytesFrom, want)
	}
	wantRing := 2.0 * (p - 1) / p * size
	if ring.LinkBytesFrom != "ring" || !near(ring.HostUpBytes, wantRing, 0.02) || !near(ring.HostDownBytes, wantRing, 0.02) {
		t.Errorf("ring: host link %.0f up, %.0f down per call from %q, want about %.0f", ring.HostUpBytes, ring.HostDownBytes, ring.LinkBytesFrom, wantRing)
	}
}
