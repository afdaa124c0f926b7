package bench

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/wire"
)

// inputsOf is every rank's pattern of call it: what the ranks of a world
// reduce.
func inputsOf(t *testing.T, dt wire.DType, op wire.Op, world, it, count int) [][]byte {
	t.Helper()
	in := make([][]byte, world)
	for r := range in {
		in[r] = make([]byte, count*dt.Size())
		fillPattern(dt, op, r, it, in[r])
	}
	return in
}

// reduced is the reference result of call it's patterns.
func reduced(t *testing.T, dt wire.DType, op wire.Op, world, it, count int) []byte {
	t.Helper()
	out, err := elem.Reference(dt, op, inputsOf(t, dt, op, world, it, count))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A verification catches the wrong results a switch could give: another
// call's result (a stale generation), one rank's vector (a fold that
// copied), and a sum for another operator, in every operator; the exact
// check serves sums alone.
func TestVerifyCatchesStaleAndCopies(t *testing.T) {
	const world, it, count = 8, 5, 3000
	for _, tc := range []struct {
		dt wire.DType
		op wire.Op
	}{
		{wire.Float32, wire.OpSum}, {wire.Int32, wire.OpSum}, {wire.Float32, wire.OpProd}, {wire.Float32, wire.OpMax},
		{wire.Int16, wire.OpMin}, {wire.Float16, wire.OpSum}, {wire.Int64, wire.OpXor},
	} {
		if err := verifyPattern(tc.dt, tc.op, world, it, reduced(t, tc.dt, tc.op, world, it, count), 0); err != nil {
			t.Fatalf("%s %s: the right result refused: %v", tc.dt, tc.op, err)
		}
		for what, wrong := range map[string][]byte{
			"the last call's result":   reduced(t, tc.dt, tc.op, world, it-1, count),
			"rank 3's vector":          inputsOf(t, tc.dt, tc.op, world, it, count)[3],
			"the sums of the patterns": reduced(t, tc.dt, wire.OpSum, world, it, count),
		} {
			if tc.op == wire.OpSum && what == "the sums of the patterns" {
				continue
			}
			if verifyPattern(tc.dt, tc.op, world, it, wrong, 0) == nil {
				t.Errorf("%s %s: %s taken as call %d's result", tc.dt, tc.op, what, it)
			}
		}
	}
}

// Every fill writes what putValue encodes of patternValue, element by
// element to the last, in every dtype and operator.
func TestFillMatchesPutValue(t *testing.T) {
	const n, it = 777, 2
	for _, dt := range wire.DTypes {
		for _, op := range []wire.Op{wire.OpSum, wire.OpProd, wire.OpMax, wire.OpMin} {
			for r := range 3 {
				got := make([]byte, n*dt.Size())
				fillPattern(dt, op, r, it, got)
				want := make([]byte, n*dt.Size())
				for i := range n {
					putValue(dt, want[i*dt.Size():], patternValue(op, r, i, it))
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("%s %s rank %d: the fill differs from putValue's", dt, op, r)
				}
			}
		}
	}
}

// A sparse pattern has density × count indices (rounded), and shares
// overlap of them with every other rank: all of them at overlap 1, none
// forced at 0.
func TestSparsePatternShape(t *testing.T) {
	const count, it = 1000, 4
	indices := func(r int, density, overlap float64) map[uint32]bool {
		p, err := wire.PairsOf(sparsePattern(wire.Float32, r, it, count, density, overlap), wire.Float32)
		if err != nil {
			t.Fatal(err)
		}
		set := map[uint32]bool{}
		for i := range p.Len() {
			set[p.Index(i)] = true
		}
		return set
	}
	for _, tc := range []struct {
		density float64
		want    int
	}{{0.0015, 2}, {0.0004, 1}, {0.1, 100}, {1, 1000}} {
		if got := len(indices(0, tc.density, 0)); got != tc.want {
			t.Errorf("density %v of %d: %d indices, want %d", tc.density, count, got, tc.want)
		}
	}
	shared := func(overlap float64) int {
		a, b := indices(0, 0.1, overlap), indices(5, 0.1, overlap)
		n := 0
		for i := range a {
			if b[i] {
				n++
			}
		}
		return n
	}
	if n := shared(1); n != 100 {
		t.Errorf("overlap 1: ranks 0 and 5 share %d of 100 indices, want all", n)
	}
	if n := shared(0.5); n < 50 {
		t.Errorf("overlap 0.5: ranks 0 and 5 share %d of 100 indices, want at least 50", n)
	}
	if n := shared(0); n > 30 {
		t.Errorf("overlap 0: ranks 0 and 5 share %d of 100 indices, want only chance meetings (about 10)", n)
	}
}

// check verifies every local rank that does not hold the first's bytes,
// and in bounded time classifies each block by its contributors: a
// partial block is counted with the contributions it misses, not
// checked; a complete one is, at its own elements.
func TestPayloadCheck(t *testing.T) {
	const world, it = 3, 2
	c := Config{Ranks: world, Count: 3000, DType: wire.Int32, Op: wire.OpSum, Verify: true, Timeout: time.Second}
	right := reduced(t, c.DType, c.Op, world, it, c.Count)
	p := newPayload(c)
	set := func() {
		for i := range p.bufs {
			copy(p.bufs[i], right)
		}
	}
	set()
	if _, _, err := p.check(it, nil); err != nil {
		t.Fatalf("right results: %v", err)
	}
	binary.LittleEndian.PutUint32(p.bufs[2][4*2999:], 12345) // rank 2 alone, its last element
	if _, _, err := p.check(it, nil); err == nil || !strings.Contains(err.Error(), "verify: rank 2, call 2") {
		t.Errorf("rank 2's wrong result: %v", err)
	}

	// Bounded time: blocks of 1000 elements, block 1 with one contributor.
	c.Deadline = 5 * time.Millisecond
	p = newPayload(c)
	set()
	one := inputsOf(t, c.DType, c.Op, world, it, c.Count)[0]
	for i := range p.bufs {
		copy(p.bufs[i][4*1000:4*2000], one[4*1000:4*2000])
	}
	counts := []uint16{3, 1, 3}
	contrib := func(int) ([]uint16, int) { return counts, 1000 }
	partial, missed, err := p.check(it, contrib)
	if err != nil || partial != world || missed != world*2 {
		t.Errorf("one partial block a rank: %d partial, %d contributions missed, %v; want %d, %d, nil", partial, missed, err, world, world*2)
	}
	p.bufs[1][4*2500] ^= 1
	if _, _, err := p.check(it, contrib); err == nil || !strings.Contains(err.Error(), "verify: rank 1, call 2: block 2:") {
		t.Errorf("a wrong element in a complete block: %v", err)
	}
	// Contributors unknown: the whole vector is checked.
	if _, _, err := p.check(it, func(int) ([]uint16, int) { return nil, 0 }); err == nil {
		t.Error("a wrong vector whose contributors are unknown passed")
	}
}
