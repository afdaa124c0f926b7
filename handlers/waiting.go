package handlers

import (
	"strconv"

	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/wire"
)

// maxWaitingNamed is how many missing children a waiting report lists.
const maxWaitingNamed = 8

// waitingScratch holds the scratch buffers of waiting reports, so that a
// report allocates nothing (duplicates are part of the steady state on a
// lossy network). A report takes one for itself and puts it back after
// its Emit, which copies the packet; no lock is held across Emit, which
// may block (a full egress queue) and must not stall the other cores'
// reports. There are as many buffers as reports were ever sent at once,
// at most one per core. (A sync.Pool would allocate whenever a core's
// goroutine moved to another P, or the race detector dropped a pooled
// buffer.)
var waitingScratch = func() (p workPool[[512]byte]) { p.reserve(0); return p }()

// reportWaiting answers a retransmitted packet of a block the switch
// already has from its sender, while the block still waits for other
// children: an Error packet with CodeWaiting, to the sender only, naming
// the children missing (missing(c) reports whether child c has not
// contributed): "block 12 of allreduce 3 waits for ranks 0, 2: nothing
// from them yet". A host that times out can then say which rank held it
// up, not only which blocks.
//
// blk is the block's id: the header's block field for dense blocks, the
// block without the stream's sequence number for sparse ones.
func reportWaiting(t *hpu.Task, job uint32, token uint64, dt wire.DType, op wire.Op, blk uint32, children int, missing func(c int) bool) {
	h0 := &t.Pkt.Hdr
	if h0.Flags&wire.FlagRetransmit == 0 {
		return
	}
	n := 0
	for c := range children {
		if missing(c) {
			n++
		}
	}
	if n == 0 {
		return
	}
	sendWaiting(t, job, token, dt, op, blk, func(text []byte) []byte {
		if n == 1 {
			text = append(text, "rank "...)
		} else {
			text = append(text, "ranks "...)
		}
		named := 0
		for c := 0; c < children && named < maxWaitingNamed; c++ {
			if missing(c) {
				if named > 0 {
					text = append(text, ", "...)
				}
				text = strconv.AppendInt(text, int64(c), 10)
				named++
			}
		}
		if n > named {
			text = append(text, " and "...)
			text = strconv.AppendInt(text, int64(n-named), 10)
			text = append(text, " more"...)
		}
		return append(text, ": nothing from them yet"...)
	})
}

// reportParentWaiting answers a host's retransmission at a non-root switch
// that sent the block up and has no result from its parent yet: "block 12
// of allreduce 3 waits for the parent switch: the partial from here went
// up, no result yet". The parent's own answers name its missing children
// (sibling switches) to this switch, not to the host.
func reportParentWaiting(t *hpu.Task, job uint32, token uint64, dt wire.DType, op wire.Op, blk uint32) {
	if t.Pkt.Hdr.Flags&wire.FlagRetransmit == 0 {
		return
	}
	sendWaiting(t, job, token, dt, op, blk, func(text []byte) []byte {
		return append(text, "the parent switch: the partial from here went up, no result yet"...)
	})
}

// sendWaiting sends "block B of allreduce G waits for " and what appends
// to it as a CodeWaiting error to the sender of the task's packet, built
// in a buffer of waitingScratch. B is blk, the block's id in full (the
// header carries the retransmitted packet's block field).
func sendWaiting(t *hpu.Task, job uint32, token uint64, dt wire.DType, op wire.Op, blk uint32, what func(text []byte) []byte) {
	buf := waitingScratch.take(0)
	if buf == nil {
		buf = new([512]byte) // more reports at once than ever before
	}
	defer waitingScratch.put(buf, 0)
	h0 := &t.Pkt.Hdr
	text := buf[:0]
	text = append(text, "block "...)
	text = strconv.AppendUint(text, uint64(blk), 10)
	text = append(text, " of allreduce "...)
	text = strconv.AppendUint(text, uint64(h0.Generation), 10)
	text = what(append(text, " waits for "...))
	body := wire.ErrorBody{Code: wire.CodeWaiting, Text: text}
	start := len(text)
	full := body.Append(text)
	h := wire.Header{Version: wire.Version, Type: wire.TypeError, Flags: wire.FlagRetransmit, Job: job, Token: token,
		Generation: h0.Generation, Block: h0.Block, Child: h0.Child, DType: dt, Op: op}
	t.Emit(&h, full[start:])
}
