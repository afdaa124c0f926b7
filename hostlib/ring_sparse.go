package hostlib

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"

	"golang.org/x/sync/errgroup"

	"github.com/flare-net/flare/proto"
	"github.com/flare-net/flare/wire"
)

// ringSparseMax bounds one rank's sparse list in a frame.
const ringSparseMax = 1 << 30

// SparseAllReduce is the host-based sparse baseline: a sparse allgather
// around the ring (P − 1 steps, each rank forwarding the list it received
// last, as SparCML's allgather of sparse vectors does), then every rank
// merges the P lists itself. pairs is this rank's list, wire pairs of dt
// (uint32 index, value) in any order with distinct indices; the result is
// the merged pairs sorted by index, the same bits on every rank. Traffic
// per rank is the sum of the other ranks' lists, which is what in-network
// sparse aggregation is compared with.
func (r *Ring) SparseAllReduce(ctx context.Context, pairs []byte, dt wire.DType, op wire.Op) ([]byte, error) {
	if _, err := wire.PairsOf(pairs, dt); err != nil {
		return nil, fmt.Errorf("hostlib: ring sparse allreduce: %d bytes are not whole %v pairs", len(pairs), dt)
	}
	if len(pairs) > ringSparseMax {
		return nil, fmt.Errorf("hostlib: ring sparse allreduce: %d bytes exceed the frame limit of %d", len(pairs), ringSparseMax)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("hostlib: ring sparse allreduce: %w", err)
	}
	r.callMu.Lock()
	defer r.callMu.Unlock()
	if err := r.cause(); err != nil {
		return nil, fmt.Errorf("hostlib: ring rank %d: unusable after an earlier failure: %w", r.rank, err)
	}
	stop := context.AfterFunc(ctx, func() {
		r.abort(fmt.Errorf("hostlib: ring rank %d: sparse allreduce interrupted: %w", r.rank, ctx.Err()))
	})
	defer stop()
	r.gen++
	all := append([]byte(nil), pairs...)
	cur := pairs
	for s := range r.world - 1 {
		next, err := r.sparseStep(s, dt, op, cur)
		if err != nil {
			r.failed.Add(1)
			return nil, err
		}
		all = append(all, next...)
		cur = next
	}
	out, err := proto.MergeSparse(nil, dt, op, nil, all)
	if err != nil {
		r.failed.Add(1)
		return nil, fmt.Errorf("hostlib: ring rank %d: sparse merge: %w", r.rank, err)
	}
	r.calls.Add(1)
	return out, nil
}

// sparseStep sends out to the successor while receiving the predecessor's
// list, whose length its frame header gives.
func (r *Ring) sparseStep(s int, dt wire.DType, op wire.Op, out []byte) (in []byte, err error) {
	err = r.exchange(s, dt, op, out, func() (rerr error) {
		in, rerr = r.receiveSparse(s, dt, op)
		return rerr
	})
	return in, err
}

func (r *Ring) receiveSparse(s int, dt wire.DType, op wire.Op) ([]byte, error) {
	h := r.recvHdr[:]
	if _, err := io.ReadFull(r.in, h); err != nil {
		return nil, r.stepErr(s, "receiving from", r.prev, err)
	}
	n := binary.BigEndian.Uint32(h[8:])
	if n > ringSparseMax || int(n)%wire.PairSize(dt) != 0 {
		return nil, r.stepErr(s, "receiving from", r.prev, fmt.Errorf("%w: a sparse list of %d bytes", ErrRingProtocol, n))
	}
	if err := r.checkHeader(s, dt, op, int(n)); err != nil {
		return nil, err
	}
	in := make([]byte, n)
	if _, err := io.ReadFull(r.in, in); err != nil {
		return nil, r.stepErr(s, "receiving from", r.prev, err)
	}
	r.received.Add(uint64(ringHeaderLen + len(in)))
	return in, nil
}

// RunLocalSparseRing runs the sparse baseline with one ring rank per list
// in this process, over loopback TCP, and returns each rank's result and
// its ring's traffic.
func RunLocalSparseRing(ctx context.Context, lists [][]byte, dt wire.DType, op wire.Op) (results [][]byte, stats []RingStats, err error) {
	rings, err := NewLocalRings(ctx, len(lists), nil)
	if err != nil {
		return nil, nil, err
	}
	defer closeRings(rings)
	results = make([][]byte, len(lists))
	g, gctx := errgroup.WithContext(ctx)
	for i, r := range rings {
		g.Go(func() (err error) {
			results[i], err = r.SparseAllReduce(gctx, lists[i], dt, op)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	stats = make([]RingStats, len(rings))
	for i, r := range rings {
		stats[i] = r.Stats()
	}
	return results, stats, nil
}
