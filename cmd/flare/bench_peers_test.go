package main

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/flare-net/flare/internal/bench"
)

// benchRow is the row flare bench --json prints.
type benchRow = bench.Row

// benchRows runs flare bench in this process and returns its --json rows,
// each decoded strictly (no field outside benchRow) and the keys of each.
func benchRows(t *testing.T, args ...string) ([]benchRow, []map[string]any) {
	t.Helper()
	var out, errs bytes.Buffer
	if err := run(context.Background(), append([]string{"bench", "--json"}, args...), &out, &errs); err != nil {
		t.Fatalf("flare bench %s: %v\n%s", strings.Join(args, " "), err, errs.String())
	}
	var rows []benchRow
	var raw []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		rows = append(rows, strictRow(t, line))
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		raw = append(raw, m)
	}
	return rows, raw
}

func strictRow(t *testing.T, line string) benchRow {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	var r benchRow
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("line %q is not a bench row: %v", line, err)
	}
	return r
}

// --packet runs the switch and both relays once per size, each row says
// which in packet_bytes (the ring's 0), and a row's ratios are taken
// against the relays of its own packet size.
func TestBenchPacketSizes(t *testing.T) {
	rows, raw := benchRows(t, "--ranks", "2", "--bytes", "16KiB", "--packet", "512,2KiB", "--procs=false", "--iters", "1", "--warmup", "0")
	type key struct {
		path   string
		packet int
	}
	want := []key{{"switch", 512}, {"switch", 2048}, {"ring", 0}, {"relay", 512}, {"relay", 2048}, {"fanout", 512}, {"fanout", 2048}}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d (%v): %+v", len(rows), len(want), want, rows)
	}
	at := map[key]benchRow{}
	for i, r := range rows {
		if got := (key{r.Path, r.PacketBytes}); got != want[i] {
			t.Errorf("row %d is %v, want %v", i, got, want[i])
		}
		if _, ok := raw[i]["packet_bytes"]; !ok {
			t.Errorf("row %d (%s) has no packet_bytes field", i, r.Path)
		}
		if r.Rounds != 1 {
			t.Errorf("row %d (%s) says %d rounds, want 1 (the default)", i, r.Path, r.Rounds)
		}
		// Ranks in this process: their CPU is read where nothing else
		// runs in it (the ring), and not where the embedded switch or a
		// relay does.
		if cpu := r.RanksUserS + r.RanksSysS; (r.Path == "ring") != (cpu > 0) {
			t.Errorf("row %d (%s): ranks' CPU %v s a call, want it read only for the ring", i, r.Path, cpu)
		}
		at[key{r.Path, r.PacketBytes}] = r
	}
	for _, pk := range []int{512, 2048} {
		sw, relay, fan := at[key{"switch", pk}], at[key{"relay", pk}], at[key{"fanout", pk}]
		if !sw.Verified || sw.OfRelay != relay.MedianS/sw.MedianS || sw.OfFanout != fan.MedianS/sw.MedianS {
			t.Errorf("switch at %d-byte packets: verified %v, of_relay %v of_fanout %v, want %v and %v (its own packet size's relays)",
				pk, sw.Verified, sw.OfRelay, sw.OfFanout, relay.MedianS/sw.MedianS, fan.MedianS/sw.MedianS)
		}
	}
	if ring := at[key{"ring", 0}]; ring.OfRelay != at[key{"relay", 512}].MedianS/ring.MedianS {
		t.Errorf("ring of_relay %v: want it against the first packet size's relay", ring.OfRelay)
	}
}

