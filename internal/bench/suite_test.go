package bench

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/internal/inproc"
	swtch "github.com/flare-net/flare/switch"
	"github.com/flare-net/flare/wire"
)

// okSuite is a suite every check takes.
func okSuite() Suite {
	return Suite{Ranks: []int{1, MaxRanks}, Sizes: []int64{4, MaxCount}, Paths: []string{PathSwitch, PathRing, PathRelay},
		DType: wire.Float32, Op: wire.OpSum, Algo: "auto", Iters: 1, Timeout: time.Second, Rounds: MaxRounds,
		BusyPoll: conn.MaxBusyPoll}
}

// Suite.Validate takes every edge of its ranges and names the field of a
// value past one, and the range.
func TestSuiteValidateNamesField(t *testing.T) {
	if err := okSuite().Validate(); err != nil {
		t.Fatalf("Validate(%+v): %v", okSuite(), err)
	}
	sparse := func(s *Suite) { s.Sparse, s.Rounds, s.Densities, s.Overlap = true, 0, []float64{1}, 1 }
	if s := okSuite(); true {
		sparse(&s)
		if err := s.Validate(); err != nil {
			t.Errorf("a sparse table of density 1 and overlap 1: %v", err)
		}
	}
	for _, tc := range []struct {
		edit func(*Suite)
		err  string
	}{
		{func(s *Suite) { sparse(s); s.Densities = []float64{0} }, "Suite.Densities 0: each must be in (0, 1]"},
		{func(s *Suite) { sparse(s); s.Overlap = 1.5 }, "Suite.Overlap = 1.5: must be in [0, 1]"},
		{func(s *Suite) { s.Algo = "ring" }, "Suite.Algo = ring: the ring is measured as its own path"},
		{func(s *Suite) { s.Algo = "fast" }, "Suite.Algo = \"fast\": want auto, single"},
		{func(s *Suite) { s.Warmup = -1 }, "Suite.Iters = 1 with Suite.Warmup = -1"},
		{func(s *Suite) { s.Iters = 0 }, "Suite.Iters = 0"},
		{func(s *Suite) { s.Timeout = 0 }, "Suite.Timeout = 0s: must be positive"},
		{func(s *Suite) { s.BusyPoll = conn.MaxBusyPoll + 1 }, "Suite.BusyPoll = 10.000001ms"},
		{func(s *Suite) { s.Rounds = MaxRounds + 1 }, "Suite.Rounds = 101: must be in 1..100"},
		{func(s *Suite) { s.Rounds, s.Tree = 2, TreeShape{2, 2} }, "Suite.Rounds = 2 with Suite.Sparse or Suite.Tree"},
		{func(s *Suite) { s.Sizes = []int64{2} }, "Suite.Sizes 2B: must be in 4..1GiB"},
		{func(s *Suite) { s.Sizes = []int64{MaxCount + 1} }, "Suite.Sizes"},
		{func(s *Suite) { s.Ranks = []int{0} }, "Suite.Ranks 0: must be in 1..1024"},
		{func(s *Suite) { s.Ranks = []int{MaxRanks + 1} }, "Suite.Ranks 1025"},
		{func(s *Suite) { s.Paths = []string{"echo"} }, "Suite.Paths \"echo\": want switch, switch-mc, ring, relay, fanout or fanout-mc"},
		{func(s *Suite) { s.Rounds, s.Profile, s.Tree = 0, "p", TreeShape{2, 2} }, "Suite.Profile with Suite.Sparse or Suite.Tree"},
		{func(s *Suite) { s.Rounds, s.Tree = 0, TreeShape{1, 2} }, "TreeShape.Leaves = 1"},
	} {
		s := okSuite()
		tc.edit(&s)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("Validate: %v, want an error with %q", err, tc.err)
		}
	}
}

