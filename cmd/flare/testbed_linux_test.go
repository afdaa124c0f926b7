//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flare-net/flare/internal/units"
	"github.com/flare-net/flare/testbed"
)

// testbedLeft lists this process's testbed namespaces still present.
func testbedLeft(t *testing.T) []string {
	t.Helper()
	left, err := testbed.Namespaces(fmt.Sprintf("%s%d-", testbed.Kind, os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	return left
}

// skipWithoutTestbed skips, saying what is missing, where the testbed
// cannot run: not root, or no ip, tc or sysctl.
func skipWithoutTestbed(t *testing.T) {
	t.Helper()
	if err := testbed.Check(false); err != nil {
		t.Skipf("the emulated cluster cannot run here: %v", err)
	}
}

type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Four hosts on one switch, 200 Mbit/s links, 4 MiB each, in 8 KiB packets
// (the packet size at which this 2-core box holds 200 Mbit/s with CPU to
// spare, docs/FIGURE15.md: at 1 KiB it is CPU-bound there, and beside any
// other load misses the links' bound): the in-network
// allreduce is verified, its time is within 15% of the link-bound ideal
// (the best of up to five runs: noise on a shared machine only adds time, so
// the fastest run is the one the links bound), every host link carried the
// vector once each way (frames, headers and resends included), and no
// namespace is left afterwards.
func TestTestbedLinkBound(t *testing.T) {
	skipWithoutTestbed(t)
	cfg := testbed.Config{Hosts: 4, LinkBps: 200e6, Bytes: 4 << 20, PacketBytes: 8 << 10, Iters: 5, Warmup: 1,
		Paths: []string{testbed.PathSwitch}, Exe: flareBin, Log: logWriter{t}}
	attempts := 5
	if raceEnabled {
		// Race-built hosts and daemon are CPU-bound on 2 cores: the race
		// pass checks the paths, build and teardown on a smaller vector.
		cfg.Bytes, cfg.Iters, attempts = 1<<20, 1, 1
	}
	var best testbed.Row
	var table strings.Builder
	quiet := time.Now().Add(45 * time.Second) // what waiting for a quiet box may take, over all attempts
	for a := range attempts {
		// The bound is the links' only where the hosts and the daemon get
		// the CPUs when they need them: `go test ./...` runs other
		// packages' tests beside this one, and with both CPUs taken the
		// hosts stall past their retransmission timeouts and resend on the
		// shaped links. So each attempt starts once the box is quiet, or
		// when the time to wait for it is spent.
		for !raceEnabled && time.Now().Before(quiet) {
			if busy := testbed.BoxBusy(250 * time.Millisecond); busy < 0.3 {
				break
			}
		}
		rows, err := testbed.Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if left := testbedLeft(t); len(left) > 0 {
			t.Fatalf("namespaces left after run %d: %v", a+1, left)
		}
		r := rows[0]
		fmt.Fprintf(&table, "run %d: median %.2f ms, ideal %.2f ms (%.3f×), model %.2f ms, retransmits %d, cpu busy %.0f%%, switch cpu %.2f, cpu-bound %v\n",
			a+1, r.MedianS*1e3, r.IdealS*1e3, r.OfIdeal, r.ModelS*1e3, r.Retransmits, r.CPUBusy*100, r.SwitchCPU, r.CPUBound)
		if !r.Verified || r.Ranks != 4 || r.Path != testbed.PathSwitch {
			t.Fatalf("run %d: %+v", a+1, r)
		}
		if r.OfIdeal < 0.9 {
			t.Fatalf("run %d: %.2f ms, %.2f× the links' bound %.2f ms: faster than the shaped links carry", a+1, r.MedianS*1e3, r.OfIdeal, r.IdealS*1e3)
		}
		if len(r.Links) != 4 {
			t.Fatalf("run %d: %d links reported, want 4", a+1, len(r.Links))
		}
		for _, l := range r.Links {
			if l.Lost != 0 {
				t.Errorf("run %d: link %s lost %d packets with no loss set", a+1, l.Link, l.Lost)
			}
		}
		for _, l := range r.Links {
			// Once each way per call: the payload at least; headers are 7%
			// at 1 KiB packets, resends on a busy box a few more.
			if lo, hi := float64(cfg.Bytes), 1.5*float64(cfg.Bytes); l.UpBytes < lo || l.UpBytes > hi || l.DownBytes < lo || l.DownBytes > hi {
				t.Errorf("run %d: link %s carried %.0f up and %.0f down per call, want %.0f..%.0f each", a+1, l.Link, l.UpBytes, l.DownBytes, lo, hi)
			}
		}
		if best.MedianS == 0 || r.OfIdeal < best.OfIdeal {
			best = r
		}
		if best.OfIdeal <= 1.15 {
			break
		}
	}
	t.Logf("4 hosts, 200Mbit links, %s each:\n%s", units.FormatSize(cfg.Bytes), table.String())
	if !raceEnabled && best.OfIdeal > 1.15 {
		t.Errorf("in-network time %.2f ms is %.2f× the link-bound ideal %.2f ms in the best of %d runs, want within 15%% (cpu busy %.0f%%, cpu-bound %v)",
			best.MedianS*1e3, best.OfIdeal, best.IdealS*1e3, attempts, best.CPUBusy*100, best.CPUBound)
	}
}

// A run that fails part-way (a daemon that cannot start) and one cancelled
// while its hosts run both return an error and leave no namespace.
func TestTestbedTeardown(t *testing.T) {
	skipWithoutTestbed(t)
	base := testbed.Config{Hosts: 3, LinkBps: 50e6, Bytes: 16 << 20, Iters: 5, Exe: flareBin,
		Paths: []string{testbed.PathSwitch}, Log: logWriter{t}}
	t.Run("daemon fails to start", func(t *testing.T) {
		cfg := base
		cfg.SwitchArgs = []string{"--no-such-flag"}
		_, err := testbed.Run(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), "exited before listening") {
			t.Fatalf("Run with a bad daemon flag: %v, want the daemon's exit", err)
		}
		if left := testbedLeft(t); len(left) > 0 {
			t.Fatalf("namespaces left: %v", left)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		// 16 MiB at 50 Mbit/s is 2.7 s a call: cancelled well inside it.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		start := time.Now()
		_, err := testbed.Run(ctx, base)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("cancelled Run: %v, want it stopped by the deadline", err)
		}
		if el := time.Since(start); el > 30*time.Second {
			t.Errorf("cancelled Run took %v to return", el)
		}
		if left := testbedLeft(t); len(left) > 0 {
			t.Fatalf("namespaces left: %v", left)
		}
	})
}

// A testbed setting out of range is refused before anything is built,
// with the flag that set it and the range.
func TestTestbedFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--hosts", "1"}, "testbed: --hosts 1: must be in 2..64"},
		{[]string{"--loss", "0.9"}, "testbed: --loss 0.9: must be a fraction in [0, 0.5]"},
		{[]string{"--iters", "-1"}, "testbed: --iters -1 with --warmup 1: want iters >= 1 and warmup >= 0"},
		{[]string{"--tree", "8x16"}, "testbed: --tree LEAVES 8 with --tree HOSTS 16: want 2 or more leaves, 1 or more hosts each, 64 hosts at most"},
		{[]string{"--paths", "relay"}, `testbed: --paths "relay": want switch, ring, sparse or host-sparse`},
		{[]string{"--uplink", "1Gbit"}, "--uplink: only with --tree"},
		{[]string{"--tree", "2x2", "--hosts", "4"}, "--tree with --hosts: give one"},
		{[]string{"--sweep-link", "100Mbit"}, `--sweep-link "100Mbit": want LO..HI such as 100Mbit..10Gbit`},
	} {
		err := run(context.Background(), append([]string{"testbed"}, tc.args...), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("flare testbed %s: %v, want %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

// A two-level tree (two leaves of two hosts under a root, uplinks faster
// than the host links) with loss on every link runs every path, each
// verified on every host: the switches' tree (the root's --children, the
// leaves' --parent), the routes across the root that the ring's and the
// host sparse baseline's TCP take, the sparse paths' density, the loss
// rules (every link of the switch path loses packets, which the hosts
// resend), the links' counters, vs_ring and the processes' CPU; no
// namespace is left afterwards.
func TestTestbedTreeEveryPath(t *testing.T) {
	skipWithoutTestbed(t)
	if testbed.Check(true) != nil {
		t.Skip("nft not installed (Debian package nftables; .ci/run installs it)")
	}
	cfg := testbed.Config{Leaves: 2, PerLeaf: 2, LinkBps: 1e9, UplinkBps: 2e9, Loss: 0.01, Bytes: 1 << 20, Iters: 2, Warmup: 1,
		Paths:     []string{testbed.PathSwitch, testbed.PathRing, testbed.PathSparse, testbed.PathHostSparse},
		Densities: []float64{0.05}, Overlap: 0.5, Timeout: 20 * time.Second, Exe: flareBin, Log: logWriter{t}}
	rows, err := testbed.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if left := testbedLeft(t); len(left) > 0 {
		t.Fatalf("namespaces left: %v", left)
	}
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4 (a path each, the sparse ones at one density)", len(rows))
	}
	links := []string{"h0", "h1", "h2", "h3", "leaf0-root", "leaf1-root"}
	for i, r := range rows {
		t.Logf("%s: median %.2f ms, ideal %.2f ms, vs_ring %.2f, retransmits %d, cpu busy %.2f, switch cpu %.3f (thread %.3f), host cpu %.3f, links %+v",
			r.Path, r.MedianS*1e3, r.IdealS*1e3, r.VsRing, r.Retransmits, r.CPUBusy, r.SwitchCPU, r.SwitchThreadCPU, r.HostCPU, r.Links)
		if r.Path != cfg.Paths[i] || !r.Verified || r.Ranks != 4 || r.Topology != "2x2" || r.LinkBps != 1e9 || r.UplinkBps != 2e9 ||
			r.Loss != 0.01 || r.Iters != 2 || !(r.MedianS > 0) || !(r.IdealS > 0) || !(r.ModelS > 0) {
			t.Errorf("row %d: %+v", i, r)
		}
		if r.MedianS < 0.9*r.IdealS {
			t.Errorf("%s: %.2f ms, below the links' bound %.2f ms", r.Path, r.MedianS*1e3, r.IdealS*1e3)
		}
		sparse := r.Path == testbed.PathSparse || r.Path == testbed.PathHostSparse
		if want := map[bool]float64{true: 0.05}[sparse]; r.Density != want {
			t.Errorf("%s: density %g, want %g", r.Path, r.Density, want)
		}
		if r.Path == testbed.PathSparse && r.Storage != "hash" {
			t.Errorf("sparse: storage %q, want hash", r.Storage)
		}
		if !(r.CPUBusy > 0 && r.CPUBusy <= 1) || !(r.HostCPU > 0) {
			t.Errorf("%s: cpu busy %g, host cpu %g", r.Path, r.CPUBusy, r.HostCPU)
		}
		if len(r.Links) != len(links) {
			t.Fatalf("%s: links %+v, want %v", r.Path, r.Links, links)
		}
		for j, l := range r.Links {
			if l.Link != links[j] {
				t.Errorf("%s: link %d is %s, want %s", r.Path, j, l.Link, links[j])
			}
			rate := map[bool]float64{false: cfg.LinkBps, true: cfg.UplinkBps}[strings.HasSuffix(l.Link, "-root")]
			if up, down := l.UpBytes*8/(rate*r.MedianS), l.DownBytes*8/(rate*r.MedianS); l.UpUtil != up || l.DownUtil != down {
				t.Errorf("%s: link %s used %g up and %g down, want %g and %g of its %s", r.Path, l.Link, l.UpUtil, l.DownUtil, up, down, testbed.FormatRate(rate))
			}
			// 1% of some 3,000 packets each way over the timed calls.
			if r.Path == testbed.PathSwitch && l.Lost == 0 {
				t.Errorf("switch: link %s lost no packet at 1%% loss", l.Link)
			}
			// Dense: each host's vector goes up its link and the sum comes
			// down; each leaf's partial sum up to the root and the whole
			// back; the ring's hops between the leaves cross both uplinks.
			if !sparse && (l.UpBytes < float64(cfg.Bytes)/2 || l.DownBytes < float64(cfg.Bytes)/2) {
				t.Errorf("%s: link %s carried %.0f up and %.0f down per call, want at least half the vector each way", r.Path, l.Link, l.UpBytes, l.DownBytes)
			}
		}
	}
	// A thread's CPU is its process's too: no more than it, but for a
	// clock tick's skew between the two readings (here the daemons' whole
	// use was 0.33-0.41, their busiest thread's 0.11-0.19).
	if rows[0].SwitchCPU <= 0 || rows[0].SwitchThreadCPU <= 0 || rows[0].SwitchThreadCPU > rows[0].SwitchCPU+0.05 {
		t.Errorf("switch path: the daemons' cpu %g, their busiest thread's %g", rows[0].SwitchCPU, rows[0].SwitchThreadCPU)
	}
	if rows[0].Retransmits == 0 {
		t.Errorf("switch path: no retransmission at 1%% loss on every link")
	}
	if rows[1].VsRing != 1 || rows[0].VsRing != rows[1].MedianS/rows[0].MedianS || rows[3].VsRing != 1 ||
		rows[2].VsRing != rows[3].MedianS/rows[2].MedianS {
		t.Errorf("vs_ring: switch %g, ring %g, sparse %g, host sparse %g", rows[0].VsRing, rows[1].VsRing, rows[2].VsRing, rows[3].VsRing)
	}
}
