package swtch

import (
	"net/netip"
	"slices"
)

// LinkTraffic is one link's traffic as a switch counted it: UDP payload
// bytes (the Flare header included) and datagrams, received from the peer
// (Rx) and sent to it (Tx). On a child link (a host, or a child switch)
// Rx is the link's up direction and Tx its down direction; on the parent
// link Tx is up and Rx down.
type LinkTraffic struct {
	Peer                                   netip.AddrPort
	Role                                   string // "child", "parent" or "group" (a job's multicast group: its results, once for every member)
	RxBytes, TxBytes, RxPackets, TxPackets int64
	// Retransmit is the part of the traffic above whose datagrams carried
	// FlagRetransmit: loss recovery (a host's retransmissions, the answers
	// to them, partials sent up again and the parent's answers). The rest
	// is what the protocol sends once per block, except that a non-root
	// switch multicasts a result its parent sent again (an answer to a
	// partial sent up again) to its children unmarked, as it does the
	// first one.
	Retransmit RetransmitTraffic
}

// RetransmitTraffic is a link's loss-recovery traffic (LinkTraffic.Retransmit).
type RetransmitTraffic struct {
	RxBytes, TxBytes, RxPackets, TxPackets int64
}

// LinkCounter reads one link's counters live. The switch keeps a child
// link's counters only while a job names the peer; a LinkCounter taken
// while the job ran keeps reading the same counters after the job ended,
// so a caller gets the job's whole traffic on that link.
type LinkCounter struct {
	peer netip.AddrPort
	l    *link
}

// Peer is the address at the other end of the link.
func (c LinkCounter) Peer() netip.AddrPort { return c.peer }

// Role is "child", "parent" or "group".
func (c LinkCounter) Role() string { return c.l.role }

// Load reads the counters now.
func (c LinkCounter) Load() LinkTraffic {
	all, retx := c.l.traffic()
	return LinkTraffic{Peer: c.peer, Role: c.l.role, RxBytes: all.RxBytes, TxBytes: all.TxBytes,
		RxPackets: all.RxPackets, TxPackets: all.TxPackets, Retransmit: retx}
}

// LinkCounters lists the links the switch counts now (the parent, and the
// members of live jobs), the parent first, then by peer address. Two
// LinkCounters of the same peer taken at different times compare equal
// when they read the same counters.
func (s *Switch) LinkCounters() []LinkCounter {
	links := s.links.load()
	out := make([]LinkCounter, 0, len(links))
	for p, l := range links {
		out = append(out, LinkCounter{peer: p, l: l})
	}
	slices.SortFunc(out, func(a, b LinkCounter) int {
		if pa, pb := a.l.role == linkParent, b.l.role == linkParent; pa != pb {
			if pa {
				return -1
			}
			return 1
		}
		return a.peer.Compare(b.peer)
	})
	return out
}

// LinkTraffic is the traffic of every link the switch counts now, in the
// order of LinkCounters: what flare_link_bytes_total and
// flare_link_packets_total export, for a switch run in-process.
func (s *Switch) LinkTraffic() []LinkTraffic {
	cs := s.LinkCounters()
	out := make([]LinkTraffic, len(cs))
	for i, c := range cs {
		out[i] = c.Load()
	}
	return out
}