// --packet's sizes: parsed, at least one; each the switch takes (a
// multiple of 8 in 8..8192 bytes) and none twice, as Suite.Validate
// checks them, by the flag's name; and refused with a tree, a daemon's
// switch and the sparse table. (Each run is bounded, should it start.)
func TestParsePackets(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		err  string
	}{
		{"1KiB", []int{1024}, ""},
		{"1KiB,8KiB", []int{1024, 8192}, ""},
		{"8,4096", []int{8, 4096}, ""},
		{"lots", nil, "--packet: size \"lots\""},
	} {
		got, err := parsePackets(strings.Split(tc.in, ","))
		switch {
		case tc.err == "" && (err != nil || !slices.Equal(got, tc.want)):
			t.Errorf("parsePackets(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("parsePackets(%q): error %v, want %q", tc.in, err, tc.err)
		}
	}
	short := func(args ...string) []string {
		return append(append([]string{"bench"}, args...), "--ranks", "2", "--bytes", "4KiB", "--procs=false", "--iters", "1", "--warmup", "0")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{short("--packet="), "--packet: give at least one size"},
		{short("--packet", "0"), "--packet 0: must be a multiple of 8 in 8..8192 bytes"},
		{short("--packet", "12"), "--packet 12: must be a multiple of 8 in 8..8192 bytes"},
		{short("--packet", "16KiB"), "--packet 16384: must be a multiple of 8 in 8..8192 bytes"},
		{short("--packet", "1KiB,1024"), "--packet 1024: given twice"},
		{short("--switch", "127.0.0.1:7470", "--packet", "8KiB"), "--switch with --packet: the daemon's own --packet sets its size"},
		{short("--sparse", "--packet", "1KiB,8KiB"), "the sparse table compares one switch's paths"},
		{[]string{"bench", "--tree", "2x2", "--packet", "8KiB", "--bytes", "4KiB", "--iters", "1", "--warmup", "0"}, "--tree with --packet: the tree runs its own switches"},
	} {
		if err := run(context.Background(), tc.args, &bytes.Buffer{}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("flare %s: %v, want %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

// The peers' own benchmarks (make peers: peers/mpi_allreduce.c under
// mpirun, peers/gloo_ring.cc) at P = 2 print rows of the bench schema,
// with every field a flare bench row has, and verified sums; flare bench
// --peers prints them beside the ring with their ratios, and --peer runs
// them itself, in turn with the ring.
func TestPeersBenchmarks(t *testing.T) {
	for _, tool := range []string{"mpicc", "mpirun", "g++"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found: install openmpi-bin libopenmpi-dev libgloo-dev g++ (make peers-deps) to run the peers", tool)
		}
	}
	if _, err := os.Stat("/usr/include/gloo/allreduce.h"); err != nil {
		t.Skipf("Gloo's headers not found (%v): install libgloo-dev (make peers-deps) to run the peers", err)
	}
	dir := t.TempDir()
	mpiBin, glooBin := filepath.Join(dir, "mpi"), filepath.Join(dir, "gloo")
	for _, build := range [][]string{
		{"mpicc", "-O2", "-o", mpiBin, repoFile("peers/mpi_allreduce.c")},
		{"g++", "-O2", "-std=c++17", "-o", glooBin, repoFile("peers/gloo_ring.cc"), "-lgloo", "-pthread"},
	} {
		if out, err := exec.Command(build[0], build[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(build, " "), err, out)
		}
	}
	size := []string{"--bytes", "64KiB", "--iters", "3", "--warmup", "1"}
	mpirun := []string{"-np", "2", "--oversubscribe", "--bind-to", "none", "--mca", "pml", "ob1", "--mca", "btl", "tcp,self",
		"--mca", "btl_tcp_if_include", "lo"}
	if os.Getuid() == 0 {
		mpirun = append(mpirun, "--allow-run-as-root")
	}
	var file bytes.Buffer
	for _, c := range []struct {
		path string
		cmd  []string
	}{
		{"mpi-tcp", append(append(append([]string{"mpirun"}, mpirun...), mpiBin), size...)},
		{"gloo-ring", append([]string{glooBin, "--ranks", "2"}, size...)},
	} {
		var out, errs bytes.Buffer
		cmd := exec.Command(c.cmd[0], c.cmd[1:]...)
		cmd.Stdout, cmd.Stderr = &out, &errs
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(c.cmd, " "), err, errs.String())
		}
		line := strings.TrimSpace(out.String())
		row := strictRow(t, line)
		if row.Path != c.path || row.Ranks != 2 || row.Bytes != 64<<10 || row.Iters != 3 || row.DType != "float32" || row.Op != "sum" ||
			!row.Verified || !(row.MedianS > 0) || row.P99S < row.MedianS || row.PacketBytes != 0 {
			t.Errorf("%s row %+v: want path %s, 2 ranks, 64KiB float32 sum, 3 iters, verified, times", c.path, row, c.path)
		}
		if row.RanksUserS+row.RanksSysS <= 0 {
			t.Errorf("%s row: ranks' CPU %v+%v s a call, want it read", c.path, row.RanksUserS, row.RanksSysS)
		}
		if err := bench.CheckPeerRow(&row); err != nil {
			t.Errorf("%s row: %v", c.path, err)
		}
		var got, flare map[string]any
		flareLine, _ := json.Marshal(benchRow{})
		if json.Unmarshal([]byte(line), &got) != nil || json.Unmarshal(flareLine, &flare) != nil ||
			!slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(flare))) {
			t.Errorf("%s row's fields %v, want a flare bench row's %v", c.path, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(flare)))
		}
		file.WriteString(line + "\n")
	}
	peers := filepath.Join(dir, "peers.jsonl")
	if err := os.WriteFile(peers, file.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	rows, _ := benchRows(t, "--ranks", "2", "--bytes", "64KiB", "--paths", "ring", "--procs=false", "--iters", "1", "--warmup", "0", "--peers", peers)
	if len(rows) != 3 || rows[0].Path != "ring" || rows[1].Path != "mpi-tcp" || rows[2].Path != "gloo-ring" {
		t.Fatalf("flare bench --peers: %+v, want the ring, mpi-tcp and gloo-ring rows", rows)
	}
	checkPeerRatios(t, rows)

	// --peer runs the same benchmarks itself, in turn with the ring, a
	// round at a time: each peer's row merges its rounds.
	flags := []string{"--ranks", "2", "--bytes", "64KiB", "--paths", "ring", "--procs=false", "--iters", "2", "--warmup", "0", "--rounds", "2",
		"--peer", "mpi-tcp=mpirun " + strings.Join(mpirun, " ") + " " + mpiBin + " --bytes {bytes} --iters {iters} --warmup {warmup}",
		"--peer", "gloo-ring=" + glooBin + " --ranks {ranks} --bytes {bytes} --iters {iters} --warmup {warmup}"}
	rows, _ = benchRows(t, flags...)
	if len(rows) != 3 || rows[1].Path != "mpi-tcp" || rows[2].Path != "gloo-ring" {
		t.Fatalf("flare bench --peer: %+v, want the ring, mpi-tcp and gloo-ring rows", rows)
	}
	for _, r := range rows[1:] {
		if r.Rounds != 2 || r.Iters != 4 || !r.Verified || r.RanksUserS+r.RanksSysS <= 0 {
			t.Errorf("%s row %+v: want 2 rounds of 2 verified calls, the ranks' CPU read", r.Path, r)
		}
	}
	checkPeerRatios(t, rows)
}

