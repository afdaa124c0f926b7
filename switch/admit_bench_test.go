package swtch_test

import (
	"errors"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flare-net/flare/handlers"
	swtch "github.com/flare-net/flare/switch"
	"github.com/flare-net/flare/wire"
)

var stallBytes = flag.Int64("stall-bytes", 128<<20, "BenchmarkAdmissionStall: the host memory of the large job, which is also the switch's --max-memory")

// BenchmarkAdmissionStall measures how long the admission of the largest
// job the switch's budget allows holds up another job's packets: a pinger
// (a raw socket that allocates nothing, so that the garbage collector's
// assists do not charge it for the large job's allocation, as they would a
// host library in this process) runs allreduce after allreduce of one
// block of a one-rank job on real loopback while a join of a job of
// -stall-bytes of host memory (stored results, or a block table of
// one-element packets) arrives and is admitted. It reports the longest
// round trip of the pinger from the join to the large job's ack, and the
// time to that ack.
func BenchmarkAdmissionStall(b *testing.B) {
	budget := *stallBytes
	for _, shape := range []struct {
		name        string
		dtype       wire.DType
		elements    uint64
		packetElems uint32
	}{
		{"results", wire.Int8, 0, 0},   // 2 × elements bytes of stored results
		{"blocks", wire.Float64, 0, 1}, // a block record, 16 B of results and the result tags per element
	} {
		// Nine tenths of the budget, by the formula admission charges.
		shape.elements = uint64(budget) * 9 / 10 / perElementBytes(shape.dtype, shape.packetElems)
		b.Run(shape.name, func(b *testing.B) {
			for b.Loop() {
				stall, ack := admissionStall(b, budget, shape.dtype, shape.elements, shape.packetElems)
				b.ReportMetric(float64(stall.Microseconds())/1e3, "max-rtt-ms")
				b.ReportMetric(float64(ack.Microseconds())/1e3, "ack-ms")
			}
		})
	}
}

// perElementBytes is the host memory admission charges a one-rank
// single-buffer job for an element of dt with pe elements a packet (0: the
// switch's choice, a packet of Config.PacketBytes), from the formula it
// charges by (handlers.DenseConfig.Footprint) at a million elements.
func perElementBytes(dt wire.DType, pe uint32) uint64 {
	const n = 1 << 20
	elems := int(pe)
	if elems == 0 {
		elems = swtch.DefaultPacketBytes / dt.Size()
	}
	c := handlers.DenseConfig{Algo: wire.AlgoSingle, Children: 1, DType: dt, Elements: n, PacketElems: elems, KeepResults: true}
	return uint64(c.Footprint(0).Total()+n-1) / n
}

// pinger is a one-rank job of one float32 block driven over a raw socket.
type pinger struct {
	c       *net.UDPConn
	out, in []byte
	hdr     wire.Header
	payload []byte
}

func newPinger(b *testing.B, sw netip.AddrPort) *pinger {
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(sw))
	if err != nil {
		b.Fatal(err)
	}
	p := &pinger{c: c, out: make([]byte, 0, 2048), in: make([]byte, 2048), payload: make([]byte, 1024),
		hdr: wire.Header{Type: wire.TypeData, Job: 1, Token: 1, DType: wire.Float32, Op: wire.OpSum, Count: 256}}
	jh := wire.Header{Job: 1, Token: 1, DType: wire.Float32, Op: wire.OpSum}
	if _, err := c.Write(wire.AppendJoin(nil, &jh, &wire.JoinBody{World: 1, Algo: wire.AlgoSingle, Elements: 256})); err != nil {
		b.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(p.in); err != nil {
		b.Fatal(err)
	}
	return p
}

// ping runs one allreduce (the next generation) and returns its round
// trip; a datagram lost on the way is sent again after 100 ms.
func (p *pinger) ping() (time.Duration, error) {
	p.hdr.Generation++
	p.hdr.Flags = 0
	start := time.Now()
	for tries := 0; tries < 300; tries++ {
		p.out = wire.AppendPacket(p.out[:0], &p.hdr, p.payload)
		if _, err := p.c.Write(p.out); err != nil {
			return 0, err
		}
		p.c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		for {
			n, err := p.c.Read(p.in)
			if err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					break
				}
				return 0, err
			}
			var h wire.Header
			if _, err := h.Unmarshal(p.in[:n]); err == nil && h.Type == wire.TypeResult && h.Generation == p.hdr.Generation {
				return time.Since(start), nil
			}
		}
		p.hdr.Flags = wire.FlagRetransmit
	}
	return 0, errors.New("no result after 300 tries")
}

func admissionStall(b *testing.B, budget int64, dt wire.DType, elements uint64, pe uint32) (stall, ack time.Duration) {
	sw, stopSwitch := runSwitch(b, swtch.Config{Listen: "127.0.0.1:0", Admin: "off", MaxMemory: budget, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer stopSwitch()
	p := newPinger(b, sw.Addr())
	defer p.c.Close()
	var worst atomic.Int64
	measuring := atomic.Bool{}
	stop := make(chan struct{})
	pinged := make(chan struct{})
	go func() {
		defer close(pinged)
		for {
			select {
			case <-stop:
				return
			default:
			}
			d, err := p.ping()
			if err != nil {
				b.Error(err)
				return
			}
			if measuring.Load() && int64(d) > worst.Load() {
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
