package swtch_test

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flare-net/flare/hostlib"
	swtch "github.com/flare-net/flare/switch"
	"github.com/flare-net/flare/wire"
)

var stallBytes = flag.Int64("stall-bytes", 128<<20, "BenchmarkAdmissionStall: the host memory of the large job, which is also the switch's --max-memory")

// BenchmarkAdmissionStall measures how long the admission of the largest
// job the switch's budget allows holds up another job's packets: a job of
// one rank runs allreduce after allreduce of one block on a real loopback
// socket while a join of a job of -stall-bytes of host memory (stored
// results, or a block table of one-element packets) arrives and is
// admitted. It reports the longest allreduce call of the small job from
// the join to the large job's ack, and the time to that ack.
func BenchmarkAdmissionStall(b *testing.B) {
	budget := *stallBytes
	for _, shape := range []struct {
		name        string
		dtype       wire.DType
		elements    uint64
		packetElems uint32
	}{
		{"results", wire.Int8, uint64(budget) / 2 * 9 / 10, 0},    // 2 × elements bytes of stored results
		{"blocks", wire.Float64, uint64(budget) / 72 * 9 / 10, 1}, // 48 B of block, 16 of results, 8 of tags per element
	} {
		b.Run(shape.name, func(b *testing.B) {
			for b.Loop() {
				stall, ack := admissionStall(b, budget, shape.dtype, shape.elements, shape.packetElems)
				b.ReportMetric(float64(stall.Microseconds())/1e3, "max-call-ms")
				b.ReportMetric(float64(ack.Microseconds())/1e3, "ack-ms")
			}
		})
	}
}

func admissionStall(b *testing.B, budget int64, dt wire.DType, elements uint64, pe uint32) (stall, ack time.Duration) {
	sw, err := swtch.New(swtch.Config{Listen: "127.0.0.1:0", Admin: "off", MaxMemory: budget, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sw.Run(ctx) }()
	defer func() { cancel(); <-done }()
	<-sw.Ready()
	s, err := hostlib.Join(ctx, hostlib.Options{Switch: sw.Addr().String(), Job: 1, Token: 1, Rank: 0, World: 1,
		DType: wire.Float32, Op: wire.OpSum, Elements: 256})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var worst atomic.Int64
	measuring := atomic.Bool{}
	stop := make(chan struct{})
	pinged := make(chan struct{})
	go func() {
		defer close(pinged)
		buf := make([]float32, 256)
		for {
			select {
			case <-stop:
				return
			default:
			}
			start := time.Now()
			if err := hostlib.AllReduce(ctx, s, buf, wire.OpSum); err != nil {
				b.Error(err)
				return
			}
			if d := time.Since(start); measuring.Load() && int64(d) > worst.Load() {
				worst.Store(int64(d))
			}
		}
	}()
	time.Sleep(100 * time.Millisecond)

	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(sw.Addr()))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	h := wire.Header{Job: 2, Token: 2, DType: dt, Op: wire.OpSum}
	join := wire.AppendJoin(nil, &h, &wire.JoinBody{World: 1, Algo: wire.AlgoSingle, Elements: elements, PacketElems: pe})
	measuring.Store(true)
	start := time.Now()
	if _, err := c.Write(join); err != nil {
		b.Fatal(err)
	}
	reply := make([]byte, 2048)
	c.SetReadDeadline(time.Now().Add(60 * time.Second))
	n, err := c.Read(reply)
	ack = time.Since(start)
	if err != nil {
		b.Fatal(err)
	}
	var rh wire.Header
	payload, err := rh.Unmarshal(reply[:n])
	if err != nil || rh.Type != wire.TypeJoinAck {
		var e wire.ErrorBody
		e.Unmarshal(payload)
		b.Fatalf("the large job was not admitted: %v %v", rh.Type, e.Message())
	}
	time.Sleep(200 * time.Millisecond)
	measuring.Store(false)
	close(stop)
	<-pinged
	return time.Duration(worst.Load()), ack
}
