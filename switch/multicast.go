package swtch

import (
	"encoding/binary"
	"net/netip"
	"sync/atomic"

	"github.com/flare-net/flare/conn"
)

// Multicast results. With Config.Multicast set, a job whose members all
// joined with wire.OptMulticast gets a group of the pool for as long as it
// runs, named in its join-ack: the writer then sends each of its results
// once, to the group, where it would send it once to every member, and the
// kernel (or the network) makes the copies. Retransmitted results, the
// answers to one member, stay unicast. A job whose members do not all ask,
// or that finds the pool empty, runs unicast as before. A group is given
// back when its job is freed and handed out again last, so that a result
// still on its way to an old job's group reaches few new members, which
// drop it by its job id and token.

// maxGroups bounds the pool: no more jobs than MaxJobsLimit run at once.
const maxGroups = MaxJobsLimit

// groupPool hands out the groups of Config.Multicast; under the table lock.
type groupPool struct {
	first    netip.Addr
	port     uint16
	portHold *conn.PortHold // the port, while the switch runs (hold)
	used     []bool         // by offset from first
	next     int            // where the next search starts
	inUse    atomic.Int64   // groups taken, for the metrics
}

// newGroupPool makes the pool of prefix's addresses (at most maxGroups of
// them) at port; nil when prefix is not set.
func newGroupPool(prefix netip.Prefix, port int) *groupPool {
	if !prefix.IsValid() {
		return nil
	}
	n := maxGroups
	if bits := 32 - prefix.Bits(); bits < 16 {
		n = 1 << bits
	}
	return &groupPool{first: prefix.Masked().Addr(), port: uint16(port), used: make([]bool, n)}
}

// take returns a free group, or false when every one is in use.
func (p *groupPool) take() (netip.AddrPort, bool) {
	if p == nil {
		return netip.AddrPort{}, false
	}
	for k := range p.used {
		i := (p.next + k) % len(p.used)
		if !p.used[i] {
			p.used[i], p.next = true, i+1
			p.inUse.Add(1)
			return netip.AddrPortFrom(p.addr(i), p.port), true
		}
	}
	return netip.AddrPort{}, false
}

// give returns group g to the pool.
func (p *groupPool) give(g netip.AddrPort) {
	if p == nil || !g.IsValid() {
		return
	}
	i := int64(ipv4(g.Addr())) - int64(ipv4(p.first))
	if i >= 0 && i < int64(len(p.used)) && p.used[i] {
		p.used[i] = false
		p.inUse.Add(-1)
	}
}

// hold takes the pool's port on this box for as long as the switch runs
// (conn.HoldGroupPort), so that the members who listen on a group find it
// free, and a port another socket has is refused at the start. A pool
// made without a port (Config.MulticastPort 0 and Listen's port 0) holds
// one the kernel picks: the port next to one the kernel picked for the
// data port may be any other socket's.
func (p *groupPool) hold() error {
	if p == nil {
		return nil
	}
	h, err := conn.HoldGroupPort(netip.AddrPortFrom(p.first, p.port))
	if err != nil {
		return err
	}
	p.portHold, p.port = h, h.Addr.Port()
	return nil
}

// release gives the held port back.
func (p *groupPool) release() {
	if p != nil {
		p.portHold.Close()
		p.portHold = nil
	}
}

// groupPort is the groups' default port: the data port's next (its
// previous for 65535).
func groupPort(data uint16) int {
	if data == 65535 {
		return 65534
	}
	return int(data) + 1
}

// addr is the pool's i-th address.
func (p *groupPool) addr(i int) netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], ipv4(p.first)+uint32(i))
	return netip.AddrFrom4(b)
}

// ipv4 is IPv4 address a as a number.
func ipv4(a netip.Addr) uint32 {
	b := a.As4()
	return binary.BigEndian.Uint32(b[:])
}

// held is how many groups jobs hold now.
func (p *groupPool) held() int64 {
	if p == nil {
		return 0
	}
	return p.inUse.Load()
}

// MulticastGroupsInUse is how many groups of Config.Multicast running jobs
// hold now (flare_multicast_groups_in_use).
func (s *Switch) MulticastGroupsInUse() int { return int(s.groups.held()) }
