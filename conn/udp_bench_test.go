package conn

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkLoopback sends Flare-sized datagrams (1056 bytes) over loopback
// from the benchmark goroutine to a reader goroutine. One op is one
// WriteBatch of BatchSize datagrams, so compare variants by pkts/s, which
// counts datagrams received per second of wall time (including the final
// drain). The sender keeps at most window datagrams in flight so that the
// socket buffer never overflows; loss, if any, is reported.
func BenchmarkLoopback(b *testing.B) {
	for _, bc := range []struct {
		name string
		cfg  Config
	}{
		{"single", Config{BatchSize: 1, DisableOffload: true}},
		{"batch", Config{BatchSize: 64, DisableOffload: true}},
		{"batch+offload", Config{BatchSize: 64}},
	} {
		b.Run(bc.name, func(b *testing.B) { benchLoopback(b, bc.cfg) })
	}
}

func benchLoopback(b *testing.B, cfg Config) {
	const (
		size   = flarePacket
		window = 512 // datagrams in flight: ~1.2 MB of an 8 MiB socket buffer
		stall  = 200 * time.Millisecond
	)
	tx := listenLoopback(b, "127.0.0.1:0", cfg)
	rx := listenLoopback(b, "127.0.0.1:0", cfg)
	batch := tx.BatchSize()

	var got atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		msgs := newMsgs(batch, DefaultMaxDatagram)
		for {
			n, err := rx.ReadBatch(msgs)
			if err != nil {
				return // closed
			}
			got.Add(int64(n))
		}
	})

	msgs := newMsgs(batch, size)
	for i := range msgs {
		msgs[i].N, msgs[i].Addr = size, rx.LocalAddr()
		stamp(msgs[i].Buf, uint64(i))
	}
	var sent, lost int64
	// wait blocks until at most limit datagrams are in flight; datagrams
	// missing after a stall are written off as lost.
	wait := func(limit int64) {
		last, since := got.Load(), time.Now()
		for spin := 0; sent-lost-got.Load() > limit; spin++ {
			if g := got.Load(); g != last {
				last, since = g, time.Now()
			} else if time.Since(since) > stall {
				lost = sent - g
			}
			pause(spin)
		}
	}

	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		wait(window - int64(batch))
		n, err := tx.WriteBatch(msgs)
		if err != nil {
			b.Fatal(err)
		}
		sent += int64(n)
	}
	wait(0)
	elapsed := time.Since(start)
	rx.Close()
	wg.Wait()

	recv := float64(got.Load())
	b.ReportMetric(recv/elapsed.Seconds(), "pkts/s")
	b.ReportMetric(recv*size/elapsed.Seconds()/1e9, "GB/s")
	if lost > 0 {
		b.ReportMetric(float64(lost)/float64(sent), "loss")
	}
	if off := tx.Offload(); off.GSO || off.GRO {
		b.Logf("offload: tx %+v, rx %+v", off, rx.Offload())
	}
}

// BenchmarkSendVector prices the two ways a host can send a 16 MiB vector
// in 8 KiB blocks behind 32-byte headers: "copy" copies each block into
// the datagram's buffer behind its header, "tail" sends the header from
// Buf and the block from the vector as the datagram's Tail. Nobody reads
// the receiving socket (the kernel drops what overflows it), so one op is
// the sender's cost alone: one pass over the vector, 2048 datagrams.
func BenchmarkSendVector(b *testing.B) {
	const (
		header = 32
		block  = 8 << 10
		vector = 16 << 20
	)
	for _, mode := range []string{"copy", "tail"} {
		b.Run(mode, func(b *testing.B) {
			tx := listenLoopback(b, "127.0.0.1:0", Config{})
			rx := listenLoopback(b, "127.0.0.1:0", Config{SocketBuffer: -1})
			vec := make([]byte, vector)
			for i := range vec {
				vec[i] = byte(i)
			}
			msgs := newMsgs(tx.BatchSize(), header+block)
			b.SetBytes(vector)
			b.ReportAllocs()
			for b.Loop() {
				for off := 0; off < vector; {
					k := 0
					for ; k < len(msgs) && off < vector; k, off = k+1, off+block {
						m := &msgs[k]
						m.Addr, m.N = rx.LocalAddr(), header
						if mode == "copy" {
							m.N += copy(m.Buf[header:], vec[off:off+block])
						} else {
							m.Tail = vec[off : off+block]
						}
					}
					if _, err := tx.WriteBatch(msgs[:k]); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
