package swtch_test

import (
	"context"
	"io"
	"log/slog"
	"net/netip"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/hostlib"
	"github.com/flare-net/flare/internal/inproctest"
	swtch "github.com/flare-net/flare/switch"
	"github.com/flare-net/flare/wire"
)

// readersJobs runs two jobs at once through sw, each host's conn made by
// listen: a float32 sum of world 4 and an int32 max of world 3, with
// values whose results are exact, and checks every rank's result.
func readersJobs(t *testing.T, sw *swtch.Switch, listen func() conn.Conn) {
	t.Helper()
	const elements = 50_000 // 196 blocks, the last one short
	opts := func(job uint32, world int, dt wire.DType, op wire.Op) func(r int) hostlib.Options {
		return func(r int) hostlib.Options {
			o := hostlib.Options{Switch: sw.Addr().String(), Job: job, Token: 42, Rank: r, World: world,
				DType: dt, Op: op, Elements: elements, Timeout: 60 * time.Second}
			if listen != nil {
				o.Conn = listen()
			}
			return o
		}
	}
	sums := inproctest.JoinAll(t, 4, opts(21, 4, wire.Float32, wire.OpSum))
	maxes := inproctest.JoinAll(t, 3, opts(22, 3, wire.Int32, wire.OpMax))
	fbufs, fwant := sumInputs(len(sums), elements)
	ibufs := make([][]int32, len(maxes))
	iwant := make([]int32, elements)
	for r := range ibufs {
		ibufs[r] = make([]int32, elements)
		for i := range ibufs[r] {
			ibufs[r][i] = int32((i*7919+r*104729)%200_001) - 100_000
		}
	}
	for i := range iwant {
		iwant[i] = max(ibufs[0][i], ibufs[1][i], ibufs[2][i])
	}
	var g errgroup.Group
	for round := range 2 {
		for r, s := range sums {
			g.Go(func() error { return hostlib.AllReduce(context.Background(), s, fbufs[r]) })
		}
		for r, s := range maxes {
			g.Go(func() error { return hostlib.AllReduce(context.Background(), s, ibufs[r]) })
		}
		if err := g.Wait(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for r := range fbufs {
			for i, v := range fbufs[r] {
				if v != fwant[i] {
					t.Fatalf("round %d, float32 sum, rank %d: element %d = %v, want %v", round, r, i, v, fwant[i])
				}
			}
			copy(fbufs[r], fwant) // the next round sums the sums
		}
		for i := range fwant {
			fwant[i] *= 4
		}
		for r := range ibufs {
			for i, v := range ibufs[r] {
				if v != iwant[i] {
					t.Fatalf("round %d, int32 max, rank %d: element %d = %v, want %v", round, r, i, v, iwant[i])
				}
			}
		}
	}
}

// readerRx is the datagrams each of sw's readers has received.
func readerRx(t *testing.T, sw *swtch.Switch) []float64 {
	t.Helper()
	rx := make([]float64, sw.Readers())
	for i := range rx {
		rx[i] = metricLabeled(t, sw, "flare_reader_packets_total", `dir="rx",reader="`+strconv.Itoa(i)+`"`)
	}
	return rx
}

// TestReadersMemNetwork runs a switch whose data port is a group of three
// in-memory conns, steered by block id as the daemon's sockets are (one
// block at a time, and in runs of four, Config.SteerRun), and by the
// sender's flow as the kernel steers where it cannot run the steering
// program: every result is exact, and every reader took packets (by
// block, each reader takes every third block, or run, of every host; by
// flow, the seven hosts' joins, data and aborts land on different
// readers).
func TestReadersMemNetwork(t *testing.T) {
	for _, tc := range []struct {
		name string
		g    conn.GroupConfig
	}{
		{"block", swtch.DataPortGroup(3, 1)},
		{"block-runs", swtch.DataPortGroup(3, 4)},
		{"flow", conn.GroupConfig{Sockets: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			network := conn.NewMemNetwork()
			cs, err := network.ListenGroup(netip.MustParseAddrPort("127.0.0.1:7470"), tc.g)
			if err != nil {
				t.Fatal(err)
			}
			sw := startSwitch(t, swtch.Config{Conns: cs, Admin: "127.0.0.1:0"})
			if sw.Readers() != 3 {
				t.Fatalf("%d readers for 3 conns", sw.Readers())
			}
			readersJobs(t, sw, func() conn.Conn {
				c, err := network.Listen(netip.AddrPort{})
				if err != nil {
					t.Fatal(err)
				}
				return c
			})
			rx := readerRx(t, sw)
			for i, n := range rx {
				if n == 0 {
					t.Errorf("reader %d of 3 received nothing (%v)", i, rx)
				}
			}
			t.Logf("datagrams per reader: %v", rx)
		})
	}
}

// TestReadersUDP runs the daemon with three SO_REUSEPORT sockets on
// loopback: the kernel steers by block id where it takes the program
// (every reader then takes packets), and every result is exact either way.
func TestReadersUDP(t *testing.T) {
	sw := startSwitch(t, swtch.Config{Readers: 3, Admin: "127.0.0.1:0"})
	t.Logf("steering in effect: %v", sw.Steering())
	readersJobs(t, sw, nil)
	rx := readerRx(t, sw)
	t.Logf("datagrams per reader: %v", rx)
	if sw.Steering() == conn.SteerKey {
		for i, n := range rx {
			if n == 0 {
				t.Errorf("steering by block, reader %d of 3 received nothing (%v)", i, rx)
			}
		}
	}
}

// TestReadersUDPSteerRun: hosts send runs of consecutive blocks as one GSO
// datagram, which the kernel steers by its first block. With the data port
// steering runs of 64 blocks (Config.SteerRun), two readers each take at
// least 30% of a 1 MiB allreduce's datagrams (16 runs), and the sums are
// exact.
func TestReadersUDPSteerRun(t *testing.T) {
	sw := startSwitch(t, swtch.Config{Readers: 2, SteerRun: 64, Admin: "127.0.0.1:0"})
	if sw.Steering() != conn.SteerKey {
		t.Skipf("the kernel steers by %v here, not by block: nothing to balance", sw.Steering())
	}
	const world, elements = 4, 1 << 18 // 1024 blocks of 1 KiB
	ss := joinRanks(t, sw.Addr().String(), 23, world, elements)
	bufs := make([][]float32, world)
	for r := range bufs {
		bufs[r] = make([]float32, elements)
	}
	for round := range 3 {
		for r := range bufs {
			for i := range bufs[r] {
				bufs[r][i] = float32(r + i%7)
			}
		}
		allreduceAll(t, ss, bufs)
		for r := range bufs {
			for i, v := range bufs[r] {
				if want := float32(world*(world-1)/2 + world*(i%7)); v != want {
					t.Fatalf("round %d, rank %d: element %d = %v, want %v", round, r, i, v, want)
				}
			}
		}
	}
	rx := readerRx(t, sw)
	t.Logf("datagrams per reader: %v", rx)
	total := rx[0] + rx[1]
	for i, n := range rx {
		if n < 0.3*total {
			t.Errorf("reader %d took %.0f of %.0f datagrams: runs of 64 blocks spread over both (%v)", i, n, total, rx)
		}
	}
}

// TestReadersAbortAcrossReaders: with the data port's conns steered by
// flow, the two ranks' joins reach different readers; rank 1's cancelled
// join aborts the job, and rank 0, waiting in Join on the other reader,
// fails at once with the abort.
func TestReadersAbortAcrossReaders(t *testing.T) {
	network := conn.NewMemNetwork()
	cs, err := network.ListenGroup(netip.MustParseAddrPort("127.0.0.1:7470"), conn.GroupConfig{Sockets: 2})
	if err != nil {
		t.Fatal(err)
	}
	sw := startSwitch(t, swtch.Config{Conns: cs, Admin: "127.0.0.1:0"})
	opts := func(r int) hostlib.Options {
		c, err := network.Listen(netip.AddrPort{})
		if err != nil {
			t.Fatal(err)
		}
		return hostlib.Options{Switch: sw.Addr().String(), Conn: c, Job: abortJob, Token: 0xab0e7, Rank: r, World: 3,
			DType: wire.Float32, Op: wire.OpSum, Elements: 1000, JoinTimeout: 30 * time.Second}
	}
	// Both readers have a rank's join (the in-memory ports are the same every run).
	joined := func() bool { rx := readerRx(t, sw); return rx[0] > 0 && rx[1] > 0 }
	cancelOneJoin(t, opts, joined)
	waitIdle(t, sw, 5*time.Second)
}

// TestReadersShutdown: a switch with several readers and writers, stopped
// after an allreduce, leaves no goroutine behind.
func TestReadersShutdown(t *testing.T) {
	base := runtime.NumGoroutine()
	sw, err := swtch.New(swtch.Config{Listen: "127.0.0.1:0", Admin: "off", Readers: 3, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sw.Run(ctx) }()
	<-sw.Ready()
	const world, elements = 3, 20_000
	ss := joinRanks(t, sw.Addr().String(), 5, world, elements)
	bufs := make([][]float32, world)
	for r := range bufs {
		bufs[r] = make([]float32, elements)
		for i := range bufs[r] {
			bufs[r][i] = 1
		}
	}
	allreduceAll(t, ss, bufs)
	if bufs[0][elements-1] != world {
		t.Fatalf("sum %v, want %d", bufs[0][elements-1], world)
	}
	for _, s := range ss {
		s.Close()
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines left, %d before:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