// checkPeerRatios checks rows of the ring and then the peers: every row's
// time over the faster peer's, and the ring's over every row's.
func checkPeerRatios(t *testing.T, rows []benchRow) {
	t.Helper()
	best := min(rows[1].MedianS, rows[2].MedianS)
	for _, r := range rows {
		if r.OverBestPeer != r.MedianS/best || r.VsRing != rows[0].MedianS/r.MedianS {
			t.Errorf("%s: over_best_peer %v vs_ring %v, want %v and %v", r.Path, r.OverBestPeer, r.VsRing, r.MedianS/best, rows[0].MedianS/r.MedianS)
		}
	}
}

// Rows of --peers for a P or size the run did not measure are left out,
// and flare bench says how many.
func TestBenchPeersLeftOut(t *testing.T) {
	row := func(ranks int) string {
		return `{"path":"mpi-tcp","ranks":` + strconv.Itoa(ranks) + `,"bytes":4096,"dtype":"float32","op":"sum","iters":1,` +
			`"median_s":0.01,"p99_s":0.02,"verified":true,"ranks_user_s":0.003}` + "\n"
	}
	peers := filepath.Join(t.TempDir(), "peers.jsonl")
	if err := os.WriteFile(peers, []byte(row(2)+row(3)), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	args := []string{"bench", "--json", "--ranks", "2", "--bytes", "4KiB", "--paths", "ring", "--procs=false", "--iters", "1", "--warmup", "0", "--peers", peers}
	if err := run(context.Background(), args, &out, &errs); err != nil {
		t.Fatalf("flare bench: %v\n%s", err, errs.String())
	}
	if want := "flare bench: 1 rows of --peers " + peers + " are for a P, size, dtype or op this run did not measure; left out"; !strings.Contains(errs.String(), want) {
		t.Errorf("stderr %q, want %q", errs.String(), want)
	}
	if n := strings.Count(out.String(), "\n"); n != 2 {
		t.Errorf("%d rows, want the ring's and the P=2 peer's:\n%s", n, out.String())
	}
}
