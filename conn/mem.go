package conn

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// MemNetwork is an in-memory datagram network: conns made by Listen send to
// each other by address, each datagram copied into the receiver's bounded
// queue, so that tests of the daemon and the host library run without
// sockets, deterministically when Faults.Seed is fixed and one goroutine
// sends. A full queue drops the datagram and counts it, as a socket's
// receive buffer would. Its conns have DefaultBatchSize and
// DefaultMaxDatagram and no offloads. The zero value is not ready: use
// NewMemNetwork.
type MemNetwork struct {
	// Faults are applied to every datagram as it is delivered. Set them
	// before datagrams flow; the zero value delivers everything at once.
	Faults Faults

	// QueueLen is each conn's receive queue in datagrams, read by Listen;
	// 0 means DefaultMemQueueLen.
	QueueLen int

	// mu guards conns, their groups' members, port and rng. Senders hold
	// it to read (several copy their datagrams at once, as sockets do in
	// the kernel) unless Faults are set: then one at a time, so that the
	// fault decisions follow the send order.
	mu    sync.RWMutex
	conns map[netip.AddrPort]*memGroup
	port  uint16     // last ephemeral port handed out
	rng   *rand.Rand // fault decisions, seeded from Faults.Seed on first use

	delivered, overflow, dropped, duplicated, reordered, noRoute, truncated atomic.Uint64
}

// Faults describes how a MemNetwork mistreats datagrams, each decision drawn
// from a generator seeded with Seed.
type Faults struct {
	Drop    float64       // probability a datagram is lost
	Dup     float64       // probability a datagram is delivered twice
	Reorder float64       // probability a datagram is held back by MemReorderHold, so later ones overtake it
	Delay   time.Duration // added to every datagram's delivery (delayed datagrams may also swap places)
	Seed    uint64
}

// MemStats counts what a MemNetwork did with the datagrams sent on it.
type MemStats struct {
	Delivered  uint64 // put on a receive queue (duplicates included)
	Overflow   uint64 // dropped because the receiver's queue was full
	Dropped    uint64 // lost to Faults.Drop
	Duplicated uint64 // delivered twice by Faults.Dup
	Reordered  uint64 // held back by Faults.Reorder
	NoRoute    uint64 // sent to an address where no conn listens (or one that closed)
	Truncated  uint64 // dropped by ReadBatch: larger than the reader's buffer
}

const (
	// DefaultMemQueueLen is a MemNetwork conn's receive queue, in datagrams.
	DefaultMemQueueLen = 1024
	// MemReorderHold is how long Faults.Reorder holds a datagram back.
	MemReorderHold = time.Millisecond

	memPortFirst = 49152 // ephemeral ports, as IANA suggests
)

// errMemClosed is returned after Close; allocated once.
var errMemClosed = fmt.Errorf("mem conn: %w", net.ErrClosed)

// memPacket is one datagram in flight, recycled through its receiver's
// queue (memQueue.free).
type memPacket struct {
	b    []byte
	from netip.AddrPort
}

// NewMemNetwork returns an empty network without faults.
func NewMemNetwork() *MemNetwork {
	return &MemNetwork{conns: make(map[netip.AddrPort]*memGroup)}
}

// Listen binds a conn to addr. Port 0 picks a free port; an invalid
// address means 127.0.0.1. A conn bound to an unspecified address
// (0.0.0.0, ::) receives what is sent to its port at any address of its
// family (:: takes IPv4 too), as with sockets.
func (n *MemNetwork) Listen(addr netip.AddrPort) (Conn, error) {
	cs, err := n.ListenGroup(addr, GroupConfig{Sockets: 1})
	if err != nil {
		return nil, err
	}
	return cs[0], nil
}

