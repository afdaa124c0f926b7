package swtch

import (
	"net/netip"
	"sync/atomic"
)

// Per-link traffic: every datagram in from and out to a peer this switch
// knows (a member of an admitted job, a child; the parent) is counted
// against that peer, in UDP payload bytes (the Flare header included) and
// in datagrams, so the traffic on each link of a tree is measured, not only
// modelled. The set of peers is bounded by the members of live jobs.

// Link roles, the metric's `link` label.
const (
	linkChild  = "child"
	linkParent = "parent"
)

// link counts one peer's traffic.
type link struct {
	role                                   string
	refs                                   int // jobs naming the peer; under the job table's lock
	rxBytes, txBytes, rxPackets, txPackets atomic.Int64
}

// linkTable maps peer addresses to their counters: a copy-on-write
// snapshot, one atomic load per batch on the packet path; changes take the
// job table's lock.
type linkTable struct {
	snap atomic.Pointer[map[netip.AddrPort]*link]
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
			l = &link{role: role}
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

// countRx counts received datagrams against their senders.
func (t *linkTable) countRx(msgs []Datagram) {
	links := t.load()
	if len(links) == 0 {
		return
	}
	for i := range msgs {
		if l := links[msgs[i].Addr]; l != nil {
			l.rxBytes.Add(int64(msgs[i].N))
			l.rxPackets.Add(1)
		}
	}
}

// countTx counts sent datagrams against their destinations.
func (t *linkTable) countTx(msgs []Datagram) {
	links := t.load()
	if len(links) == 0 {
		return
	}
	for i := range msgs {
		if l := links[msgs[i].Addr]; l != nil {
			l.txBytes.Add(int64(msgs[i].N))
			l.txPackets.Add(1)
		}
	}
}
