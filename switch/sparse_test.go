package swtch_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/hostlib"
	swtch "github.com/flare-net/flare/switch"
	"github.com/flare-net/flare/wire"
)

// sparseInput draws a rank's sparse vector: about density × n indices,
// a share overlap of them from a pool every rank draws from.
func sparseInput(rng *rand.Rand, n int, density, overlap float64, shared []uint32) []uint32 {
	seen := map[uint32]bool{}
	k := max(1, int(density*float64(n)))
	for len(seen) < k {
		if rng.Float64() < overlap && len(shared) > 0 {
			seen[shared[rng.IntN(len(shared))]] = true
		} else {
			seen[uint32(rng.IntN(n))] = true
		}
	}
	idx := make([]uint32, 0, k)
	for i := range uint32(n) {
		if seen[i] {
			idx = append(idx, i)
		}
	}
	return idx
}

// Sparse allreduce through a real switch and hostlib over loopback: hash
// (with spills) and array storage, single and multi-buffer, several calls
// per session, checked against the plain sparse reference; with the
// results (sparse and spilled pairs) unicast and on multicast groups.
func TestSparseAllReduceThroughSwitch(t *testing.T) {
	t.Run("unicast", func(t *testing.T) { testSparseThroughSwitch(t, netip.Prefix{}) })
	t.Run("multicast", func(t *testing.T) { testSparseThroughSwitch(t, netip.MustParsePrefix("239.255.82.0/28")) })
}

func testSparseThroughSwitch(t *testing.T, groups netip.Prefix) {
	sw := startSwitch(t, swtch.Config{Multicast: groups})
	multicast := groups.IsValid()
	job := uint32(100)
	for _, tc := range []struct {
		storage wire.Storage
		algo    wire.Algo
		buffers int
		op      wire.Op
		density float64
		world   int
	}{
		{wire.StorageHash, wire.AlgoAuto, 0, wire.OpSum, 0.01, 4},
		{wire.StorageHash, wire.AlgoSingle, 0, wire.OpSum, 0.3, 3}, // spills
		{wire.StorageArray, wire.AlgoAuto, 0, wire.OpSum, 0.05, 4},
		{wire.StorageArray, wire.AlgoMulti, 2, wire.OpMax, 0.2, 2},
		{wire.StorageHash, wire.AlgoMulti, 4, wire.OpMin, 0.1, 5},
		{wire.StorageHash, wire.AlgoAuto, 0, wire.OpSum, 0.001, 1},
	} {
		job++
		const n = 20_011 // not a multiple of the block
		ss := make([]*hostlib.Session, tc.world)
		g, ctx := errgroup.WithContext(context.Background())
		for r := range tc.world {
			g.Go(func() error {
				s, err := hostlib.Join(ctx, hostlib.Options{Switch: sw.Addr().String(), Job: job, Token: 7, Rank: r, World: tc.world,
					DType: wire.Float32, Op: tc.op, Elements: n, Sparse: true, Storage: tc.storage, Algo: tc.algo, Buffers: tc.buffers,
					BlockElems: 1000, Timeout: 20 * time.Second, Multicast: multicast})
				ss[r] = s
				return err
			})
		}
		if err := g.Wait(); err != nil {
			t.Fatalf("%+v: join: %v", tc, err)
		}
		rng := rand.New(rand.NewPCG(uint64(job), 1))
		shared := sparseInput(rng, n, tc.density, 0, nil)
		var spilled uint64
		for call := range 3 {
			idx := make([][]uint32, tc.world)
			val := make([][]float32, tc.world)
			inputs := make([][]byte, tc.world)
			for r := range idx {
				idx[r] = sparseInput(rng, n, tc.density, 0.5, shared)
				val[r] = make([]float32, len(idx[r]))
				for i := range val[r] {
					val[r][i] = float32(rng.IntN(2001)-1000) / 8 // exact in float32 sums
					if i%17 == 0 {
						val[r][i] = 0 // a zero is a value
					}
					var v [4]byte
					binary.LittleEndian.PutUint32(v[:], math.Float32bits(val[r][i]))
					inputs[r] = wire.AppendPair(inputs[r], idx[r][i], v[:])
				}
			}
			outIdx := make([][]uint32, tc.world)
			outVal := make([][]float32, tc.world)
			var g errgroup.Group
			for r, s := range ss {
				g.Go(func() (err error) {
					outIdx[r], outVal[r], err = hostlib.SparseAllReduce(context.Background(), s, idx[r], val[r])
					return err
				})
			}
			if err := g.Wait(); err != nil {
				t.Fatalf("%+v call %d: %v", tc, call, err)
			}
			for r := range ss {
				var got []byte
				for i := range outIdx[r] {
					var v [4]byte
					binary.LittleEndian.PutUint32(v[:], math.Float32bits(outVal[r][i]))
					got = wire.AppendPair(got, outIdx[r][i], v[:])
				}
				if err := elem.CheckSparse(wire.Float32, tc.op, inputs, got); err != nil {
					t.Fatalf("%+v call %d rank %d: %v", tc, call, r, err)
				}
			}
		}
		if sent := groupTxPackets(sw); multicast != (sent > 0) {
			t.Errorf("%+v: %d datagrams sent to multicast groups, with groups %v", tc, sent, groups)
		}
		for _, s := range ss {
			spilled += s.Stats().SpilledPairs
			s.Close()
		}
		// The job's streams reserved memory as they grew: all of it
		// comes back once its members have left.
		waitFor(t, fmt.Sprintf("%+v: the job's memory given back", tc), func() bool { return sw.MemoryReserved() == 0 })
		t.Logf("%v %v B=%d %v density %.3f P=%d: %d spilled pairs", tc.storage, tc.algo, tc.buffers, tc.op, tc.density, tc.world, spilled)
		if tc.storage == wire.StorageArray && spilled != 0 {
			t.Errorf("array storage spilled %d pairs", spilled)
		}
		if tc.density >= 0.3 && spilled == 0 {
			t.Errorf("hash storage at density %.2f spilled nothing: the table is not bounded", tc.density)
		}
	}
}

// Bad sparse input is refused before anything is sent, naming the problem.
func TestSparseAllReduceRejectsBadInput(t *testing.T) {
	sw := startSwitch(t, swtch.Config{})
	s, err := hostlib.Join(context.Background(), hostlib.Options{Switch: sw.Addr().String(), Job: 1, Token: 1, World: 1,
		DType: wire.Int32, Op: wire.OpSum, Elements: 100, Sparse: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		idx  []uint32
		val  []int32
		want string
	}{
		{[]uint32{3, 2}, []int32{1, 1}, "strictly increasing"},
		{[]uint32{3, 3}, []int32{1, 1}, "strictly increasing"},
		{[]uint32{5, 100}, []int32{1, 1}, "outside the vector of 100 elements"},
		{[]uint32{1}, []int32{1, 2}, "1 indices but 2 values"},
	} {
		if _, _, err := hostlib.SparseAllReduce(ctx, s, tc.idx, tc.val); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.idx, err, tc.want)
		}
	}
	if st := s.Stats(); st.Calls != 0 || st.PacketsSent > 2 {
		t.Errorf("bad input reached the wire: %+v", st)
	}
	if err := hostlib.AllReduce(ctx, s, make([]int32, 100)); err == nil {
		t.Error("a dense AllReduce on a sparse session accepted")
	}
}
