package swtch_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/internal/inproc"
	"github.com/flare-net/flare/internal/xcpu"
	"github.com/flare-net/flare/proto"
	swtch "github.com/flare-net/flare/switch"
	"github.com/flare-net/flare/wire"
)

// Shape of the path benchmarks: P = 8 ranks of 1 MiB of float32 each, in
// 1 KiB packets (1024 blocks, 8192 data packets per allreduce).
const (
	pathRanks = 8
	// pathWindow is the benchmark's fixed load, the same at every commit:
	// each rank keeps 64 blocks in flight, the daemon's default window
	// before it was sized by the packet size (at its default for this job,
	// 256, more packets in flight spill the caches and a packet costs more
	// CPU in memory; docs/PERFORMANCE.md).
	pathWindow   = 64
	pathElements = 1 << 18
)

// BenchmarkMemPath measures the switch's own packet path, reader → job
// table → HPU → handler → egress → writer, over the in-memory network, so
// that no kernel is in the way; one op is one allreduce of P = 8 ranks
// of 1 MiB float32 (8192 data packets in, 8192 results out). Beside it
// the same packets through the fan-out relay (the switch's communication
// pattern with no processing unit and no handler) and the echo relay (each
// packet straight back), which price the network and the driver. pkts/s
// counts data packets into the switch per second, ns/pkt their wall-clock
// cost and cpu-ns/pkt the CPU time the whole process spent per packet;
// run with -cpu 1,2 for the scaling with cores. switch-readers-2 is the
// switch with two readers and writers on a group of two conns, steered by
// block id as the daemon's SO_REUSEPORT sockets are. The hosts are one
// goroutine, a serial share of the process's CPU (about a sixth) that
// caps what a second CPU can buy; the -par paths play each rank on a
// goroutine of its own, as separate hosts would, so that the switch's own
// scaling shows.
func BenchmarkMemPath(b *testing.B) {
	for _, path := range []string{"switch", "switch-readers-2", "switch-par", "switch-readers-2-par", "fanout", "echo"} {
		b.Run(path, func(b *testing.B) { benchMemPath(b, path) })
	}
}