// A row's configuration is the suite's, with a fresh job and token and
// the elements of its size; each leg then reaches its own server: the
// relays unverified, single-buffer, fanout-mc to a group; the switch of
// the leg's packet size, switch-mc to a group; the ring as the ring. The
// suite's own switch (the sparse table's) is that of its first size.
func TestLegConfig(t *testing.T) {
	s := okSuite()
	s.Paths, s.Packets, s.DType, s.Overlap, s.BusyPoll, s.Verify = []string{PathSwitch, PathMulticast, PathRelay, PathFanout, PathFanoutMC, PathRing},
		[]int{512, 2048}, wire.Int16, 0.25, time.Millisecond, true
	g := inproc.New(context.Background())
	defer g.Close()
	env, err := s.start(g)
	if err != nil {
		t.Fatal(err)
	}
	if env.Switch != env.servers[512].sw || env.servers[512].sw == env.servers[2048].sw {
		t.Errorf("the suite's switch %s, want the first packet size's, %s", env.Switch, env.servers[512].sw)
	}
	c := env.config(8, 1<<20)
	if c2 := env.config(8, 1<<20); c2.Job == c.Job || c.Count != 1<<19 || c.Ranks != 8 || c.DType != wire.Int16 ||
		c.Overlap != 0.25 || c.BusyPoll != time.Millisecond || !c.Verify || c.Timeout != time.Second || c.Algo != "auto" {
		t.Errorf("row configurations %+v then %+v", c, c2)
	}
	for _, tc := range []struct {
		l         leg
		addr      string
		verify    bool
		algo      string
		multicast bool
		embedded  bool
	}{
		{leg{PathSwitch, 2048}, env.servers[2048].sw, true, "auto", false, true},
		{leg{PathMulticast, 512}, env.servers[512].sw, true, "auto", true, true},
		{leg{PathRelay, 512}, env.servers[512].relays[PathRelay], false, "single", false, false},
		{leg{PathFanout, 2048}, env.servers[2048].relays[PathFanout], false, "single", false, false},
		{leg{PathFanoutMC, 512}, env.servers[512].relays[PathFanoutMC], false, "single", true, false},
		{leg{PathRing, 0}, env.Switch, true, PathRing, false, false},
	} {
		got, embedded := env.legConfig(tc.l, c)
		if got.Switch != tc.addr || got.Verify != tc.verify || got.Algo != tc.algo || got.Multicast != tc.multicast ||
			(embedded != nil) != tc.embedded || embedded != nil && embedded != env.servers[tc.l.packet].embedded {
			t.Errorf("%v: %+v (embedded %v)", tc.l, got, embedded)
		}
	}
}

// A row's bytes on one host's link are per call, over warmup and measured
// calls alike, and per rank: the embedded switch's counts where its watch
// saw every host's link (none otherwise), the hosts' own through a
// --switch daemon, the ring's counters; the relays' are counted by
// nothing.
func TestHostLinkBytes(t *testing.T) {
	c := Config{Warmup: 1, Iters: 3}
	for _, tc := range []struct {
		path     string
		embedded bool
		links    int
		up, down float64
		from     string
	}{
		{PathSwitch, true, 4, 1000, 2000, "switch"},
		{PathMulticast, true, 3, 0, 0, ""},
		{PathMulticast, true, 5, 0, 0, ""},
		{PathSwitch, false, 0, 25, 50, "hosts"},
		{PathRing, false, 0, 25, 50, "ring"},
		{PathFanout, false, 0, 0, 0, ""},
	} {
		row := &Row{Path: tc.path, Result: Result{Ranks: 4, TxBytes: 100, RxBytes: 200}}
		hostLinkBytes(row, c, tc.embedded, 16000, 32000, tc.links)
		if row.HostUpBytes != tc.up || row.HostDownBytes != tc.down || row.LinkBytesFrom != tc.from {
			t.Errorf("%s (embedded %v, %d links): %v up, %v down from %q; want %v, %v from %q", tc.path, tc.embedded, tc.links,
				row.HostUpBytes, row.HostDownBytes, row.LinkBytesFrom, tc.up, tc.down, tc.from)
		}
	}
}

