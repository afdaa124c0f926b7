package sim

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/wire"
)

// finished is a small run that completed and passed its check, for a test
// to spoil: 3 hosts, 4 blocks of float32.
func finished(t *testing.T) *sim {
	t.Helper()
	cfg := Config{HPU: hpu.Config{Clusters: 1, CoresPerCluster: 4}, Hosts: 3, Bytes: 4096, DType: wire.Float32, Algo: wire.AlgoSingle, Seed: 7}.withDefaults()
	s, err := newSim(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	if err := s.run(); err != nil {
		t.Fatal(err)
	}
	if err := s.check(); err != nil {
		t.Fatalf("an untouched run: %v", err)
	}
	return s
}

// A run the switch got wrong is an error, never a row: a result that
// differs from the reference, a block never completed, a packet the
// handler refused, or anything the egress should not have emitted. A
// waiting report is no result and no fault.
func TestSimFlagsWrongRuns(t *testing.T) {
	result := func(block uint32, flags wire.Flags) *wire.Header {
		return &wire.Header{Version: wire.Version, Type: wire.TypeResult, Job: 1, Token: 0x5eed, Block: block, Flags: flags}
	}
	for _, tc := range []struct {
		name  string
		spoil func(s *sim)
		want  string // "" = the check passes
	}{
		{"one byte of the result", func(s *sim) { s.out[4*(256+17)+1] ^= 0x40 }, "result differs from the reference"},
		{"a block never emitted", func(s *sim) { s.emitted[2] = -1 }, "block 2 of 4 never completed"},
		{"a duplicate refused", func(s *sim) { s.dense.Stats.Duplicate.Add(1) }, "duplicate 1, no buffer 0, invalid 0"},
		{"a packet with no buffer", func(s *sim) { s.dense.Stats.NoBuffer.Add(1) }, "duplicate 0, no buffer 1, invalid 0"},
		{"an invalid packet", func(s *sim) { s.dense.Stats.Invalid.Add(1) }, "duplicate 0, no buffer 0, invalid 1"},
		{"a block emitted twice", func(s *sim) { s.Emit(result(1, 0), s.out[1024:2048]) }, "block 1 emitted twice"},
		{"a block out of range", func(s *sim) { s.Emit(result(4, 0), s.out[:1024]) }, "block 4 emitted twice or out of range"},
		{"a result marked retransmitted", func(s *sim) { s.emitted[3] = -1; s.Emit(result(3, wire.FlagRetransmit), s.out[3072:]) }, "unexpected result packet for block 3"},
		{"a data packet", func(s *sim) { h := result(0, 0); h.Type = wire.TypeData; s.Emit(h, s.out[:1024]) }, "unexpected data packet for block 0"},
		{"a waiting report", func(s *sim) { h := result(2, 0); h.Type = wire.TypeError; s.Emit(h, nil) }, ""},
	} {
		s := finished(t)
		tc.spoil(s)
		err := s.check()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want no error", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one that says %q", tc.name, err, tc.want)
		}
	}
}

// result's arithmetic, from marks set by hand: the steady state's rates
// and means between the two marks, the bytes of a buffer (not of a
// packet), and the latency averaged over every block of every round.
func TestResultArithmetic(t *testing.T) {
	cfg := Config{
		HPU:   hpu.Config{Clusters: 1, CoresPerCluster: 2, BufferBytes: 2048},
		Hosts: 2, Bytes: 1024, Rounds: 2, Algo: wire.AlgoSingle, Seed: 1,
	}.withDefaults()
	s, err := newSim(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if s.perRound != 1 || s.nblocks != 2 {
		t.Fatalf("%d blocks a round, %d in all; want 1 and 2", s.perRound, s.nblocks)
	}
	s.firstIn, s.emitted = []int64{0, 10}, []int64{100, 50}
	s.steady = [2]int64{10, 90}
	s.marks[0].at, s.marks[0].area, s.marks[0].busy = 100, 1000, 500
	s.marks[1].at, s.marks[1].area, s.marks[1].busy = 300, 5000, 2500
	r := s.result()
	gbps := 0.4 * 1024 * 8 * cfg.HPU.Cost.ClockHz / 1e9 // 80 packets in 200 cycles, a block's bytes each
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"latency (cycles, mean of both rounds' blocks)", r.LatencyCycles, (100 + 40) / 2},
		{"steady from", float64(r.SteadyFrom), 100},
		{"steady to", float64(r.SteadyTo), 300},
		{"bandwidth (packets/cycle)", r.BandwidthPktsPerCycle, 0.4},
		{"bandwidth (Gbit/s)", r.BandwidthGbps, gbps},
		{"memory (buffers)", r.MemoryBuffers, 20},
		{"memory (bytes, 2 KiB buffers)", r.MemoryBytes, 20 * 2048},
		{"steady τ (cycles)", r.SteadyTauCycles, 25},
	} {
		if math.Abs(c.got-c.want) > 1e-9*math.Abs(c.want) || math.IsNaN(c.got) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

// The inputs of a product stay near 1, so that a product over the flare
// preset's 64 hosts is a normal number in every float dtype: neither 0 nor
// infinite, which a wrong result would match too. A float16 product over
// that many hosts is checked against the reference like any other run.
func TestSimInputsProducts(t *testing.T) {
	const hosts = 64
	load := map[wire.DType]func([]byte) float64{
		wire.Float16:  func(b []byte) float64 { return float64(elem.Float16(binary.LittleEndian.Uint16(b)).Float32()) },
		wire.BFloat16: func(b []byte) float64 { return float64(elem.BFloat16(binary.LittleEndian.Uint16(b)).Float32()) },
		wire.Float32:  func(b []byte) float64 { return float64(math.Float32frombits(binary.LittleEndian.Uint32(b))) },
	}
	for dt, value := range load {
		in := simInputs(rand.New(rand.NewPCG(1, 2)), dt, wire.OpProd, hosts, 512*dt.Size())
		for i := 0; i < len(in[0]); i += dt.Size() {
			prod := 1.0
			for h := range hosts {
				prod *= value(in[h][i:])
			}
			if !(prod >= 0x1p-14 && prod < 65504) { // float16's normal range
				t.Fatalf("%s: the product of element %d over %d hosts is %g, outside float16's normal range", dt, i/dt.Size(), hosts, prod)
			}
		}
	}
	simulate(t, Config{HPU: hpu.Config{Clusters: 2, CoresPerCluster: 4}, Hosts: hosts, Bytes: 8192, DType: wire.Float16, Op: wire.OpProd, Algo: wire.AlgoTree, Seed: 5})
}
