package hostlib

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

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

// A sparse list cut mid-pair, one over the frame limit, or a call whose
// context is done is refused before anything is sent, and the ring stays
// usable; a rank whose ring failed says so on every later call.
func TestRingSparseChecks(t *testing.T) {
	rings := localRings(t, 2, nil)
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	bounded, stop := context.WithTimeout(t.Context(), 2*time.Second) // a call that went ahead would wait for rank 1
	defer stop()
	for _, c := range []struct {
		name  string
		ctx   context.Context
		pairs []byte
		want  string
	}{
		{"cut mid-pair", bounded, make([]byte, 7), "hostlib: ring sparse allreduce: 7 bytes are not whole int32 pairs"},
		{"over the frame limit", bounded, make([]byte, ringSparseMax+8), "exceed the frame limit"},
		{"cancelled", cancelled, nil, "hostlib: ring sparse allreduce: context canceled"},
	} {
		if _, err := rings[0].SparseAllReduce(c.ctx, c.pairs, wire.Int32, wire.OpSum); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
	lists := [][]byte{wire.AppendPair(nil, 3, []byte{1, 0, 0, 0}), wire.AppendPair(nil, 3, []byte{2, 0, 0, 0})}
	var g errgroup.Group
	res := make([][]byte, 2)
	for r := range rings {
		g.Go(func() (err error) {
			res[r], err = rings[r].SparseAllReduce(t.Context(), lists[r], wire.Int32, wire.OpSum)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("a call after the refused ones: %v", err)
	}
	for r := range res {
		if err := elem.CheckSparse(wire.Int32, wire.OpSum, lists, res[r]); err != nil {
			t.Fatalf("rank %d after the refused ones: %v", r, err)
		}
	}
	rings[1].Close() // rank 0's successor and predecessor: its next call fails
	if _, err := rings[0].SparseAllReduce(t.Context(), lists[0], wire.Int32, wire.OpSum); err == nil {
		t.Fatal("a call with its peer closed succeeded")
	}
	if _, err := rings[0].SparseAllReduce(t.Context(), lists[0], wire.Int32, wire.OpSum); err == nil ||
		!strings.Contains(err.Error(), "hostlib: ring rank 0: unusable after an earlier failure") {
		t.Fatalf("the call after a failure: %v, want it refused as unusable", err)
	}
}
