package elem

import (
	"bytes"
	"errors"
	"testing"

	"github.com/flare-net/flare/internal/pairtest"
	"github.com/flare-net/flare/wire"
)

func TestSparseReferenceByHand(t *testing.T) {
	inputs := [][]byte{
		pairtest.Int32(5, 1, 2, 10),
		pairtest.Int32(2, -3),
		pairtest.Int32(9, 0, 5, 4),
	}
	for _, tc := range []struct {
		op   wire.Op
		want []byte
	}{
		{wire.OpSum, pairtest.Int32(2, 7, 5, 5, 9, 0)},
		{wire.OpMin, pairtest.Int32(2, -3, 5, 1, 9, 0)},
		{wire.OpMax, pairtest.Int32(2, 10, 5, 4, 9, 0)},
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
	inputs := [][]byte{pairtest.Int32(1, 1, 3, 3), pairtest.Int32(3, 4)}
	for name, got := range map[string][]byte{
		"missing index": pairtest.Int32(3, 7),
		"extra index":   pairtest.Int32(1, 1, 2, 0, 3, 7),
		"wrong value":   pairtest.Int32(1, 1, 3, 8),
		"other index":   pairtest.Int32(1, 1, 4, 7),
	} {
		if CheckSparse(wire.Int32, wire.OpSum, inputs, got) == nil {
			t.Errorf("%s: not caught", name)
		}
	}
}
