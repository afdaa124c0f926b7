package conn

import (
	"fmt"
	"io"
	"net"
	"net/netip"
)

// Multicast. A switch that sends each result once to a job's group,
// instead of once to every member, halves the datagrams it hands the
// kernel for a job of many members; the kernel (or the network) makes the
// copies. A sender sets Config.MulticastInterface; a receiver listens with
// ListenMulticast beside its unicast socket. IPv4 only.

// ListenMulticast opens a socket that receives the datagrams sent to group
// (an IPv4 multicast address and a port) on the interface that has the
// address local, as a Conn like ListenUDP's (recvmmsg, GRO). Several
// sockets of a box may listen on one group: each gets its own copy. The
// socket takes only datagrams addressed to the group, whoever sends them,
// so a receiver checks their sender as it does on its unicast socket.
func ListenMulticast(group netip.AddrPort, local netip.Addr, cfg Config) (Conn, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("listen multicast %v: %w", group, err)
	}
	if err := checkGroup(group, local); err != nil {
		return nil, fmt.Errorf("listen multicast %v: %w", group, err)
	}
	return listenMulticast(group, local, cfg)
}

// checkGroup reports what makes group and local unusable for
// ListenMulticast, or nil.
func checkGroup(group netip.AddrPort, local netip.Addr) error {
	switch {
	case !group.Addr().Is4() || !group.Addr().IsMulticast():
		return fmt.Errorf("group %v: must be an IPv4 multicast address (224.0.0.0/4)", group.Addr())
	case group.Port() == 0:
		return fmt.Errorf("group port 0: must be in 1..65535")
	case !local.Is4() || local.IsUnspecified() || local.IsMulticast():
		return fmt.Errorf("local address %v: must be an IPv4 unicast address of this host (the interface to listen on)", local)
	}
	return nil
}

// LocalAddrTo returns the address this host sends from to reach to: that
// of the interface the routing table picks. Nothing is sent.
func LocalAddrTo(to netip.AddrPort) (netip.Addr, error) {
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(to))
	if err != nil {
		return netip.Addr{}, err
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap(), nil
}

// PortHold is a port of this box held for a multicast group's members
// (HoldGroupPort). Close gives it back.
type PortHold struct {
	Addr netip.AddrPort // the group and the port held
	c    io.Closer
}

// Close gives the port back.
func (h *PortHold) Close() error {
	if h == nil || h.c == nil {
		return nil
	}
	return h.c.Close()
}

// HoldGroupPort binds a socket to group (an IPv4 multicast address and a
// port; port 0: one the kernel picks) that receives nothing, and holds it
// until Close. While it is held, no socket of this box can take the port
// on the wildcard address without sharing it, as the port's own listeners
// do (ListenMulticast): the members that listen on the group find the
// port free, and a port some other socket has is found when the sender
// starts, not when its members join.
func HoldGroupPort(group netip.AddrPort) (*PortHold, error) {
	if !group.Addr().Is4() || !group.Addr().IsMulticast() {
		return nil, fmt.Errorf("hold port %v: the group must be an IPv4 multicast address (224.0.0.0/4)", group)
	}
	return holdGroupPort(group)
}
