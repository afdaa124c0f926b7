package wire

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

func TestSparseBlockField(t *testing.T) {
	for _, tc := range []struct{ block, seq uint32 }{
		{0, 0}, {1, 0}, {0, 1}, {MaxSparseBlocks - 1, MaxSparseSeq - 1}, {12345, 678},
	} {
		f := SparseBlockField(tc.block, tc.seq)
		b, s := SplitSparseBlock(f)
		if b != tc.block || s != tc.seq {
			t.Errorf("SparseBlockField(%d, %d) = %#x splits into (%d, %d)", tc.block, tc.seq, f, b, s)
		}
	}
	// Sequence 0 leaves the field equal to the block id: a stream's first
	// packet reads like a dense block number.
	if SparseBlockField(77, 0) != 77 {
		t.Error("sequence 0 must leave the block id unchanged")
	}
	// The block id occupies the low bits, so placement by block mod clusters
	// is unaffected by the sequence for power-of-two cluster counts.
	if SparseBlockField(5, 9)%4 != 5%4 {
		t.Error("the sequence must not change the block modulo a power of two")
	}
}

func TestPairsRoundTrip(t *testing.T) {
	for _, dt := range DTypes {
		sz := dt.Size()
		idx := []uint32{0, 7, 1 << 20, math.MaxUint32}
		vals := make([]byte, len(idx)*sz)
		for i := range vals {
			vals[i] = byte(i*37 + 1)
		}
		payload, err := AppendPairs(nil, dt, idx, vals)
		if err != nil {
			t.Fatal(err)
		}
		if len(payload) != len(idx)*PairSize(dt) {
			t.Fatalf("%s: %d bytes for %d pairs", dt, len(payload), len(idx))
		}
		p, err := ParsePairs(payload, dt, uint32(len(idx)))
		if err != nil {
			t.Fatalf("%s: %v", dt, err)
		}
		if p.Len() != len(idx) {
			t.Fatalf("%s: Len %d", dt, p.Len())
		}
		i := 0
		for index, v := range p.All() {
			if index != idx[i] || !bytes.Equal(v, vals[i*sz:(i+1)*sz]) {
				t.Fatalf("%s pair %d: (%d, %x), want (%d, %x)", dt, i, index, v, idx[i], vals[i*sz:(i+1)*sz])
			}
			if !bytes.Equal(p.Pair(i)[IndexLen:], v) || p.Index(i) != index {
				t.Fatalf("%s pair %d: Pair and Index disagree with All", dt, i)
			}
			i++
		}
		// One pair at a time gives the same bytes.
		var one []byte
		for i := range idx {
			one = AppendPair(one, idx[i], vals[i*sz:(i+1)*sz])
		}
		if !bytes.Equal(one, payload) {
			t.Fatalf("%s: AppendPair and AppendPairs differ", dt)
		}
		// Index little-endian at offset 0 of each pair.
		if payload[PairSize(dt)] != 7 || payload[PairSize(dt)+1] != 0 {
			t.Fatalf("%s: index of pair 1 is not little-endian: % x", dt, payload[PairSize(dt):PairSize(dt)+4])
		}
	}
}

func TestParsePairsRejects(t *testing.T) {
	payload := make([]byte, 3*PairSize(Float32))
	cases := []struct {
		name    string
		payload []byte
		dt      DType
		count   uint32
		want    error
	}{
		{"count overruns the payload", payload, Float32, 4, ErrLength},
		{"count short of the payload", payload, Float32, 2, ErrLength},
		{"huge count", payload, Float32, math.MaxUint32, ErrLength},
		{"not whole pairs", payload[:len(payload)-1], Float32, 3, ErrLength},
		{"unknown dtype", payload, DType(0), 3, ErrDType},
		{"unknown dtype 9", payload, DType(9), 3, ErrDType},
	}
	for _, tc := range cases {
		if _, err := ParsePairs(tc.payload, tc.dt, tc.count); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := ParsePairs(nil, Int8, 0); err != nil {
		t.Errorf("the empty last packet: %v", err)
	}
	if _, err := PairsOf(payload[:len(payload)-2], Float32); !errors.Is(err, ErrLength) {
		t.Errorf("PairsOf on a partial pair: %v", err)
	}
	if _, err := AppendPairs(nil, Int32, []uint32{1, 2}, make([]byte, 4)); !errors.Is(err, ErrLength) {
		t.Errorf("AppendPairs with too few values: %v", err)
	}
}

// A Sparse packet built with the helpers decodes with the header's own
// length check, and Unmarshal's payload parses back to the same pairs.
func TestPairsInPacket(t *testing.T) {
	vals := []byte{1, 0, 0, 0, 2, 0, 0, 0}
	payload, _ := AppendPairs(nil, Int32, []uint32{3, 9}, vals)
	h := Header{Type: TypeSparse, DType: Int32, Op: OpSum, Count: 2, Flags: FlagLast, Block: SparseBlockField(4, 1)}
	pkt := AppendPacket(nil, &h, payload)
	var g Header
	got, err := g.Unmarshal(pkt)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePairs(got, g.DType, g.Count)
	if err != nil || p.Len() != 2 || p.Index(1) != 9 {
		t.Fatalf("pairs %v, err %v", p, err)
	}
	if b, s := SplitSparseBlock(g.Block); b != 4 || s != 1 {
		t.Fatalf("block field splits into (%d, %d)", b, s)
	}
}

func TestPairsZeroAlloc(t *testing.T) {
	payload, _ := AppendPairs(nil, Float64, []uint32{1, 2, 3}, make([]byte, 24))
	dst := make([]byte, 0, 64)
	var sum uint32
	allocs := testing.AllocsPerRun(100, func() {
		p, err := ParsePairs(payload, Float64, 3)
		if err != nil {
			t.Fatal(err)
		}
		for idx, v := range p.All() {
			sum += idx + uint32(len(v))
		}
		dst = AppendPair(dst[:0], p.Index(0), p.Value(0))
		dst, _ = AppendPairs(dst[:0], Float64, []uint32{4}, p.Value(1))
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per parse, iterate and append, want 0", allocs)
	}
}
