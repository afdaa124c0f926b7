//go:build !linux

package conn

import (
	"errors"
	"net/netip"
)

// errMulticastPlatform: the portable conn does not do multicast.
var errMulticastPlatform = errors.New("multicast results need Linux")

func listenMulticast(netip.AddrPort, netip.Addr, Config) (Conn, error) {
	return nil, errMulticastPlatform
}

func holdGroupPort(netip.AddrPort) (*PortHold, error) { return nil, errMulticastPlatform }
