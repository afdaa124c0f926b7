//go:build linux

package conn

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"
)

// listenMulticast binds the group's own address and port and joins the
// group on local's interface (bindGroup).
func listenMulticast(group netip.AddrPort, local netip.Addr, cfg Config) (Conn, error) {
	uc, err := bindGroup(group, local)
	if err != nil {
		return nil, fmt.Errorf("listen multicast %v: %w", group, err)
	}
	return newMmsgConn(uc, group.String(), cfg)
}

// holdGroupPort binds group's address and port as the listeners do and
// joins no group (bindGroup), so that the socket is given no datagram:
// the members' joins do not reach it.
func holdGroupPort(group netip.AddrPort) (*PortHold, error) {
	uc, err := bindGroup(group, netip.Addr{})
	if err != nil {
		return nil, fmt.Errorf("hold port %v: %w", group, err)
	}
	// The socket names its address 0.0.0.0 (a multicast address is no
	// source), but holds the group's.
	port := uc.LocalAddr().(*net.UDPAddr).AddrPort().Port()
	return &PortHold{Addr: netip.AddrPortFrom(group.Addr(), port), c: uc}, nil
}

// bindGroup binds a UDP socket to group's address and port, shared with
// SO_REUSEADDR (every socket bound so gets a copy of each datagram),
// joins the group on local's interface where local is valid, and turns
// IP_MULTICAST_ALL off: the socket takes only the group it joined (none
// without local), not every group some socket of the box joined on its
// port.
func bindGroup(group netip.AddrPort, local netip.Addr) (*net.UDPConn, error) {
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
		}); err != nil {
			return err
		}
		return serr
	}}
	pc, err := lc.ListenPacket(context.Background(), "udp4", group.String())
	if err != nil {
		return nil, err
	}
	uc := pc.(*net.UDPConn)
	rc, err := uc.SyscallConn()
	if err != nil {
		uc.Close()
		return nil, err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		if local.IsValid() {
			m := unix.IPMreq{Multiaddr: group.Addr().As4(), Interface: local.As4()}
			if serr = unix.SetsockoptIPMreq(int(fd), unix.IPPROTO_IP, unix.IP_ADD_MEMBERSHIP, &m); serr != nil {
				serr = fmt.Errorf("join the group on %v (IP_ADD_MEMBERSHIP): %w", local, serr)
				return
			}
		}
		if serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MULTICAST_ALL, 0); serr != nil {
			serr = fmt.Errorf("setsockopt IP_MULTICAST_ALL: %w", serr)
		}
	}); err != nil || serr != nil {
		uc.Close()
		return nil, cmp.Or(err, serr)
	}
	return uc, nil
}

// setMulticastInterface makes fd send multicast datagrams out of the
// interface that has address ifaddr, and deliver them to this box's own
// listeners too (IP_MULTICAST_LOOP), with the default hop limit of 1: the
// members share a segment with the switch.
func setMulticastInterface(fd int, ifaddr netip.Addr) error {
	if err := unix.SetsockoptInet4Addr(fd, unix.IPPROTO_IP, unix.IP_MULTICAST_IF, ifaddr.As4()); err != nil {
		return fmt.Errorf("setsockopt IP_MULTICAST_IF %v: %w", ifaddr, err)
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MULTICAST_LOOP, 1); err != nil {
		return fmt.Errorf("setsockopt IP_MULTICAST_LOOP: %w", err)
	}
	return nil
}