func benchMemPath(b *testing.B, path string) {
	network := conn.NewMemNetwork()
	network.QueueLen = 4 * pathRanks * pathWindow // a round of every rank's window, with room
	readers := 1
	path, par := strings.CutSuffix(path, "-par")
	if path == "switch-readers-2" {
		path, readers = "switch", 2
	}
	cs, err := network.ListenGroup(netip.MustParseAddrPort("127.0.0.1:7470"), swtch.DataPortGroup(readers, 1))
	if err != nil {
		b.Fatal(err)
	}
	c := cs[0]
	cfg := swtch.Config{Conns: cs, Admin: "off", Window: pathWindow, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	var srv inproc.Server
	want := float32(1) // a relay returns one rank's data: every element 1
	switch path {
	case "switch":
		sw, err := swtch.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		srv, want = sw, pathRanks // the sum of P ones
	case "fanout", "echo":
		cfg.Conns, cfg.Conn = nil, c // a relay has one socket
		build := swtch.NewRelay
		if path == "fanout" {
			build = swtch.NewFanoutRelay
		}
		r, err := build(cfg)
		if err != nil {
			b.Fatal(err)
		}
		srv = r
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() { cancel(); <-done }()
	<-srv.Ready()

	d := newPathDriver(b, network, c.LocalAddr())
	d.par = par
	defer d.close()
	gen := uint32(1)
	d.call(b, gen, want) // warm: pools, queues and the job's buffers
	b.ReportAllocs()
	m := startMeter()
	b.ResetTimer()
	calls := 0
	for b.Loop() {
		gen++
		d.call(b, gen, want)
		calls++
	}
	reportPackets(b, float64(calls*pathRanks*d.blocks), m)
}

// pathMeter is what a path benchmark reads before its calls, to report
// with their rates: the process's CPU (processCPU) and the time a cache
// line takes between two CPUs (xcpu; 0 where the process has one). The
// line time moves with where a VM's vCPUs sit, and a second CPU's gain
// with it (docs/PERFORMANCE.md).
type pathMeter struct {
	cpu0  int64
	line0 time.Duration
}

func startMeter() pathMeter {
	line, _ := xcpu.LineTransfer() // before the CPU count: its spinning is not the path's
	return pathMeter{cpu0: processCPU(), line0: line}
}

// reportPackets reports a path benchmark's rates for pkts data packets,
// and the line time: the larger of m's and one read now, so that a run
// during which the vCPUs moved apart reads as the far one.
func reportPackets(b *testing.B, pkts float64, m pathMeter) {
	elapsed := b.Elapsed()
	b.ReportMetric(pkts/elapsed.Seconds(), "pkts/s")
	b.ReportMetric(float64(elapsed.Nanoseconds())/pkts, "ns/pkt")
	if m.cpu0 >= 0 {
		b.ReportMetric(float64(processCPU()-m.cpu0)/pkts, "cpu-ns/pkt")
	}
	b.StopTimer()
	if line, err := xcpu.LineTransfer(); err == nil && m.line0 > 0 {
		b.ReportMetric(float64(max(line, m.line0).Nanoseconds()), "line-ns")
	}
}

// pathDriver plays the P hosts from one goroutine, in lock-step rounds of
// a window: every rank sends its next window of blocks (in the staggered
// order hostlib uses, which keeps each round's blocks the same set for
// all ranks), then takes that round's results. It is cheaper than hostlib
// (no timers, no retransmission, no copy into a user buffer), so that the
// benchmark prices the switch's side.
type pathDriver struct {
	hosts    []conn.Conn
	tx       [][]conn.Datagram // per rank, a window of data packets
	rx       []conn.Datagram
	order    [][]uint32
	window   int
	blocks   int
	par      bool              // each rank on its own goroutine (callPar)
	rxs      [][]conn.Datagram // per rank, with par
	progress atomic.Int64
	stop     chan struct{}
	once     sync.Once
}

func newPathDriver(b *testing.B, network *conn.MemNetwork, sw netip.AddrPort) *pathDriver {
	d := &pathDriver{stop: make(chan struct{}), rx: make([]conn.Datagram, conn.DefaultBatchSize)}
	for i := range d.rx {
		d.rx[i].Buf = make([]byte, conn.DefaultMaxDatagram)
	}
	hdr := wire.Header{Job: 1, Token: 0x5eed, DType: wire.Float32, Op: wire.OpSum}
	for r := range pathRanks {
		c, err := network.Listen(netip.AddrPort{})
		if err != nil {
			b.Fatal(err)
		}
		d.hosts = append(d.hosts, c)
		h := hdr
		h.Child = uint16(r)
		join := wire.AppendJoin(nil, &h, &wire.JoinBody{World: pathRanks, Elements: pathElements})
		if _, err := c.WriteBatch([]conn.Datagram{{Buf: join, N: len(join), Addr: sw}}); err != nil {
			b.Fatal(err)
		}
	}
	go d.watch()
	var ack wire.JoinAckBody
	for r, c := range d.hosts {
		n, err := c.ReadBatch(d.rx[:1])
		if err != nil {
			b.Fatalf("rank %d: no join answer: %v", r, err)
		}
		var h wire.Header
		payload, err := h.Unmarshal(d.rx[0].Buf[:d.rx[0].N])
		if err != nil || n != 1 || h.Type != wire.TypeJoinAck || ack.Unmarshal(payload) != nil {
			b.Fatalf("rank %d: answer %v (%v), want a join-ack", r, h.Type, err)
		}
	}
	d.window, d.blocks = int(ack.Window), int(ack.Blocks)
	pe := int(ack.PacketElems)
	payload := make([]byte, pe*4)
	for i := range pe {
		binary.LittleEndian.PutUint32(payload[4*i:], math.Float32bits(1))
	}
	for r := range pathRanks {
		h := hdr
		h.Type, h.Child, h.Count = wire.TypeData, uint16(r), uint32(pe)
		msgs := make([]conn.Datagram, d.window)
		for i := range msgs {
			pkt := wire.AppendPacket(nil, &h, payload)
			msgs[i] = conn.Datagram{Buf: pkt, N: len(pkt), Addr: sw}
		}
		d.tx = append(d.tx, msgs)
		d.order = append(d.order, proto.StaggeredOrder(nil, r, pathRanks, d.blocks, d.window))
	}
	if pathElements%pe != 0 {
		b.Fatalf("%d elements are not whole packets of %d", pathElements, pe)
	}
	return d
}

// call runs one allreduce of generation gen; every result's first element
// must be want.
func (d *pathDriver) call(b *testing.B, gen uint32, want float32) {
	if d.par {
		d.callPar(b, gen, want)
		return
	}
	for g := 0; g < d.blocks; g += d.window {
		n := min(d.window, d.blocks-g)
		for r, c := range d.hosts {
			msgs := d.tx[r][:n]
			for k := range msgs {
				binary.BigEndian.PutUint32(msgs[k].Buf[wire.OffBlock:], d.order[r][g+k])
				binary.BigEndian.PutUint32(msgs[k].Buf[wire.OffGeneration:], gen)
			}
			if _, err := c.WriteBatch(msgs); err != nil {
				b.Fatal(err)
			}
		}
		for r, c := range d.hosts {
			for got := 0; got < n; {
				k, err := c.ReadBatch(d.rx)
				if err != nil {
					b.Fatalf("rank %d, generation %d: %v (a lost packet stalls the lock-step driver)", r, gen, err)
				}
				for _, m := range d.rx[:k] {
					if err := checkResult(m.Buf[:m.N], gen, want); err != nil {
						b.Fatalf("rank %d: %v", r, err)
					}
				}
				got += k
			}
		}
		d.progress.Add(1)
	}
}

// callPar is call with each rank on a goroutine of its own, sending its
// round and taking its results independently: a rank may start its next
// round while others finish this one, never more (its next round's
// results need every rank's).
func (d *pathDriver) callPar(b *testing.B, gen uint32, want float32) {
	if d.rxs == nil {
		d.rxs = make([][]conn.Datagram, len(d.hosts))
		for r := range d.rxs {
			d.rxs[r] = make([]conn.Datagram, conn.DefaultBatchSize)
			for i := range d.rxs[r] {
				d.rxs[r][i].Buf = make([]byte, conn.DefaultMaxDatagram)
			}
		}
	}
	var g errgroup.Group
	for r, c := range d.hosts {
		g.Go(func() error { return d.rank(r, c, gen, want) })
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
}

// rank runs rank r's part of callPar.
func (d *pathDriver) rank(r int, c conn.Conn, gen uint32, want float32) error {
	rx := d.rxs[r]
	for g := 0; g < d.blocks; g += d.window {
		n := min(d.window, d.blocks-g)
		msgs := d.tx[r][:n]
		for k := range msgs {
			binary.BigEndian.PutUint32(msgs[k].Buf[wire.OffBlock:], d.order[r][g+k])
			binary.BigEndian.PutUint32(msgs[k].Buf[wire.OffGeneration:], gen)
		}
		if _, err := c.WriteBatch(msgs); err != nil {
			return err
		}
		for got := 0; got < n; {
			k, err := c.ReadBatch(rx)
			if err != nil {
				return fmt.Errorf("rank %d, generation %d: %v (a lost packet stalls the lock-step driver)", r, gen, err)
			}
			for _, m := range rx[:k] {
				if err := checkResult(m.Buf[:m.N], gen, want); err != nil {
					return fmt.Errorf("rank %d: %v", r, err)
				}
			}
			got += k
		}
		if r == 0 {
			d.progress.Add(1)
		}
	}
	return nil
}

// checkResult checks a result of generation gen whose first element is want.
func checkResult(pkt []byte, gen uint32, want float32) error {
	var h wire.Header
	payload, err := h.Unmarshal(pkt)
	switch {
	case err != nil:
		return err
	case h.Type != wire.TypeResult || h.Generation != gen:
		return fmt.Errorf("got %v of generation %d, want a result of %d", h.Type, h.Generation, gen)
	case math.Float32frombits(binary.LittleEndian.Uint32(payload)) != want:
		return fmt.Errorf("block %d: first element %v, want %v", h.Block, math.Float32frombits(binary.LittleEndian.Uint32(payload)), want)
	}
	return nil
}

// watch closes the hosts' conns, failing the benchmark's reads, when no
// round has finished for 30 s: a lost packet would otherwise hang it.
func (d *pathDriver) watch() {
	last := int64(-1)
	t := time.NewTicker(30 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
			p := d.progress.Load()
			if p == last {
				d.close()
				return
			}
			last = p
		}
	}
}

func (d *pathDriver) close() {
	d.once.Do(func() {
		for _, c := range d.hosts {
			c.Close()
		}
		close(d.stop)
	})
}
