package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/flare-net/flare/hostlib"
	"github.com/flare-net/flare/wire"
)

// sparsePattern is rank r's sparse vector in call it: max(1, density ×
// count) distinct indices, a share overlap of them drawn from a set every
// rank shares (so indices collide across ranks as in real gradients), the
// rest from the rank's own stream, with small integer values (zeros
// included) so float sums are exact. Every process computes every rank's
// vector from these numbers alone, which is how a rank checks its result.
func sparsePattern(dt wire.DType, r, it, count int, density, overlap float64) []byte {
	k := min(count, max(1, int(density*float64(count)+0.5)))
	used := make([]uint64, (count+63)/64)
	take := func(i int) bool {
		if used[i/64]&(1<<(i%64)) != 0 {
			return false
		}
		used[i/64] |= 1 << (i % 64)
		return true
	}
	shared := rand.New(rand.NewPCG(uint64(it), 0x5eed))
	own := rand.New(rand.NewPCG(uint64(it), uint64(r)+1))
	idx := make([]int, 0, k)
	nShared := int(overlap * float64(k))
	for len(idx) < nShared {
		if i := shared.IntN(count); take(i) {
			idx = append(idx, i)
		}
	}
	for len(idx) < k {
		if i := own.IntN(count); take(i) {
			idx = append(idx, i)
		}
	}
	slices.Sort(idx)
	sz := dt.Size()
	pairs := make([]byte, 0, k*wire.PairSize(dt))
	val := make([]byte, sz)
	for _, i := range idx {
		putValue(dt, val, int64((i*7+r*31+it*3)%13)-6)
		pairs = wire.AppendPair(pairs, uint32(i), val)
	}
	return pairs
}

// measureSparse is measure for --sparse: the in-network sparse allreduce
// (or, with --algo ring, the host sparse baseline), verified against the
// plain sparse reference of every rank's pattern.
func measureSparse(ctx context.Context, c arConfig) (*arResult, error) {
	local, world := c.localRanks()
	res := &arResult{Ranks: world, Bytes: int64(c.count * c.dtype.Size()), DType: c.dtype.String(), Op: c.op.String(),
		Iters: c.iters, Verified: c.verify, Density: c.density, Storage: c.storage.String()}
	results := make([][]byte, len(local))
	var call func(ctx context.Context, inputs [][]byte) error
	var traffic func() (tx, rx, spilled uint64)
	var closeAll func()
	switch {
	case c.algo == "ring":
		res.Algo, res.Storage = "ring", "host"
		var rings []*hostlib.Ring
		if c.ranks == 0 {
			ring, err := hostlib.NewRing(ctx, hostlib.RingConfig{Rank: c.rank, Peers: c.peers, DialTimeout: c.timeout})
			if err != nil {
				return nil, err
			}
			rings = []*hostlib.Ring{ring}
			call = func(ctx context.Context, inputs [][]byte) (err error) {
				results[0], err = ring.SparseAllReduce(ctx, inputs[0], c.dtype, c.op)
				return err
			}
		} else {
			var err error
			if rings, err = hostlib.NewLocalRings(ctx, c.ranks, nil); err != nil {
				return nil, err
			}
			call = func(ctx context.Context, inputs [][]byte) error {
				g, gctx := errgroup.WithContext(ctx)
				for i, r := range rings {
					g.Go(func() (err error) {
						results[i], err = r.SparseAllReduce(gctx, inputs[i], c.dtype, c.op)
						return err
					})
				}
				return g.Wait()
			}
		}
		traffic = func() (tx, rx, _ uint64) {
			for _, r := range rings {
				tx += r.Stats().BytesSent
				rx += r.Stats().BytesReceived
			}
			return tx, rx, 0
		}
		closeAll = func() {
			for _, r := range rings {
				r.Close()
			}
		}
	default:
		sessions, err := joinAll(ctx, c, local, world)
		if err != nil {
			return nil, err
		}
		res.Algo = algoName(sessions[0].Algo(), sessions[0].Buffers())
		call = func(ctx context.Context, inputs [][]byte) error {
			g, gctx := errgroup.WithContext(ctx)
			for i, s := range sessions {
				g.Go(func() (err error) {
					results[i], err = s.SparseAllReduceBytes(gctx, inputs[i])
					return err
				})
			}
			return g.Wait()
		}
		traffic = func() (tx, rx, spilled uint64) {
			for _, s := range sessions {
				st := s.Stats()
				tx, rx, spilled = tx+st.BytesSent, rx+st.BytesReceived, spilled+st.SpilledPairs
			}
			return tx, rx, spilled
		}
		closeAll = func() {
			for _, s := range sessions {
				res.Retransmits += int64(s.Stats().Retransmits)
				s.Close()
			}
		}
	}
	defer closeAll()
	var times []float64
	var tx0, rx0, sp0 uint64
	for it := 0; it < c.warmup+c.iters; it++ {
		if it == c.warmup {
			tx0, rx0, sp0 = traffic()
		}
		inputs := make([][]byte, len(local))
		for i, r := range local {
			inputs[i] = sparsePattern(c.dtype, r, it, c.count, c.density, c.overlap)
		}
		cctx, cancel := context.WithTimeout(ctx, c.timeout)
		start := time.Now()
		err := call(cctx, inputs)
		el := time.Since(start)
		cancel()
		if err != nil {
			return nil, err
		}
		if it >= c.warmup {
			times = append(times, el.Seconds())
		}
		if c.verify {
			if err := verifySparseAll(c, world, it, local, results); err != nil {
				return nil, fmt.Errorf("verify: call %d: %w", it, err)
			}
		}
	}
	tx, rx, sp := traffic()
	iters := uint64(c.iters)
	res.TxBytes, res.RxBytes, res.SpilledPairs = int64((tx-tx0)/iters), int64((rx-rx0)/iters), int64((sp-sp0)/iters)
	res.summarise(times)
	return res, nil
}
