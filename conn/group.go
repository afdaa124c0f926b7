package conn

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// A group is several conns bound to one address, each with its own reader
// and writer, so that a daemon's receive and send work spreads over as many
// CPUs as it has sockets. On Linux the sockets share the port with
// SO_REUSEPORT and the kernel picks the socket of each arriving datagram;
// MemNetwork.ListenGroup gives the same to tests. Each conn of a group is an
// ordinary Conn (recvmmsg/sendmmsg, GSO and GRO per socket) and any of them
// may send to anyone.

// MaxGroup is the most sockets one group may have.
const MaxGroup = 256

// MaxKeyShift bounds GroupConfig.KeyShift: the key is a 32-bit word.
const MaxKeyShift = 31

// GroupConfig says how many sockets a group has and how datagrams are
// spread over them.
type GroupConfig struct {
	// Sockets is the number of conns, 1..MaxGroup.
	Sockets int

	// ByKey steers each datagram by the big-endian uint32 at byte KeyOffset
	// of its payload: socket key mod Sockets, so that datagrams carrying the
	// same key (a Flare block id) land on one socket whoever sent them. A
	// datagram too short to hold the key goes to socket 0. Without ByKey, or
	// where the kernel cannot run the steering program, a datagram goes to
	// the socket its flow hashes to (source address and port): every
	// datagram of one sender lands on one socket.
	ByKey     bool
	KeyOffset int
	// KeyShift, with ByKey, shifts the key right by this many bits before
	// the mod (0..MaxKeyShift), so that runs of 2^KeyShift consecutive keys
	// share a socket. The kernel steers a GSO datagram once, by its first
	// segment, and a sender's GSO datagrams carry runs of consecutive
	// keys: keyed one by one they follow the keys the runs start at (with
	// Flare's hosts at 1 KiB, 92% of the datagrams on one of two sockets),
	// keyed by runs as long as the sender's they spread evenly.
	KeyShift int
	// Only, with ByKey, steers by the key only the datagrams whose byte at
	// Only.Offset is in Only.Min..Only.Max (Flare's per-block packet
	// types); the others go to socket 0, so that one sender's other
	// datagrams (joins, aborts, leaves) keep their order among themselves.
	Only *ByteRange
}

// ByteRange is the datagrams whose byte at Offset is in Min..Max.
type ByteRange struct {
	Offset   int
	Min, Max byte
}

// has reports whether b is in the range.
func (r *ByteRange) has(b []byte) bool {
	return len(b) > r.Offset && b[r.Offset] >= r.Min && b[r.Offset] <= r.Max
}

// Steering is how a group spreads datagrams over its sockets.
type Steering int

const (
	// SteerFlow: by a hash of the sender's address and port (the kernel's
	// SO_REUSEPORT hash of the 4-tuple).
	SteerFlow Steering = iota
	// SteerKey: by GroupConfig's key, mod the sockets (a classic BPF
	// program attached with SO_ATTACH_REUSEPORT_CBPF on Linux).
	SteerKey
)

func (s Steering) String() string {
	if s == SteerKey {
		return "key"
	}
	return "flow"
}

// Validate names the first field out of range.
func (g GroupConfig) Validate() error {
	switch {
	case g.Sockets < 1 || g.Sockets > MaxGroup:
		return fmt.Errorf("group sockets = %d: must be in 1..%d", g.Sockets, MaxGroup)
	case g.ByKey && (g.KeyOffset < 0 || g.KeyOffset > MaxDatagramLimit-4):
		return fmt.Errorf("group key offset = %d: must be in 0..%d", g.KeyOffset, MaxDatagramLimit-4)
	case g.KeyShift < 0 || g.KeyShift > MaxKeyShift:
		return fmt.Errorf("group key shift = %d: must be in 0..%d", g.KeyShift, MaxKeyShift)
	case g.Only != nil && (g.Only.Offset < 0 || g.Only.Offset > MaxDatagramLimit-1):
		return fmt.Errorf("group key range offset = %d: must be in 0..%d", g.Only.Offset, MaxDatagramLimit-1)
	case g.Only != nil && g.Only.Min > g.Only.Max:
		return fmt.Errorf("group key range %d..%d: min must not exceed max", g.Only.Min, g.Only.Max)
	}
	return nil
}

// ListenUDPGroup opens g.Sockets UDP sockets bound to addr (port 0 picks
// one port for all of them) and reports how the kernel steers datagrams
// among them: SteerKey when g.ByKey asked for it and the kernel took the
// program, SteerFlow otherwise. One socket (g.Sockets = 1) is ListenUDP.
// On systems other than Linux only one socket is possible.
func ListenUDPGroup(addr string, cfg Config, g GroupConfig) ([]Conn, Steering, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, SteerFlow, fmt.Errorf("listen udp %s: %w", addr, err)
	}
	if err := g.Validate(); err != nil {
		return nil, SteerFlow, fmt.Errorf("listen udp %s: %w", addr, err)
	}
	if g.Sockets == 1 {
		c, err := listenUDP(addr, cfg)
		if err != nil {
			return nil, SteerFlow, err
		}
		return []Conn{c}, steeringOfOne(g), nil
	}
	return listenUDPGroup(addr, cfg, g)
}

// steeringOfOne is what a group of one socket reports: every datagram
// reaches it, so any steering asked for is in effect.
func steeringOfOne(g GroupConfig) Steering {
	if g.ByKey {
		return SteerKey
	}
	return SteerFlow
}

// pick is the socket of a group of n that datagram b from `from` goes to,
// by the group's steering; the in-memory network's version of what the
// kernel does.
func (g GroupConfig) pick(n int, b []byte, from netip.AddrPort) int {
	if n <= 1 {
		return 0
	}
	if g.ByKey {
		if len(b) < g.KeyOffset+4 || (g.Only != nil && !g.Only.has(b)) {
			return 0
		}
		return int((binary.BigEndian.Uint32(b[g.KeyOffset:]) >> g.KeyShift) % uint32(n))
	}
	return int(flowHash(from) % uint32(n))
}

// flowHash is FNV-1a over the sender's address and port.
func flowHash(from netip.AddrPort) uint32 {
	h := uint32(2166136261)
	a := from.Addr().As16()
	for _, c := range a {
		h = (h ^ uint32(c)) * 16777619
	}
	p := from.Port()
	h = (h ^ uint32(p>>8)) * 16777619
	h = (h ^ uint32(p&0xff)) * 16777619
	return h
}
