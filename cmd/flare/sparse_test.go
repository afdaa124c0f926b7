package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/flare-net/flare/internal/bench"
	"github.com/flare-net/flare/wire"
)

// Sparse allreduce through the daemon process, verified element by
// element against the plain sparse reference: both storages, several
// dtypes and ops, one process per rank and all ranks in one process,
// densities from 0.1% to 50%, and the host sparse baseline over --peers.
func TestE2ESparse(t *testing.T) {
	d := startDaemon(t)
	ctx := context.Background()
	job := 300
	for _, tc := range []struct {
		world   int
		perRank bool
		args    []string
	}{
		{4, false, []string{"--storage", "hash", "--density", "0.01", "--dtype", "float32", "--op", "sum"}},
		{4, false, []string{"--storage", "array", "--density", "0.2", "--dtype", "int32", "--op", "max"}},
		{3, true, []string{"--storage", "hash", "--density", "0.3", "--dtype", "float64", "--op", "sum", "--algo", "multi2"}},
		{2, true, []string{"--storage", "array", "--density", "0.001", "--dtype", "int8", "--op", "min", "--overlap", "1"}},
		{8, false, []string{"--storage", "hash", "--density", "0.5", "--dtype", "bfloat16", "--op", "sum", "--overlap", "0"}},
		{1, false, []string{"--storage", "hash", "--density", "0.05", "--dtype", "int64", "--op", "sum"}},
		{3, false, []string{"--storage", "array", "--density", "0.1", "--dtype", "float16", "--op", "sum"}},
	} {
		job++
		if raceEnabled && tc.world > 4 || raceEnabled && tc.args[3] == "0.2" {
			continue // the race pass takes the small cases; the plain pass all of them
		}
		args := append([]string{"--sparse", "--bytes", "200000"}, tc.args...)
		rows, err := allreduce(ctx, t, d, job, tc.world, tc.perRank, args...)
		if err != nil {
			t.Fatalf("P=%d %v: %v", tc.world, tc.args, err)
		}
		for _, r := range rows {
			if !r.Verified || r.Storage == "" || r.Density == 0 || r.TxBytes <= 0 || r.RxBytes <= 0 {
				t.Errorf("P=%d %v: row %+v lacks the sparse fields", tc.world, tc.args, r)
			}
		}
	}
	// The host sparse baseline, one process per rank over --peers.
	peers, err := bench.FreeTCPAddrs(3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := allreduce(ctx, t, d, 399, 3, true, "--sparse", "--algo", "ring", "--density", "0.05", "--bytes", "100000",
		"--peers", strings.Join(peers, ",")); err != nil {
		t.Fatal(err)
	}
	// A sparse packet whose count overruns its datagram is dropped and counted.
	c, err := net.Dial("udp", d.data)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	before := d.metric(t, `flare_dropped_packets_total{reason="length"}`)
	h := wire.Header{Version: wire.Version, Type: wire.TypeSparse, Job: 301, DType: wire.Float32, Op: wire.OpSum, Count: 100}
	c.Write(wire.AppendPacket(nil, &h, make([]byte, 2*wire.PairSize(wire.Float32))))
	deadline := time.Now().Add(5 * time.Second)
	for d.metric(t, `flare_dropped_packets_total{reason="length"}`) <= before {
		if time.Now().After(deadline) {
			t.Fatal("an overrunning sparse packet was not counted as a length drop")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// flare bench --sparse reports every path per density with its traffic.
func TestE2EBenchSparse(t *testing.T) {
	var paths []string
	for _, r := range flareRows[bench.SparseRow](t, "bench", "--sparse", "--ranks", "3", "--bytes", "64KiB", "--densities", "0.01,0.2",
		"--iters", "1", "--warmup", "0", "--json") {
		if !r.Verified || r.TxBytes <= 0 || r.RxBytes <= 0 || r.TrafficVsDense <= 0 {
			t.Errorf("row %+v", r)
		}
		paths = append(paths, r.Path)
	}
	if got := strings.Join(paths, " "); got != "dense hash array host-sparse hash array host-sparse" {
		t.Errorf("paths %q", got)
	}
}