// A row's server CPU is this process's where it held the row's server (a
// relay, the embedded switch) with a process per rank; with the ranks in
// this process too, the ranks' CPU is no row's.
func TestServerCPU(t *testing.T) {
	cpu := &cpuSpan{spent: cpuTimes{user: 4 * time.Millisecond, sys: 2 * time.Millisecond}, ok: true}
	procs := &suiteRun{Suite: Suite{Procs: &Procs{}}}
	inHere := &suiteRun{}
	for _, tc := range []struct {
		s         *suiteRun
		path      string
		cpu       *cpuSpan
		embedded  bool
		server    float64
		ranksKept bool
	}{
		{procs, PathFanout, cpu, false, 0.002, true},
		{procs, PathSwitch, cpu, true, 0.002, true},
		{procs, PathSwitch, cpu, false, 0, true},
		{procs, PathRing, cpu, false, 0, true},
		{inHere, PathRelay, nil, false, 0, false},
		{inHere, PathSwitch, nil, true, 0, false},
		{inHere, PathRing, nil, false, 0, true},
	} {
		row := &Row{Path: tc.path, Result: Result{RanksUserS: 0.5, RanksSysS: 0.25}}
		tc.s.serverCPU(row, tc.cpu, tc.embedded, 2)
		if row.ServerUserS != tc.server || row.ServerSysS != tc.server/2 || (row.RanksUserS == 0.5 && row.RanksSysS == 0.25) != tc.ranksKept {
			t.Errorf("%s (procs %v, embedded %v): server %v+%v s, ranks %v+%v s", tc.path, tc.s.Procs != nil, tc.embedded,
				row.ServerUserS, row.ServerSysS, row.RanksUserS, row.RanksSysS)
		}
	}
}

// A row's profile is named by P, size, path, packet and round (from 1),
// and is taken only of what runs in this process: with a process per
// rank, not of the ring nor of a --switch daemon's rows.
func TestProfilePrefix(t *testing.T) {
	embedded := &swtch.Switch{}
	s := &suiteRun{Suite: Suite{Profile: "/prof", Procs: &Procs{}}, servers: map[int]*servers{
		1024: {embedded: embedded}, 8192: {},
	}}
	for _, tc := range []struct {
		l    leg
		want string
	}{
		{leg{PathSwitch, 1024}, "p8-1MiB-switch-1KiB-r3"},
		{leg{PathSwitch, 8192}, ""},
		{leg{PathFanout, 8192}, "p8-1MiB-fanout-8KiB-r3"},
		{leg{PathRing, 0}, ""},
	} {
		want := tc.want
		if want != "" {
			want = filepath.Join("/prof", want)
		}
		if got := s.profilePrefix(tc.l, 8, 1<<20, 2); got != want {
			t.Errorf("%v: %q, want %q", tc.l, got, want)
		}
	}
	s.Procs = nil
	if got := s.profilePrefix(leg{PathRing, 0}, 2, 4096, 0); got != filepath.Join("/prof", "p2-4KiB-ring-r1") {
		t.Errorf("the ring in this process: %q", got)
	}
	s.Profile = ""
	if got := s.profilePrefix(leg{PathSwitch, 1024}, 2, 4096, 0); got != "" {
		t.Errorf("no profile asked for: %q", got)
	}
}

// The table's cells: CPU where it was read (either part), bytes where
// something counted them, and no verdict for a relay's rows.
func TestDenseCells(t *testing.T) {
	if got := cpuCell(0, 0.0021); got != "0.0+2.1 ms" {
		t.Errorf("cpuCell(0, 2.1 ms) = %q", got)
	}
	if got := cpuCell(0, 0); got != "-" {
		t.Errorf("cpuCell(0, 0) = %q", got)
	}
	if got := linkCell(0, "switch"); got == "-" {
		t.Errorf("linkCell(0, switch) = %q, want a count", got)
	}
	if got := linkCell(1024, ""); got != "-" {
		t.Errorf("linkCell from nothing = %q", got)
	}
	for path, want := range map[string]string{PathRelay: "n/a", PathFanout: "n/a", PathFanoutMC: "n/a", PathSwitch: "yes", PathRing: "yes"} {
		if got := yesNo(true, path); got != want {
			t.Errorf("yesNo(true, %s) = %q, want %q", path, got, want)
		}
	}
	if got := yesNo(false, PathSwitch); got != "no" {
		t.Errorf("yesNo(false, switch) = %q", got)
	}
}
