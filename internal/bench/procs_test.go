package bench

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// fakeRank is a rank process for Procs: it goes through the barrier of
// its calls as a rank does (ready, start; done, check; then finished),
// and prints a result whose numbers grow with its rank (1-based k):
// median k ms, p99 2k ms, k retransmissions, 100k bytes up, 200k down,
// k pairs spilled, k ms of user CPU and 2k of kernel, verified unless it
// is the rank named bad. Its algo is its GOMAXPROCS, its op the number
// of ring peers it was given, its dtype its world. exit, when it is the
// rank, makes it exit 3; garbage makes it print no JSON.
const fakeRank = `#!/bin/sh
rank=$1 calls=$2 peers=$3 world=$4 bad=$5 exit=$6 garbage=$7
i=0
while [ $i -lt $calls ]; do
	printf x >&4; dd bs=1 count=1 <&3 >/dev/null 2>&1
	printf x >&4; dd bs=1 count=1 <&3 >/dev/null 2>&1
	i=$((i+1))
done
printf x >&4
[ "$rank" = "$exit" ] && exit 3
[ "$rank" = "$garbage" ] && { echo "not a result"; exit 0; }
k=$((rank+1)) v=true
[ "$rank" = "$bad" ] && v=false
printf '{"ranks":%s,"bytes":1048576,"dtype":"%s","op":"%s","algo":"%s","iters":2,"median_s":0.00%s,"p99_s":0.00%s,"verified":%s,"retransmits":%s,"tx_bytes":%s00,"rx_bytes":%s,"spilled_pairs":%s,"ranks_user_s":0.00%s,"ranks_sys_s":0.00%s}\n' \
	"$world" "$world" "$peers" "$GOMAXPROCS" $k $((2*k)) $v $k $k $((200*k)) $k $k $((2*k))
`

// fakeProcs runs fakeRank; bad, exit and garbage name a rank (-1: none).
func fakeProcs(t *testing.T, bad, exit, garbage int) *Procs {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "rank.sh")
	if err := os.WriteFile(exe, []byte(fakeRank), 0o755); err != nil {
		t.Fatal(err)
	}
	return &Procs{Exe: exe, Args: func(c Config) []string {
		return []string{strconv.Itoa(c.Rank), strconv.Itoa(c.Warmup + c.Iters), strconv.Itoa(len(c.Peers)), strconv.Itoa(c.World),
			strconv.Itoa(bad), strconv.Itoa(exit), strconv.Itoa(garbage)}
	}}
}

// A row with a process per rank is its slowest rank's time (median and
// p99 alike), the counts and CPU of every rank summed, verified only if
// every rank verified, its bandwidth from that time; each rank runs
// every call through the barrier as one rank of the world, with
// GOMAXPROCS=1 unless the user set it; a ring's ranks get an address
// each.
func TestProcsMergesTheRanks(t *testing.T) {
	if _, ok := os.LookupEnv("GOMAXPROCS"); ok {
		t.Skip("GOMAXPROCS is set: the rank processes take it")
	}
	c := Config{Ranks: 4, Count: 1 << 18, Iters: 2, Warmup: 1, Algo: "auto"}
	res, cpu, err := fakeProcs(t, -1, -1, -1).run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if res.MedianS != 0.004 || res.P99S != 0.008 || res.Retransmits != 10 || res.TxBytes != 1000 || res.RxBytes != 2000 ||
		res.SpilledPairs != 10 || math.Abs(res.RanksUserS-0.010) > 1e-12 || math.Abs(res.RanksSysS-0.020) > 1e-12 || !res.Verified {
		t.Errorf("merged %+v: want rank 3's 4 ms and 8 ms, the sums 10, 1000, 2000, 10, 10 ms and 20 ms, verified", res)
	}
	if res.AlgbwGBps != float64(1<<20)/0.004/1e9 || res.Algo != "1" || res.DType != "4" || res.Op != "0" {
		t.Errorf("merged %+v: want algbw from 4 ms, GOMAXPROCS=1, a world of 4 and no peers", res)
	}
	if _, readable := processTimes(); cpu == nil || cpu.ok != readable {
		t.Errorf("this process's CPU %+v, want it taken over the measured calls", cpu)
	}
	c.Algo = "ring"
	for _, p := range []int{1, 2} {
		c.Ranks = p
		res, _, err := fakeProcs(t, -1, -1, -1).run(context.Background(), c)
		if err != nil || res.Op != strconv.Itoa(p) {
			t.Errorf("a ring of %d: %v, each rank given %s peers, want %d", p, err, res.Op, p)
		}
	}
	c.Ranks, c.Algo = 3, "auto"
	if res, _, err := fakeProcs(t, 1, -1, -1).run(context.Background(), c); err != nil || res.Verified {
		t.Errorf("a rank that did not verify: %v, verified %v", err, res.Verified)
	}
}

// A rank that fails, or prints no result, fails the row naming it.
func TestProcsRankFails(t *testing.T) {
	c := Config{Ranks: 3, Count: 1 << 10, Iters: 1, Algo: "auto"}
	for _, tc := range []struct {
		exit, garbage int
		want          string
	}{{2, -1, "rank 2: exit status 3"}, {-1, 1, "rank 1: reading its result \"not a result\\n\""}} {
		_, _, err := fakeProcs(t, -1, tc.exit, tc.garbage).run(context.Background(), c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v, want %q", err, tc.want)
		}
	}
}

// The bench process running the switch beside the rank processes takes
// the CPUs they leave, at least one, and gives them back after.
func TestShareBox(t *testing.T) {
	if v, ok := os.LookupEnv("GOMAXPROCS"); ok {
		t.Setenv("GOMAXPROCS", v) // restored after
		os.Unsetenv("GOMAXPROCS")
	}
	before := runtime.GOMAXPROCS(0)
	for ranks, want := range map[int]int{runtime.NumCPU() + 8: 1, 0: runtime.NumCPU()} {
		undo := shareBox(ranks)
		if got := runtime.GOMAXPROCS(0); got != want {
			t.Errorf("shareBox(%d): GOMAXPROCS %d, want %d", ranks, got, want)
		}
		undo()
		if got := runtime.GOMAXPROCS(0); got != before {
			t.Errorf("after shareBox(%d): GOMAXPROCS %d, want %d back", ranks, got, before)
		}
	}
	t.Setenv("GOMAXPROCS", "7")
	undo := shareBox(1)
	defer undo()
	if got := runtime.GOMAXPROCS(0); got != before || rankGOMAXPROCS() != "7" {
		t.Errorf("with GOMAXPROCS set: %d here, %s for the ranks; want both the user's", got, rankGOMAXPROCS())
	}
}