// ListenGroup binds g.Sockets conns to one address, as ListenUDPGroup does
// with SO_REUSEPORT: each datagram sent to the address is queued at one of
// them, chosen by g's steering (the key's value mod the conns still open,
// or a hash of the sender's address and port). Its steering is always the
// one asked for.
func (n *MemNetwork) ListenGroup(addr netip.AddrPort, g GroupConfig) ([]Conn, error) {
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("mem listen %v: %w", addr, err)
	}
	a := addr.Addr().Unmap()
	if !a.IsValid() {
		a = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	}
	qlen := n.QueueLen
	if qlen <= 0 {
		qlen = DefaultMemQueueLen
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	ap := netip.AddrPortFrom(a, addr.Port())
	if ap.Port() == 0 {
		for range 1 << 16 {
			n.port++
			if n.port < memPortFirst {
				n.port = memPortFirst
			}
			if ap = netip.AddrPortFrom(a, n.port); n.conns[ap] == nil {
				break
			}
		}
	}
	if n.conns[ap] != nil {
		return nil, fmt.Errorf("mem listen %v: address already in use", ap)
	}
	grp := &memGroup{cfg: g}
	out := make([]Conn, g.Sockets)
	for i := range out {
		c := &memConn{net: n, addr: ap, group: grp, done: make(chan struct{})}
		c.q.init(qlen)
		grp.conns = append(grp.conns, c)
		out[i] = c
	}
	n.conns[ap] = grp
	return out, nil
}

// memGroup is the conns bound to one address.
type memGroup struct {
	cfg   GroupConfig
	conns []*memConn // open ones, in the order they were made; under MemNetwork.mu
}

// pick is the conn datagram b from `from` is queued at. n.mu is held.
func (g *memGroup) pick(b []byte, from netip.AddrPort) *memConn {
	return g.conns[g.cfg.pick(len(g.conns), b, from)]
}

// Stats returns the network's counters so far.
func (n *MemNetwork) Stats() MemStats {
	return MemStats{
		Delivered:  n.delivered.Load(),
		Overflow:   n.overflow.Load(),
		Dropped:    n.dropped.Load(),
		Duplicated: n.duplicated.Load(),
		Reordered:  n.reordered.Load(),
		NoRoute:    n.noRoute.Load(),
		Truncated:  n.truncated.Load(),
	}
}

// route finds the conns of dst, falling back to those bound to the
// unspecified address of dst's family and then to [::]. n.mu is held.
func (n *MemNetwork) route(dst netip.AddrPort) *memGroup {
	a := dst.Addr().Unmap()
	if c := n.conns[netip.AddrPortFrom(a, dst.Port())]; c != nil {
		return c
	}
	if a.Is4() {
		if c := n.conns[netip.AddrPortFrom(netip.IPv4Unspecified(), dst.Port())]; c != nil {
			return c
		}
	}
	return n.conns[netip.AddrPortFrom(netip.IPv6Unspecified(), dst.Port())]
}

// send applies the faults to one datagram and delivers it. n.mu is held,
// which keeps the fault decisions in send order.
func (n *MemNetwork) send(dst *memConn, from netip.AddrPort, b []byte) {
	f := &n.Faults
	if f.Drop > 0 && n.draw() < f.Drop {
		n.dropped.Add(1)
		return
	}
	copies := 1
	if f.Dup > 0 && n.draw() < f.Dup {
		n.duplicated.Add(1)
		copies = 2
	}
	delay := f.Delay
	if f.Reorder > 0 && n.draw() < f.Reorder {
		n.reordered.Add(1)
		delay += MemReorderHold
	}
	for range copies {
		if delay == 0 {
			n.deliver(dst, from, [][]byte{b})
			continue
		}
		held := append([]byte(nil), b...)
		time.AfterFunc(delay, func() { n.deliver(dst, from, [][]byte{held}) })
	}
}

// draw is the next fault decision's number in [0, 1). n.mu is held to
// write.
func (n *MemNetwork) draw() float64 {
	if n.rng == nil {
		f := &n.Faults
		n.rng = rand.New(rand.NewPCG(f.Seed, f.Seed^0x9e3779b97f4a7c15))
	}
	return n.rng.Float64()
}

