package swtch

import (
	"sync/atomic"

	"github.com/flare-net/flare/wire"
)

// Drop reasons beyond the wire's own (wire.DropReasons): a fixed set, so
// the metric's label set is bounded.
const (
	dropUnknownJob  = "unknown-job"
	dropToken       = "token"
	dropNotAdmitted = "not-admitted"
	dropNotMember   = "not-member"
	dropUnexpected  = "unexpected-type"
	dropShutdown    = "shutdown"
	dropSendError   = "send-error"
	// dropRefusedJoin counts refused joins past the answer limit: they get
	// no answer (a flood of bad joins is not answered one by one).
	dropRefusedJoin = "refused-join"
	// dropOversize counts datagrams larger than the receive buffers, which
	// the socket layer discards: Config.Socket.MaxDatagram bytes (at least
	// the header and a packet) where a reader receives into its own
	// buffers. A reader that lends GRO regions takes any datagram UDP
	// carries; one too long for its job is refused by the checks of its
	// length against its count (wire) and of its count against the job's
	// blocks (the handler) instead.
	dropOversize = "oversize"
)

var switchReasons = []string{dropUnknownJob, dropToken, dropNotAdmitted, dropNotMember, dropUnexpected, dropShutdown, dropSendError, dropRefusedJoin, dropOversize}

// dropCounters counts dropped packets by reason: one atomic per reason,
// looked up by a small linear scan of interned strings.
type dropCounters struct {
	reasons []string
	counts  []atomic.Int64
}

func newDropCounters() dropCounters {
	r := append(append([]string(nil), wire.DropReasons...), switchReasons...)
	return dropCounters{reasons: r, counts: make([]atomic.Int64, len(r))}
}

func (d *dropCounters) add(reason string) { d.addN(reason, 1) }

func (d *dropCounters) addN(reason string, n int64) {
	for i, r := range d.reasons {
		if r == reason {
			d.counts[i].Add(n)
			return
		}
	}
	panic("swtch: unknown drop reason " + reason)
}

func (d *dropCounters) addWire(err error) { d.add(wire.DropReason(err)) }

// snapshot returns each reason's count.
func (d *dropCounters) snapshot() map[string]int64 {
	m := make(map[string]int64, len(d.reasons))
	for i, r := range d.reasons {
		m[r] = d.counts[i].Load()
	}
	return m
}
