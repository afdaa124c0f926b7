package hpu_test

import (
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/wire"
)

// BenchmarkHandoff is the machine's ceiling for a packet pipeline, the way
// the relays are the kernel's: what a second CPU buys 1 KiB packets that
// pass from one goroutine to another, against the same work on private
// data. Run it with -cpu 1,2 beside BenchmarkMemPath (docs/PERFORMANCE.md).
// Each op is one packet:
//
//   - private: every goroutine sums 1 KiB of its own (the work alone; it
//     scales with the CPUs the hardware gives);
//   - pipeline: one goroutine copies 1 KiB into a buffer (as a reader
//     receives), hands the buffers over 32 at a time on a channel, and a
//     second sums each into its accumulator (as a core does) and hands
//     them back;
//   - pipeline-poll: the same, the second goroutine yielding up to 100
//     times for the next run before it blocks;
//   - handoff-only: the same hand-offs, the second goroutine summing 1 KiB
//     of its own per buffer it is handed: the bytes never change CPUs.
func BenchmarkHandoff(b *testing.B) {
	sum, err := elem.KernelFor(wire.Float32, wire.OpSum)
	if err != nil {
		b.Fatal(err)
	}
	const size = 1 << 10
	b.Run("private", func(b *testing.B) {
		b.SetBytes(size)
		b.RunParallel(func(pb *testing.PB) {
			acc, x := make([]byte, size), make([]byte, size)
			for pb.Next() {
				sum(acc, x)
			}
		})
	})
	for _, c := range []struct {
		name  string
		polls int
		own   bool
	}{{"pipeline", 0, false}, {"pipeline-poll", 100, false}, {"handoff-only", 0, true}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(size)
			handoff(b, sum, size, c.polls, c.own)
		})
	}
}

// handoff runs b.N packets of size bytes through a two-goroutine pipeline:
// the benchmark's goroutine copies, the other sums (the buffer it is
// handed, or with own one of its own), polling up to polls times before it
// blocks.
func handoff(b *testing.B, sum elem.Kernel, size, polls int, own bool) {
	const run, runs = 32, 8
	full, empty := make(chan [][]byte, runs), make(chan [][]byte, runs)
	for range runs {
		r := make([][]byte, run)
		for i := range r {
			r[i] = make([]byte, size)
		}
		empty <- r
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		acc, mine := make([]byte, size), make([]byte, size)
		for {
			r, ok := next(full, polls)
			if !ok {
				return
			}
			for _, x := range r {
				if own {
					x = mine
				}
				sum(acc, x)
			}
			empty <- r
		}
	}()
	src := make([]byte, size)
	b.ResetTimer()
	for i := 0; i < b.N; i += run {
		r := <-empty
		for _, x := range r {
			copy(x, src)
		}
		full <- r
	}
	close(full)
	<-done
}

// next takes the next run from c, yielding up to polls times while none is
// there before it blocks.
func next(c chan [][]byte, polls int) ([][]byte, bool) {
	for range polls {
		select {
		case r, ok := <-c:
			return r, ok
		default:
			runtime.Gosched()
		}
	}
	r, ok := <-c
	return r, ok
}

// BenchmarkIdleWake is what a processor (P) that has gone idle costs this
// machine: the time from a channel send on a busy P until the receiving
// goroutine runs, when the receiver's P had nothing else to run and its
// thread slept. The sender keeps its own P busy, so the receiver runs
// once the idle P's thread has woken and stolen it from the sender's P
// (or, at worst, when the sender blocks on its next send, idleGap later).
// The wake-up of a thread sleeping on another CPU is a sleeping vCPU's on
// a virtual machine, and the runtime waits usleep(3) before it steals a
// goroutine just readied on a running P, which Linux's default 50 µs
// timer slack stretches to ~55 µs: about 100 µs at the median on the
// 2-vCPU boxes here (docs/PERFORMANCE.md). It needs two Ps (-cpu 2).
func BenchmarkIdleWake(b *testing.B) {
	if runtime.GOMAXPROCS(0) < 2 {
		b.Skip("needs two Ps: run with -cpu 2")
	}
	const idleGap = 500 * time.Microsecond
	sent := make(chan time.Time)
	done := make(chan []time.Duration)
	go func() {
		var lat []time.Duration
		for t := range sent {
			lat = append(lat, time.Since(t))
		}
		done <- lat
	}()
	b.ResetTimer()
	for range b.N {
		for start := time.Now(); time.Since(start) < idleGap; {
		}
		sent <- time.Now()
	}
	close(sent)
	lat := <-done
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2])/1e3, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100])/1e3, "p99-µs")
	b.ReportMetric(0, "ns/op") // the op is idleGap of spinning
}

// BenchmarkLineTransfer is what one cache line written on two CPUs in turn
// costs this machine: two goroutines on two Ps take turns incrementing one
// counter, each spinning until the other's increment shows, so an op is
// the line's round trip between the CPUs. It is the price of every line
// the switch's goroutines share across CPUs. On the VMs here it moved
// between 74 and 425 ns from one spell to the next, as the scaling of
// BenchmarkGenPath did (docs/PERFORMANCE.md). It needs two Ps (-cpu 2).
func BenchmarkLineTransfer(b *testing.B) {
	if runtime.GOMAXPROCS(0) < 2 {
		b.Skip("needs two Ps: run with -cpu 2")
	}
	var line struct {
		n atomic.Int64
		_ [56]byte
	}
	turns := int64(b.N)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := int64(1); i < 2*turns; i += 2 {
			awaitTurn(&line.n, i)
			line.n.Store(i + 1)
		}
	}()
	b.ResetTimer()
	for i := int64(0); i < 2*turns; i += 2 {
		awaitTurn(&line.n, i)
		line.n.Store(i + 1)
	}
	<-done
}

// awaitTurn spins until n is turn, yielding now and then, so that a
// goroutine whose partner has no CPU (a busy machine) lets it run.
func awaitTurn(n *atomic.Int64, turn int64) {
	for spins := 1; n.Load() != turn; spins++ {
		if spins%4096 == 0 {
			runtime.Gosched()
		}
	}
}
