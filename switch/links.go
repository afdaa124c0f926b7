package swtch

import (
	"encoding/binary"
	"net/netip"
	"sync/atomic"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/wire"
)

// Per-link traffic: every datagram in from and out to a peer this switch
// knows (a member of an admitted job, a child; the parent) is counted
// against that peer, in UDP payload bytes (the Flare header included) and
// in datagrams, so the traffic on each link of a tree is measured, not only
// modelled. The set of peers is bounded by the members of live jobs.
//
// The datagrams of loss recovery are counted once more on their own: those
// whose header carries FlagRetransmit (a host's data sent again, the
// switch's answers to it: a resent result or a waiting report, a partial
// sent up again and the parent's answer to that). A measurement can then
// tell what the protocol sends once per block from what a slow or lossy
// path added, instead of reading every retransmission as traffic.

// Link roles, the metric's `link` label.
const (
	linkChild  = "child"
	linkParent = "parent"
	linkGroup  = "group" // a job's multicast group: its results, sent once for every member
)

// link counts one peer's traffic.
// Its counts are kept per reader (what reader rd received, what its
// writer sent), each reader's on a line pair of its own, and summed when
// read: a peer's datagrams reach every reader of a data-port group, and
// counters they all added to were a line that each reader's CPU took from
// the others' at every batch; on lines of their own, the next reader's
// line was still fetched with its pair (docs/PERFORMANCE.md).
type link struct {
	role   string
	refs   int          // jobs naming the peer; under the job table's lock
	shards []linkCounts // per reader; 128 bytes each, a slice of them on line pairs by its size class
}

// linkCounts is one reader's share of a link's counters.
type linkCounts struct {
	rxBytes, txBytes, rxPackets, txPackets atomic.Int64
	// the part of the above that carried FlagRetransmit
	rxRetxBytes, txRetxBytes, rxRetxPackets, txRetxPackets atomic.Int64
	_                                                      [64]byte // to 128 bytes: a line pair (x86's adjacent-line prefetch)
}

// traffic sums the link's counters over the readers: all its traffic, and
// the retransmitted part of it, each as the four counts of a direction.
func (l *link) traffic() (all, retx RetransmitTraffic) {
	for i := range l.shards {
		c := &l.shards[i]
		all.RxBytes += c.rxBytes.Load()
		all.TxBytes += c.txBytes.Load()
		all.RxPackets += c.rxPackets.Load()
		all.TxPackets += c.txPackets.Load()
		retx.RxBytes += c.rxRetxBytes.Load()
		retx.TxBytes += c.txRetxBytes.Load()
		retx.RxPackets += c.rxRetxPackets.Load()
		retx.TxPackets += c.txRetxPackets.Load()
	}
	return all, retx
}

// retransmitted reports whether datagram b is a Flare packet marked
// FlagRetransmit. It reads the version and flags only: a datagram the
// reader will drop as malformed is classified by the same two fields.
func retransmitted(b []byte) bool {
	return len(b) >= wire.HeaderLen && b[wire.OffVersion] == wire.Version &&
		wire.Flags(binary.BigEndian.Uint16(b[wire.OffFlags:]))&wire.FlagRetransmit != 0
}

// linkTable maps peer addresses to their counters: a copy-on-write
// snapshot, one atomic load per batch on the packet path; changes take the
// job table's lock.
type linkTable struct {
	snap    atomic.Pointer[map[netip.AddrPort]*link]
	readers int // the counters' shards per link; set before the switch runs
}

func (t *linkTable) load() map[netip.AddrPort]*link {
	if m := t.snap.Load(); m != nil {
		return *m
	}
	return nil
}

// ref adds a reference to each peer, creating its counters; the caller
// holds the job table's lock.
func (t *linkTable) ref(role string, peers ...netip.AddrPort) {
	old := t.load()
	m := make(map[netip.AddrPort]*link, len(old)+len(peers))
	for k, v := range old {
		m[k] = v
	}
	for _, p := range peers {
		if !p.IsValid() {
			continue
		}
		l := m[p]
		if l == nil {
			l = &link{role: role, shards: make([]linkCounts, max(t.readers, 1))}
			m[p] = l
		}
		l.refs++
	}
	t.snap.Store(&m)
}

// unref drops a reference to each peer; a peer no job names any more is
// forgotten. The caller holds the job table's lock.
func (t *linkTable) unref(peers ...netip.AddrPort) {
	old := t.load()
	m := make(map[netip.AddrPort]*link, len(old))
	for k, v := range old {
		m[k] = v
	}
	for _, p := range peers {
		if l := m[p]; l != nil {
			if l.refs--; l.refs <= 0 {
				delete(m, p)
			}
		}
	}
	t.snap.Store(&m)
}

// countRx counts datagrams reader rd received against their senders.
func (t *linkTable) countRx(rd int, msgs []conn.Datagram) { t.count(rd, msgs, true) }

// countTx counts datagrams reader rd's writer sent against their
// destinations.
func (t *linkTable) countTx(rd int, msgs []conn.Datagram) { t.count(rd, msgs, false) }

// count adds msgs to their peers' counters, one run of datagrams with the
// same address at a time (the writer sends destination-major and a GRO
// batch comes from one sender): a map lookup and two atomic adds (four with retransmissions) per run,
// not per datagram.
func (t *linkTable) count(rd int, msgs []conn.Datagram, rx bool) {
	links := t.load()
	if len(links) == 0 {
		return
	}
	for i := 0; i < len(msgs); {
		addr := msgs[i].Addr
		var run linkRun
		for ; i < len(msgs) && msgs[i].Addr == addr; i++ {
			run.add(&msgs[i])
		}
		if l := links[addr]; l != nil {
			l.shards[rd%len(l.shards)].addRun(&run, rx)
		}
	}
}

// linkRun is what one run of datagrams to or from a peer adds.
type linkRun struct{ bytes, packets, retxBytes, retxPackets int64 }

func (r *linkRun) add(d *conn.Datagram) {
	if d.Seg <= 0 {
		r.addOne(d.Buf[:d.N], d.Size())
		return
	}
	for seg := range d.Segments() {
		r.addOne(seg, len(seg))
	}
}

// addOne adds a datagram of size bytes that begins with b.
func (r *linkRun) addOne(b []byte, size int) {
	n := int64(size)
	r.bytes += n
	r.packets++
	if retransmitted(b) {
		r.retxBytes += n
		r.retxPackets++
	}
}

func (l *linkCounts) addRun(r *linkRun, rx bool) {
	bytes, packets, retxBytes, retxPackets := &l.txBytes, &l.txPackets, &l.txRetxBytes, &l.txRetxPackets
	if rx {
		bytes, packets, retxBytes, retxPackets = &l.rxBytes, &l.rxPackets, &l.rxRetxBytes, &l.rxRetxPackets
	}
	bytes.Add(r.bytes)
	packets.Add(r.packets)
	if r.retxPackets > 0 {
		retxBytes.Add(r.retxBytes)
		retxPackets.Add(r.retxPackets)
	}
}
