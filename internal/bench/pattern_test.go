package bench

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/wire"
)

// The float32 fast paths write and accept exactly what the general ones
// do: the fill is putValue's encoding element by element, a correct sum
// passes the exact check, and one wrong element fails it and is named by
// verifyPattern.
func TestFloat32PatternFastPaths(t *testing.T) {
	const n, world, it, first = 5000, 8, 3, 700
	for r := range world {
		fast := make([]byte, 4*n)
		fillPattern(wire.Float32, wire.OpSum, r, it, fast)
		slow := make([]byte, 4*n)
		for i := range n {
			putValue(wire.Float32, slow[4*i:], patternValue(wire.OpSum, r, i, it))
		}
		if !bytes.Equal(fast, slow) {
			t.Fatalf("rank %d: the float32 fill differs from putValue's", r)
		}
	}
	inputs := make([][]byte, world)
	for r := range inputs {
		inputs[r] = make([]byte, 4*n)
		for i := range n {
			putValue(wire.Float32, inputs[r][4*i:], patternValue(wire.OpSum, r, first+i, it))
		}
	}
	sum, err := elem.Reference(wire.Float32, wire.OpSum, inputs)
	if err != nil {
		t.Fatal(err)
	}
	if !sumsExactly(world, it, sum, first) {
		t.Fatal("the exact check refuses the reference sum")
	}
	if err := verifyPattern(wire.Float32, wire.OpSum, world, it, sum, first); err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), sum...)
	binary.LittleEndian.PutUint32(bad[4*1234:], math.Float32bits(math.Float32frombits(binary.LittleEndian.Uint32(bad[4*1234:]))+1))
	if sumsExactly(world, it, bad, first) {
		t.Fatal("the exact check accepts a sum one off at element 1234")
	}
	err = verifyPattern(wire.Float32, wire.OpSum, world, it, bad, first)
	if err == nil || !strings.Contains(err.Error(), "1234") {
		t.Fatalf("verifyPattern on a wrong element 1234: %v", err)
	}
}
