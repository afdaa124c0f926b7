package elem

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/flare-net/flare/wire"
)

// i32pairs builds int32 pairs from (index, value) couples.
func i32pairs(kv ...int32) []byte {
	var b []byte
	for i := 0; i+1 < len(kv); i += 2 {
		b = wire.AppendPair(b, uint32(kv[i]), binary.LittleEndian.AppendUint32(nil, uint32(kv[i+1])))
	}
	return b
}

func TestSparseReferenceByHand(t *testing.T) {
	inputs := [][]byte{
		i32pairs(5, 1, 2, 10),
		i32pairs(2, -3),
		i32pairs(9, 0, 5, 4),
	}
	for _, tc := range []struct {
		op   wire.Op
		want []byte
	}{
		{wire.OpSum, i32pairs(2, 7, 5, 5, 9, 0)},
		{wire.OpMin, i32pairs(2, -3, 5, 1, 9, 0)},
		{wire.OpMax, i32pairs(2, 10, 5, 4, 9, 0)},
	} {
		got, err := SparseReference(wire.Int32, tc.op, inputs)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, tc.want) {
			t.Errorf("%s: got % x, want % x", tc.op, got, tc.want)
		}
		if err := CheckSparse(wire.Int32, tc.op, inputs, tc.want); err != nil {
			t.Errorf("%s: CheckSparse rejects the reference: %v", tc.op, err)
		}
	}
	if _, err := SparseReference(wire.Int32, wire.OpProd, inputs); !errors.Is(err, ErrUnsupported) {
		t.Errorf("prod: %v, want ErrUnsupported", err)
	}
	if _, err := SparseReference(wire.Int32, wire.OpSum, [][]byte{{1, 2, 3}}); err == nil {
		t.Error("a partial pair was accepted")
	}
}

func TestCheckSparseCatches(t *testing.T) {
	inputs := [][]byte{i32pairs(1, 1, 3, 3), i32pairs(3, 4)}
	for name, got := range map[string][]byte{
		"missing index": i32pairs(3, 7),
		"extra index":   i32pairs(1, 1, 2, 0, 3, 7),
		"wrong value":   i32pairs(1, 1, 3, 8),
		"other index":   i32pairs(1, 1, 4, 7),
	} {
		if CheckSparse(wire.Int32, wire.OpSum, inputs, got) == nil {
			t.Errorf("%s: not caught", name)
		}
	}
}
