package swtch

import (
	"fmt"
	"net/netip"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/wire"
)

// Bounds of the fan-out relay's state, so that joins cannot make it hold
// without limit: the jobs it keeps (the oldest makes room) and the bytes of
// one job's block table.
const (
	fanoutMaxJobs  = 64
	fanoutMaxBytes = 256 << 20
)

// fanout is the fan-out relay's state: the jobs, each with its members and
// the arrivals of each block in its current generation. It is used by the
// relay's one goroutine only.
type fanout struct {
	jobs   map[uint32]*fanoutJob
	order  []uint32   // job ids, oldest first
	groups *groupPool // Config.Multicast; nil without

	// the blocks completed in the batch being handled: which job, and the
	// packet (rewritten as the result) to send to its members
	done []fanoutDone
}

type fanoutDone struct {
	j *fanoutJob
	d *conn.Datagram
}

// fanoutJob is one job: its shape, its members by rank, and per block the
// generation counted, how many distinct ranks arrived in it, and which (a
// bitmap of words per block), so that a retransmitted copy is not counted
// twice.
type fanoutJob struct {
	token   uint64
	shape   relayShape
	words   int
	members []netip.AddrPort
	group   netip.AddrPort // where its packets go instead of to each member, when valid
	gen     []uint32
	count   []uint32
	seen    []uint64
}

func newFanout(groups *groupPool) *fanout {
	return &fanout{jobs: make(map[uint32]*fanoutJob), groups: groups}
}

// start begins a received batch.
func (f *fanout) start() { f.done = f.done[:0] }

// join records the member h.Child at from, creating the job on its first
// join. b holds the batch's answers, this join's join-ack from start; an
// answer that refuses the join replaces it. It also returns the job's
// multicast group, invalid for none or a refused join.
func (f *fanout) join(b []byte, start int, h *wire.Header, shape relayShape, from netip.AddrPort) ([]byte, netip.AddrPort) {
	var none netip.AddrPort
	if int(h.Child) >= shape.world {
		return relayError(b[:start], h, fmt.Sprintf("fan-out relay: rank %d: must be in 0..%d (world %d)", h.Child, shape.world-1, shape.world)), none
	}
	j := f.jobs[h.Job]
	if j != nil && (j.token != h.Token || j.shape != shape) {
		return relayError(b[:start], h, fmt.Sprintf("fan-out relay: job %d is joined with another token or shape (%d ranks, %d blocks, multicast %v)",
			h.Job, j.shape.world, j.shape.blocks, j.shape.multicast)), none
	}
	if j == nil {
		words := (shape.world + 63) / 64
		if need := int64(shape.blocks) * int64(8+8*words); need > fanoutMaxBytes {
			return relayError(b[:start], h, fmt.Sprintf("fan-out relay: job %d needs %d bytes of block table, more than %d", h.Job, need, fanoutMaxBytes)), none
		}
		if len(f.order) == fanoutMaxJobs {
			f.groups.give(f.jobs[f.order[0]].group)
			delete(f.jobs, f.order[0])
			f.order = f.order[1:]
		}
		j = &fanoutJob{token: h.Token, shape: shape, words: words, members: make([]netip.AddrPort, shape.world),
			gen: make([]uint32, shape.blocks), count: make([]uint32, shape.blocks), seen: make([]uint64, shape.blocks*words)}
		if shape.multicast {
			j.group, _ = f.groups.take() // none (no pool, or all taken): unicast
		}
		f.jobs[h.Job] = j
		f.order = append(f.order, h.Job)
	}
	j.members[h.Child] = from
	return b, j.group
}

// data counts the data packet d (header h). The last of a block's ranks
// completes it: the packet becomes the result, sent to every member by
// finish. A retransmitted copy from a rank already counted is answered
// alone once the block is complete, and dropped before. Packets of no
// job, another token, a rank not joined from that address, a block out
// of range or an older generation are dropped.
func (f *fanout) data(h *wire.Header, d *conn.Datagram, out []conn.Datagram) []conn.Datagram {
	j := f.jobs[h.Job]
	if j == nil || h.Token != j.token || int(h.Child) >= j.shape.world || int(h.Block) >= j.shape.blocks ||
		j.members[h.Child] != d.Addr {
		return out
	}
	b := int(h.Block)
	seen := j.seen[b*j.words : (b+1)*j.words]
	switch delta := int32(h.Generation - j.gen[b]); {
	case delta > 0:
		j.gen[b], j.count[b] = h.Generation, 0
		clear(seen)
	case delta < 0:
		return out
	}
	w, bit := int(h.Child)/64, uint64(1)<<(h.Child%64)
	if seen[w]&bit != 0 {
		if int(j.count[b]) == j.shape.world {
			toResult(h, d)
			out = append(out, *d)
		}
		return out
	}
	seen[w] |= bit
	j.count[b]++
	if int(j.count[b]) == j.shape.world {
		toResult(h, d)
		f.done = append(f.done, fanoutDone{j: j, d: d})
	}
	return out
}

// finish appends the batch's completed blocks to out, destination-major as
// the switch's writer does: every result of a job to member 0, then to
// member 1, and so on, so that a run to one address is one GSO send.
func (f *fanout) finish(out []conn.Datagram) []conn.Datagram {
	for i := range f.done {
		j := f.done[i].j
		if j == nil {
			continue // sent with an earlier job's run
		}
		if j.group.IsValid() {
			out = append(out, conn.Datagram{Buf: f.done[i].d.Buf, N: f.done[i].d.N, Addr: j.group})
			f.done[i].j = nil
			continue
		}
		for _, m := range j.members {
			for k := i; k < len(f.done); k++ {
				if f.done[k].j == j {
					out = append(out, conn.Datagram{Buf: f.done[k].d.Buf, N: f.done[k].d.N, Addr: m})
				}
			}
		}
		for k := i; k < len(f.done); k++ {
			if f.done[k].j == j {
				f.done[k].j = nil
			}
		}
	}
	return out
}
