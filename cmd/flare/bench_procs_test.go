package main

import (
	"os/exec"
	"strings"
	"testing"
)

// flare bench with a process per rank, as a user runs it: every rank a
// `flare allreduce` process started by the binary, each call released to
// all of them at once by the parent's barrier. The switch row is verified
// element by element in every rank, the fan-out relay's row comes from
// the same filled vectors, and the run ends (no rank left waiting on the
// barrier). Two rounds measure both rows twice, in turn, each round with
// its own processes.
func TestBenchProcessPerRank(t *testing.T) {
	paths := smallBenchRows(t, "--rounds", "2", "--paths", "switch,fanout")
	sw, ok := paths["switch"]
	if !ok || !sw.Verified || sw.MedianS <= 0 || sw.Iters != 6 || sw.Rounds != 2 {
		t.Fatalf("switch row %+v, want 2 rounds of 3 verified calls", sw)
	}
	fo, ok := paths["fanout"]
	if !ok || fo.MedianS <= 0 || fo.Rounds != 2 {
		t.Fatalf("fanout row %+v, want a time over 2 rounds", fo)
	}
	// The embedded switch and the relay run in the bench process: its CPU
	// over the measured calls is theirs, and a call costs some.
	if sw.ServerUserS+sw.ServerSysS <= 0 || fo.ServerUserS+fo.ServerSysS <= 0 {
		t.Errorf("server CPU per call: switch %v+%v s, fanout %v+%v s, want both read", sw.ServerUserS, sw.ServerSysS, fo.ServerUserS, fo.ServerSysS)
	}
	// Each rank process reads its own CPU over its calls; the row sums them.
	if sw.RanksUserS+sw.RanksSysS <= 0 || fo.RanksUserS+fo.RanksSysS <= 0 {
		t.Errorf("ranks' CPU per call: switch %v+%v s, fanout %v+%v s, want both read", sw.RanksUserS, sw.RanksSysS, fo.RanksUserS, fo.RanksSysS)
	}
	if sw.OfFanout != fo.MedianS/sw.MedianS {
		t.Errorf("switch of fanout %v, want %v: the merged medians' ratio", sw.OfFanout, fo.MedianS/sw.MedianS)
	}
}

// The multicast rows, a process per rank: switch-mc is verified and is
// compared with fanout-mc, both ran on a group (a row that got none fails
// the run), and a host's down bytes count what the switch sent the group
// once for every host: about the vector, as unicast.
func TestBenchMulticastRows(t *testing.T) {
	paths := smallBenchRows(t, "--paths", "switch-mc,fanout,fanout-mc")
	mc, fo := paths["switch-mc"], paths["fanout-mc"]
	if !mc.Verified || mc.MedianS <= 0 || fo.MedianS <= 0 || paths["fanout"].MedianS <= 0 {
		t.Fatalf("rows %+v, want a verified switch-mc and both fan-out relays timed", paths)
	}
	if mc.OfFanout != fo.MedianS/mc.MedianS {
		t.Errorf("switch-mc of fanout %v, want fanout-mc's %v", mc.OfFanout, fo.MedianS/mc.MedianS)
	}
	if mc.HostDownBytes < 64<<10 || mc.HostDownBytes > 80<<10 {
		t.Errorf("switch-mc: %.0f bytes down a host's link a call, want the 64 KiB result and headers", mc.HostDownBytes)
	}
}

// smallBenchRows runs `flare bench --json` (the binary) with 3 ranks of 64 KiB in 1 KiB
// packets, 3 calls after 1, and args, and returns its rows by path.
func smallBenchRows(t *testing.T, args ...string) map[string]benchRow {
	t.Helper()
	out, err := exec.Command(flareBin, append([]string{"bench", "--json", "--ranks", "3", "--bytes", "64KiB", "--packet", "1KiB",
		"--iters", "3", "--warmup", "1"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("flare bench: %v\n%s", err, out)
	}
	paths := map[string]benchRow{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		r := strictRow(t, line)
		paths[r.Path] = r
	}
	return paths
}
