//go:build !linux

package conn

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
)

// stdConn is the portable Conn: one datagram per system call through
// net.UDPConn. It is for development on other systems, not for speed.
type stdConn struct {
	pc       *net.UDPConn
	local    netip.AddrPort
	batch    int
	maxDgram int

	rmu     sync.Mutex
	scratch []byte // a full-size read buffer, so an oversized datagram is seen whole and dropped
	wmu     sync.Mutex
	joined  []byte // under wmu: a datagram with a Tail, made whole
	trunc   atomic.Uint64
}

var _ Conn = (*stdConn)(nil)

func listenUDP(addr string, cfg Config) (Conn, error) {
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return nil, err
	}
	uc := pc.(*net.UDPConn)
	if cfg.SocketBuffer > 0 {
		// Best effort, as on Linux: the system may cap the size.
		_ = uc.SetReadBuffer(cfg.SocketBuffer)
		_ = uc.SetWriteBuffer(cfg.SocketBuffer)
	}
	return &stdConn{
		pc:       uc,
		local:    uc.LocalAddr().(*net.UDPAddr).AddrPort(),
		batch:    cfg.BatchSize,
		maxDgram: cfg.MaxDatagram,
		scratch:  make([]byte, MaxDatagramLimit+1),
	}, nil
}

func (c *stdConn) LocalAddr() netip.AddrPort { return c.local }
func (c *stdConn) BatchSize() int            { return c.batch }
func (c *stdConn) Close() error              { return c.pc.Close() }
func (c *stdConn) Offload() Offload          { return Offload{} }

// Truncated counts the datagrams dropped for not fitting the buffers.
func (c *stdConn) Truncated() uint64 { return c.trunc.Load() }

// ReadBatch returns one datagram per call: without recvmmsg there is no
// portable way to take more without blocking.
func (c *stdConn) ReadBatch(msgs []Datagram) (int, error) {
	if len(msgs) == 0 {
		return 0, nil
	}
	c.rmu.Lock()
	defer c.rmu.Unlock()
	for {
		n, addr, err := c.pc.ReadFromUDPAddrPort(c.scratch)
		if err != nil {
			return 0, err
		}
		if n > cap(msgs[0].Buf) {
			c.trunc.Add(1)
			continue // larger than the caller's buffer: dropped, as on Linux
		}
		msgs[0].N = copy(msgs[0].Buf[:n], c.scratch[:n])
		msgs[0].Addr = netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
		return 1, nil
	}
}

func (c *stdConn) WriteBatch(msgs []Datagram) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	for i := range msgs {
		d := &msgs[i]
		if err := checkSend(d, c.maxDgram); err != nil {
			return i, err
		}
		c.joined = c.joined[:0]
		for b := range d.Datagrams(&c.joined) {
			if _, err := c.pc.WriteToUDPAddrPort(b, d.Addr); err != nil {
				return i, err
			}
		}
	}
	return len(msgs), nil
}
