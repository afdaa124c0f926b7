package proto

import (
	"testing"

	"github.com/flare-net/flare/wire"
)

func TestChoose(t *testing.T) {
	for _, tc := range []struct {
		n    int
		repr bool
		algo wire.Algo
		b    int
	}{
		{1 << 20, false, wire.AlgoSingle, 0}, {512 << 10, false, wire.AlgoMulti, 4}, {300 << 10, false, wire.AlgoMulti, 4},
		{256 << 10, false, wire.AlgoMulti, 2}, {129 << 10, false, wire.AlgoMulti, 2}, {128 << 10, false, wire.AlgoTree, 0},
		{1 << 30, true, wire.AlgoTree, 0},
	} {
		if a, b := Choose(tc.n, tc.repr); a != tc.algo || b != tc.b {
			t.Errorf("Choose(%d, %v) = %s/%d, want %s/%d", tc.n, tc.repr, a, b, tc.algo, tc.b)
		}
	}
}