// deliver copies the datagrams bs from `from` onto dst's queue without
// blocking: one lock for the lot, as a socket takes a batch.
func (n *MemNetwork) deliver(dst *memConn, from netip.AddrPort, bs [][]byte) {
	if dst.closed() {
		n.noRoute.Add(uint64(len(bs)))
		return
	}
	queued := dst.q.push(from, bs, &n.delivered)
	if queued < len(bs) {
		n.overflow.Add(uint64(len(bs) - queued))
	}
}

// memQueue is a conn's bounded receive queue: a ring of datagram copies
// under a mutex, so that a run of datagrams to one conn is queued with one
// lock, and a free list of copies its reader has taken, for the senders to
// reuse. wake tells a waiting reader something was queued.
type memQueue struct {
	mu   sync.Mutex
	ring []*memPacket
	head int // the oldest queued
	n    int // queued
	free []*memPacket
	wake chan struct{} // capacity 1
}

func (q *memQueue) init(qlen int) {
	q.ring, q.wake = make([]*memPacket, qlen), make(chan struct{}, 1)
}

// push copies what fits of bs onto the queue, adds how many to queued
// before the reader can take them (so that a reader that has a datagram
// finds it counted in the network's Stats), and returns how many.
func (q *memQueue) push(from netip.AddrPort, bs [][]byte, queued *atomic.Uint64) int {
	q.mu.Lock()
	k := min(len(bs), len(q.ring)-q.n)
	for _, b := range bs[:k] {
		var p *memPacket
		if f := len(q.free); f > 0 {
			p, q.free = q.free[f-1], q.free[:f-1]
		} else {
			p = new(memPacket)
		}
		p.b, p.from = append(p.b[:0], b...), from
		q.ring[(q.head+q.n)%len(q.ring)] = p
		q.n++
	}
	queued.Add(uint64(k))
	q.mu.Unlock()
	if k > 0 {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
	return k
}

// pop moves up to len(out) queued datagrams into out, oldest first, and
// returns how many.
func (q *memQueue) pop(out []*memPacket) int {
	q.mu.Lock()
	k := min(len(out), q.n)
	for i := range k {
		out[i] = q.ring[q.head]
		q.ring[q.head] = nil
		q.head = (q.head + 1) % len(q.ring)
	}
	q.n -= k
	q.mu.Unlock()
	return k
}

// recycle keeps the copies a reader is done with for the senders. At most
// a full ring and a reader's batch of copies are ever in use at once, so
// the free list keeps up to that many and a queue that fills and drains
// again allocates nothing.
func (q *memQueue) recycle(done []*memPacket) {
	q.mu.Lock()
	room := len(q.ring) + DefaultBatchSize - len(q.free)
	q.free = append(q.free, done[:max(0, min(room, len(done)))]...)
	q.mu.Unlock()
}

// memConn is a MemNetwork endpoint.
type memConn struct {
	net       *MemNetwork
	addr      netip.AddrPort
	group     *memGroup // the conns bound to addr with this one
	q         memQueue  // late deliveries check done
	done      chan struct{}
	closeOnce sync.Once

	rmu   sync.Mutex   // one ReadBatch at a time: taken is its scratch
	taken []*memPacket // the copies the last ReadBatch read, to recycle

	wmu    sync.Mutex // one WriteBatch with tails at a time: joined is its scratch
	joined []byte     // datagrams with a Tail, made whole, until they are queued
}

var _ Conn = (*memConn)(nil)

func (c *memConn) LocalAddr() netip.AddrPort { return c.addr }
func (c *memConn) BatchSize() int            { return DefaultBatchSize }
func (c *memConn) Offload() Offload          { return Offload{} }

// Close unbinds the conn and wakes its reader. Datagrams still queued are
// discarded.
func (c *memConn) Close() error {
	err := errMemClosed
	c.closeOnce.Do(func() {
		c.net.mu.Lock()
		g := c.group
		for i, o := range g.conns {
			if o == c {
				g.conns = append(g.conns[:i], g.conns[i+1:]...)
				break
			}
		}
		if len(g.conns) == 0 {
			delete(c.net.conns, c.addr)
		}
		c.net.mu.Unlock()
		close(c.done)
		err = nil
	})
	return err
}

func (c *memConn) closed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func (c *memConn) ReadBatch(msgs []Datagram) (int, error) {
	if len(msgs) == 0 {
		return 0, nil
	}
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.taken == nil {
		c.taken = make([]*memPacket, DefaultBatchSize)
	}
	want := min(len(msgs), DefaultBatchSize)
	for {
		if c.closed() {
			return 0, errMemClosed
		}
		taken := c.taken[:c.q.pop(c.taken[:want])]
		out := 0
		for _, p := range taken {
			out = c.take(msgs, out, p)
		}
		c.q.recycle(taken)
		if out > 0 {
			return out, nil
		}
		select { // nothing yet (or only truncated datagrams): wait
		case <-c.q.wake:
		case <-c.done:
			return 0, errMemClosed
		}
	}
}

// take copies p into msgs[out]; it returns the new count.
func (c *memConn) take(msgs []Datagram, out int, p *memPacket) int {
	if len(p.b) > cap(msgs[out].Buf) {
		c.net.truncated.Add(1)
		return out
	}
	msgs[out].N = copy(msgs[out].Buf[:len(p.b)], p.b)
	msgs[out].Addr = p.from
	return out + 1
}

func (c *memConn) WriteBatch(msgs []Datagram) (int, error) {
	if c.closed() {
		return 0, errMemClosed
	}
	n := c.net
	faults := n.Faults != (Faults{})
	if !faults {
		n.mu.RLock() // nothing to decide: senders copy in parallel
		defer n.mu.RUnlock()
	} else {
		n.mu.Lock()
		defer n.mu.Unlock()
	}
	if hasTail(msgs) {
		c.wmu.Lock()
		defer c.wmu.Unlock()
		c.joined = c.joined[:0]
	}
	// A batch's datagrams mostly go to one address (a host's to the
	// switch; the switch's writer sends destination-major). So the last
	// address's route is kept (n.mu holds the table still for the call)
	// and, without faults, a run to one conn is queued with one lock.
	var (
		r        memRun
		lastAddr netip.AddrPort
		g        *memGroup
	)
	for i := range msgs {
		d := &msgs[i]
		if err := checkSend(d, DefaultMaxDatagram); err != nil {
			r.flush(n, c.addr)
			return i, err
		}
		if i == 0 || d.Addr != lastAddr {
			g, lastAddr = n.route(d.Addr), d.Addr
		}
		if g == nil {
			n.noRoute.Add(1) // like UDP: sending to nobody succeeds
			continue
		}
		// A datagram with a tail is gathered into joined, as the kernel
		// gathers the iovecs; the run keeps each until it flushes.
		for b := range d.Datagrams(&c.joined) {
			r.queue(n, c.addr, g.pick(b, c.addr), b, faults)
		}
	}
	r.flush(n, c.addr)
	return len(msgs), nil
}

// hasTail reports whether a datagram of msgs has a Tail.
func hasTail(msgs []Datagram) bool {
	for i := range msgs {
		if len(msgs[i].Tail) > 0 {
			return true
		}
	}
	return false
}

// memRun is a run of datagrams to one conn, gathered by WriteBatch.
type memRun struct {
	to *memConn
	bs [64][]byte
	k  int
}

// queue sends b from `from` to dst: at once where the network has
// faults to decide, else as part of the run to dst.
func (r *memRun) queue(n *MemNetwork, from netip.AddrPort, dst *memConn, b []byte, faults bool) {
	if faults {
		n.send(dst, from, b)
		return
	}
	if dst != r.to || r.k == len(r.bs) {
		r.flush(n, from)
		r.to = dst
	}
	r.bs[r.k] = b
	r.k++
}

func (r *memRun) flush(n *MemNetwork, from netip.AddrPort) {
	if r.k > 0 {
		n.deliver(r.to, from, r.bs[:r.k])
		r.k = 0
	}
}
