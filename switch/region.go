package swtch

import (
	"context"
	"sync/atomic"

	"github.com/flare-net/flare/conn"
)

// Receive regions: where the kernel coalesces datagrams (GRO), a reader
// receives into a region of its own and lends each data packet to the
// processing unit from there (conn.RegionReader), instead of copying every
// datagram out of the conn's memory into a packet buffer. At 8 KiB packets
// that copy was 14% of the daemon's CPU.
const (
	// regionMessages is how many coalesced messages one receive takes:
	// a region of 256 KiB, up to 256 datagrams.
	regionMessages = 4
	// readerRegions is each reader's regions: received into in turn, each
	// again once the last packet lent from it is done. A reader whose
	// regions are all lent waits for one, as it waits for room in a full
	// processing unit. They are the reader's whole receive memory, 2 MiB,
	// allocated when it starts.
	readerRegions = 8
)

// inRegion is one receive region and the count of what holds it: the
// reader while it hands a batch out, and each packet lent from it until
// its handler returns.
type inRegion struct {
	buf  []byte
	refs atomic.Int32
	pool *regionPool // the reader's; the last release puts the region back
}

// release drops one hold; the last one gives the region back to its
// reader.
func (g *inRegion) release() { g.releaseN(1) }

// releaseN drops n holds.
func (g *inRegion) releaseN(n int32) {
	if g.refs.Add(-n) == 0 {
		g.pool.put(g)
	}
}

// regionPool is a reader's free regions, the one given back last taken
// first. The kernel copies each receive into its region, and the handlers
// then read the packets from it: a region just given back is still in the
// CPU's cache, while the one given back longest ago (as a FIFO would hand
// out) is 2 MiB of receives away, past a core's L2, so both the copy and
// the handlers' reads missed. The fan-out relay, which always receives
// into the start of one buffer, paid 0.56–0.59 of the switch's kernel
// time for the same copies.
type regionPool struct {
	free *freeList[inRegion] // its new gives nil: a reader has its regions and no more
	back chan struct{}       // capacity 1: a region came back (for a waiting reader)
}

func newRegionPool(n int) *regionPool {
	return &regionPool{free: newFreeList(n, func() *inRegion { return nil }), back: make(chan struct{}, 1)}
}

func (p *regionPool) put(r *inRegion) {
	p.free.put(r)
	select {
	case p.back <- struct{}{}:
	default:
	}
}

// get takes the region given back last, waiting for one while all are
// lent; nil when ctx ended first.
func (p *regionPool) get(ctx context.Context) (*inRegion, error) {
	for {
		if r := p.free.get(); r != nil {
			return r, nil
		}
		select {
		case <-p.back:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// regions is a reader's pool of receive regions.
type regions struct {
	rr   conn.RegionReader
	pool *regionPool
	msgs []conn.Datagram // one receive's datagrams, lent from the region
}

// newRegions returns c's n regions (0: readerRegions), or nil where c
// cannot lend (no GRO, or not a RegionReader): the reader then receives
// into packet buffers.
func newRegions(c conn.Conn, n int) *regions {
	rr := conn.Lender(c)
	if rr == nil {
		return nil
	}
	if n == 0 {
		n = readerRegions
	}
	pool := newRegionPool(n)
	for range n {
		pool.free.put(&inRegion{buf: make([]byte, regionMessages*conn.MaxGROMessage), pool: pool})
	}
	return &regions{rr: rr, pool: pool, msgs: make([]conn.Datagram, regionMessages*conn.MaxGROSegments)}
}

// read waits for a free region and receives into it. The region comes
// back held once, for the caller, who releases it when it has handed the
// batch out; nil when ctx ended first.
func (g *regions) read(ctx context.Context) (*inRegion, int, error) {
	r, err := g.pool.get(ctx)
	if err != nil {
		return nil, 0, err
	}
	r.refs.Store(1)
	k, err := g.rr.ReadInto(r.buf, g.msgs)
	if err != nil {
		r.release()
		return nil, 0, err
	}
	return r, k, nil
}
