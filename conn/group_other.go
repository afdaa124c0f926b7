//go:build !linux

package conn

import "fmt"

// listenUDPGroup needs SO_REUSEPORT's load balancing, which only Linux
// offers for UDP in this package.
func listenUDPGroup(addr string, _ Config, g GroupConfig) ([]Conn, Steering, error) {
	return nil, SteerFlow, fmt.Errorf("listen udp %s: a group of %d sockets needs Linux (SO_REUSEPORT); use 1", addr, g.Sockets)
}
