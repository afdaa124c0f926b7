package hostlib

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/wire"
)

// The host sparse baseline agrees with the plain sparse reference, gives
// every rank the same bits, and each rank sends every list but its
// successor's once.
func TestRingSparseAllReduce(t *testing.T) {
	for _, p := range []int{1, 2, 5} {
		rng := rand.New(rand.NewPCG(uint64(p), 9))
		lists := make([][]byte, p)
		var total int
		for r := range lists {
			perm := rng.Perm(5000)[:300+r*50]
			for _, i := range perm {
				var v [4]byte
				binary.LittleEndian.PutUint32(v[:], uint32(rng.IntN(1000)-500))
				lists[r] = wire.AppendPair(lists[r], uint32(i), v[:])
			}
			total += len(lists[r])
		}
		res, sent, err := RunLocalSparseRing(context.Background(), lists, wire.Int32, wire.OpSum)
		if err != nil {
			t.Fatalf("P=%d: %v", p, err)
		}
		for r := range res {
			if err := elem.CheckSparse(wire.Int32, wire.OpSum, lists, res[r]); err != nil {
				t.Fatalf("P=%d rank %d: %v", p, r, err)
			}
			if !bytes.Equal(res[r], res[0]) {
				t.Fatalf("P=%d: rank %d's result differs from rank 0's", p, r)
			}
			// Rank r forwards every list but its successor's, each once.
			if want := total - len(lists[(r+1)%p]) + (p-1)*ringHeaderLen; p > 1 && sent[r].BytesSent != uint64(want) {
				t.Errorf("P=%d rank %d sent %d bytes, want %d", p, r, sent[r].BytesSent, want)
			}
		}
	}
}
