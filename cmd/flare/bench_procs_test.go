package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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

// --profile leaves a CPU profile and a trace for every row with something
// in the bench process: with a process per rank the embedded switch's and
// the relay's, not the ring's, whose ranks are all elsewhere; with the
// ranks in this process every row's. Each is what go tool pprof and go
// tool trace read.
func TestBenchProfile(t *testing.T) {
	for _, procs := range []bool{true, false} {
		dir := t.TempDir()
		smallBenchRows(t, "--paths", "switch,fanout,ring", "--profile", dir, "--procs="+strconv.FormatBool(procs))
		want := []string{"p3-64KiB-switch-1KiB-r1", "p3-64KiB-fanout-1KiB-r1"}
		if !procs {
			want = append(want, "p3-64KiB-ring-r1")
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range entries {
			got = append(got, e.Name())
		}
		var wantFiles []string
		for _, w := range want {
			wantFiles = append(wantFiles, w+".cpu.pprof", w+".trace")
		}
		slices.Sort(got)
		slices.Sort(wantFiles)
		if !slices.Equal(got, wantFiles) {
			t.Fatalf("--procs=%v: --profile wrote %v, want %v", procs, got, wantFiles)
		}
		for _, w := range want {
			checkProfile(t, filepath.Join(dir, w+".cpu.pprof"))
			if out, err := exec.Command("go", "tool", "trace", "-d=parsed", filepath.Join(dir, w+".trace")).CombinedOutput(); err != nil || !bytes.Contains(out, []byte("StateTransition")) {
				t.Fatalf("%s.trace: go tool trace: %v\n%.500s", w, err, out)
			}
		}
		if !procs {
			checkTraceSched(t, filepath.Join(dir, "p3-64KiB-switch-1KiB-r1.trace"))
		}
	}
}

// checkTraceSched reads a row's trace with tools/trace-sched.py: every P
// has a busy share, the idle-with-work-waiting line and its spells are
// there, and the switch's reader and the ranks' sessions are among the
// goroutines, by name.
func checkTraceSched(t *testing.T, trace string) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Log("SKIPPED tools/trace-sched.py: no python3")
		return
	}
	out, err := exec.Command("python3", "../../tools/trace-sched.py", trace, "100").CombinedOutput()
	if err != nil {
		t.Fatalf("tools/trace-sched.py: %v\n%s", err, out)
	}
	for _, want := range []string{"P0 busy", "idle with work waiting", "in spells of", "switch.(*Switch).reader", "hostlib.(*Session)"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("tools/trace-sched.py printed no %q:\n%s", want, out)
		}
	}
}

// --profile is the dense table's: with --sparse it is refused, naming it.
func TestBenchProfileDenseOnly(t *testing.T) {
	out, err := exec.Command(flareBin, "bench", "--sparse", "--profile", t.TempDir()).CombinedOutput()
	if err == nil || !bytes.Contains(out, []byte("--profile")) {
		t.Fatalf("flare bench --sparse --profile: %v\n%s, want an error naming --profile", err, out)
	}
}
