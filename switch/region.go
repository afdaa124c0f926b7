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
	pool chan *inRegion // the reader's; the last release puts the region back
}

// release drops one hold; the last one gives the region back to its
// reader. The pool has room for all of its regions, so this never blocks.
func (g *inRegion) release() {
	if g.refs.Add(-1) == 0 {
		g.pool <- g
	}
}

// regions is a reader's pool of receive regions.
type regions struct {
	rr   conn.RegionReader
	pool chan *inRegion
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
	g := &regions{rr: rr, pool: make(chan *inRegion, n), msgs: make([]conn.Datagram, regionMessages*conn.MaxGROSegments)}
	for range n {
		g.pool <- &inRegion{buf: make([]byte, regionMessages*conn.MaxGROMessage), pool: g.pool}
	}
	return g
}

// read waits for a free region and receives into it. The region comes
// back held once, for the caller, who releases it when it has handed the
// batch out; nil when ctx ended first.
func (g *regions) read(ctx context.Context) (*inRegion, int, error) {
	var r *inRegion
	select {
	case r = <-g.pool:
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
	r.refs.Store(1)
	k, err := g.rr.ReadInto(r.buf, g.msgs)
	if err != nil {
		r.release()
		return nil, 0, err
	}
	return r, k, nil
}
