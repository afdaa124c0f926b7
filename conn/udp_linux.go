//go:build linux

package conn

// Linux batched UDP: recvmmsg/sendmmsg on the socket's descriptor, with UDP
// GSO on send and UDP GRO on receive where the kernel offers them.
//
// The system calls are the ones golang.org/x/net/ipv4's ReadBatch and
// WriteBatch make, but made here over golang.org/x/sys/unix: x/net parses
// every source address into a fresh *net.UDPAddr (two allocations per
// received datagram, measured with v0.62.0), and the hot path must not
// allocate. The message headers, iovecs, socket addresses and control
// buffers below are arrays owned by the conn and reused on every call; the
// addresses are read straight into netip.AddrPort values.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	// groBufSize holds the largest message GRO can hand up (64 KiB of
	// coalesced payload), and keeps the next message's buffer aligned.
	groBufSize = MaxGROMessage
	// groMaxMsgs caps the messages one GRO receive asks for: each needs a
	// groBufSize buffer, and a coalesced message holds up to
	// MaxGROSegments datagrams.
	groMaxMsgs = 64
	// oobLen is the control buffer per message: room for the one UDP_GRO or
	// UDP_SEGMENT cmsg this code uses, with slack, a multiple of the cmsg
	// alignment so consecutive slots stay aligned.
	oobLen = 64
)

// sockaddr is storage for a sockaddr_in or sockaddr_in6, read and written
// as bytes (family in host order, port in network order).
type sockaddr [unix.SizeofSockaddrInet6]byte

// mmsgConn is the Linux Conn.
type mmsgConn struct {
	pc       *net.UDPConn
	rc       syscall.RawConn
	local    netip.AddrPort
	v6       bool // AF_INET6 socket: destinations are written as sockaddr_in6
	batch    int
	maxDgram int
	gso      atomic.Bool // cleared for good when the kernel refuses a GSO send
	gro      bool
	trunc    atomic.Uint64 // datagrams dropped for not fitting the caller's buffer
	busyPoll time.Duration // Config.BusyPoll

	rmu sync.Mutex // one reader at a time; guards r
	r   recvState
	wmu sync.Mutex // one writer at a time; guards w
	w   sendState
}

var _ Conn = (*mmsgConn)(nil)

// recvState is the reader's reusable recvmmsg arguments and, with GRO, the
// coalesced messages not yet handed out.
type recvState struct {
	trunc *atomic.Uint64 // the conn's count of datagrams too large for the caller's buffers
	hs    []unix.Mmsghdr
	iovs  []unix.Iovec
	names []sockaddr
	oob   []byte // oobLen per message; GRO only

	// GRO (and ReadInto lending without it): conn-owned buffers the
	// kernel fills for ReadBatch (made at its first call), and what is
	// left of the last receive: messages [next, count), the first from
	// byte off, always in bufs (ReadInto leaves nothing in the caller's
	// region).
	bufs        []byte
	segs        []int // datagram size within each message
	addrs       []netip.AddrPort
	count, next int
	off         int

	// Arguments and results of the syscall closures, bound once so that
	// RawConn.Read does not allocate a closure per call: fn waits for the
	// socket when it has nothing, poll does not.
	fn, poll func(fd uintptr) bool
	polled   bool // poll's out: its recvmmsg found something (or failed)
	want     int
	got      int
	errno    syscall.Errno
}

// sendState is the writer's reusable sendmmsg arguments.
type sendState struct {
	hs    []unix.Mmsghdr
	iovs  []unix.Iovec // one or two per datagram (Buf, Tail): GSO gathers a run without copying
	names []sockaddr
	oob   []byte // oobLen per message, holds the UDP_SEGMENT cmsg
	ends  []int  // entries of msgs each message completes (a run's last message: 1, the others 0)
	offs  []int  // where in the run it cut the next message starts (0: none cut)

	fn          func(fd uintptr) bool
	start, stop int // messages [start, stop) to send
	sent        int
	errno       syscall.Errno
}

func listenUDP(addr string, cfg Config) (Conn, error) {
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return nil, err
	}
	return newMmsgConn(pc.(*net.UDPConn), addr, cfg)
}

// newMmsgConn makes a Conn of a bound socket, closing it on failure.
func newMmsgConn(uc *net.UDPConn, addr string, cfg Config) (*mmsgConn, error) {
	var err error
	c := &mmsgConn{pc: uc, batch: cfg.BatchSize, maxDgram: cfg.MaxDatagram, busyPoll: cfg.BusyPoll}
	c.local = uc.LocalAddr().(*net.UDPAddr).AddrPort()
	if c.rc, err = uc.SyscallConn(); err == nil {
		err = c.setup(cfg)
	}
	if err != nil {
		uc.Close()
		return nil, fmt.Errorf("listen udp %s: %w", addr, err)
	}
	c.r.init(c)
	c.w.init(c)
	return c, nil
}

// setup reads the socket family, sizes the socket buffers and probes the
// offloads: GSO exists if the kernel knows the UDP_SEGMENT option (4.18+),
// GRO if it accepts UDP_GRO (5.0+).
func (c *mmsgConn) setup(cfg Config) error {
	var domain int
	var derr, merr error
	err := c.rc.Control(func(fd uintptr) {
		s := int(fd)
		domain, derr = unix.GetsockoptInt(s, unix.SOL_SOCKET, unix.SO_DOMAIN)
		if cfg.SocketBuffer > 0 {
			setBuffer(s, unix.SO_RCVBUFFORCE, unix.SO_RCVBUF, cfg.SocketBuffer)
			setBuffer(s, unix.SO_SNDBUFFORCE, unix.SO_SNDBUF, cfg.SocketBuffer)
		}
		if cfg.MulticastInterface.IsValid() {
			if merr = setMulticastInterface(s, cfg.MulticastInterface); merr != nil {
				return
			}
		}
		if cfg.DisableOffload {
			return
		}
		if _, err := unix.GetsockoptInt(s, unix.IPPROTO_UDP, unix.UDP_SEGMENT); err == nil {
			c.gso.Store(true)
		}
		c.gro = unix.SetsockoptInt(s, unix.IPPROTO_UDP, unix.UDP_GRO, 1) == nil
	})
	if err == nil && derr != nil {
		err = os.NewSyscallError("getsockopt SO_DOMAIN", derr)
	}
	if err == nil {
		err = merr
	}
	c.v6 = domain == unix.AF_INET6
	return err
}

// setBuffer asks for size bytes with the privileged option, which ignores
// the sysctl cap, and falls back to the capped one. The kernel's answer is
// best effort either way, so errors are not reported.
func setBuffer(fd, force, plain, size int) {
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, force, size) != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, plain, size)
	}
}

func (c *mmsgConn) LocalAddr() netip.AddrPort { return c.local }
func (c *mmsgConn) BatchSize() int            { return c.batch }
func (c *mmsgConn) Close() error              { return c.pc.Close() }

// Truncated counts the datagrams dropped for not fitting the buffers.
func (c *mmsgConn) Truncated() uint64 { return c.trunc.Load() }

func (c *mmsgConn) Offload() Offload {
	return Offload{GSO: c.gso.Load(), GRO: c.gro}
}

// ---- receive ----

func (r *recvState) init(c *mmsgConn) {
	r.trunc = &c.trunc
	n := c.batch
	if c.gro {
		n = min(n, groMaxMsgs)
	}
	r.hs = make([]unix.Mmsghdr, n)
	r.iovs = make([]unix.Iovec, n)
	r.names = make([]sockaddr, n)
	r.segs = make([]int, n)
	r.addrs = make([]netip.AddrPort, n)
	for i := range r.hs {
		h := &r.hs[i].Hdr
		h.Name = &r.names[i][0]
		h.Iov = &r.iovs[i]
		h.SetIovlen(1)
	}
	if c.gro {
		r.oob = make([]byte, n*oobLen)
		for i := range r.hs {
			r.hs[i].Hdr.Control = &r.oob[i*oobLen]
		}
	}
	r.fn = r.recvmmsg
	r.poll = func(fd uintptr) bool {
		r.polled = r.recvmmsg(fd)
		return true
	}
}

// recvmmsg runs under RawConn.Read; returning false waits for readability.
func (r *recvState) recvmmsg(fd uintptr) bool {
	var ok bool
	r.got, r.errno, ok = mmsg(unix.SYS_RECVMMSG, fd, unsafe.Pointer(&r.hs[0]), r.want)
	if r.got > 0 {
		raceAcquireIO()
	}
	return ok
}

// mmsg makes one recvmmsg or sendmmsg (trap) of n headers at hs on fd,
// again after EINTR. It reports how many were moved and the errno (0 for
// none); ok is false when the socket would block (EAGAIN), for RawConn to
// wait.
//
// It is a raw syscall, without the runtime's entersyscall: the socket is
// non-blocking (RawConn waits on the poller), so the call never sleeps
// and lasts only as long as the kernel's copies. A batch of 64 datagrams
// takes longer than sysmon's 20 µs tick, and through syscall.Syscall the
// runtime took the P from every such call, handed it to another thread
// and parked a thread when the call returned: in the daemon at
// GOMAXPROCS=1 (P = 8, 1 MiB, 8 KiB packets) sysmon, the hand-off and
// the futex wake-ups were 15–18% of its CPU (perf), and sysmon, kept
// busy, never backed off its 20 µs tick. docs/PERFORMANCE.md.
func mmsg(trap, fd uintptr, hs unsafe.Pointer, n int) (done int, errno unix.Errno, ok bool) {
	for {
		k, _, e := unix.RawSyscall6(trap, fd, uintptr(hs), uintptr(n), 0, 0, 0)
		switch e {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return 0, e, false
		case 0:
			return int(k), 0, true
		}
		return 0, e, true
	}
}

// recv waits for and receives up to want messages into r.hs.
func (c *mmsgConn) recv(want int) (int, error) {
	r := &c.r
	for i := range want {
		h := &r.hs[i]
		h.Len = 0
		h.Hdr.Namelen = unix.SizeofSockaddrInet6
		h.Hdr.Flags = 0
		if r.oob != nil {
			h.Hdr.SetControllen(oobLen)
		}
	}
	r.want = want
	polled, err := c.busyRecv()
	if err == nil && !polled {
		err = c.rc.Read(r.fn)
	}
	if err != nil {
		return 0, err // closed: wraps net.ErrClosed
	}
	if r.errno != 0 {
		return 0, &net.OpError{Op: "read", Net: "udp", Addr: net.UDPAddrFromAddrPort(c.local), Err: os.NewSyscallError("recvmmsg", r.errno)}
	}
	return r.got, nil
}

// busyRecv polls the socket for up to BusyPoll before recv waits on the
// runtime's poller, giving the CPU up between polls: first to the
// process's other goroutines (runtime.Gosched), then to other processes
// (sched_yield). A CPU that would otherwise sleep stays awake to take the
// next datagram at once, where waking a sleeping one costs 20-100 µs on a
// virtual machine (docs/PERFORMANCE.md). It reports whether a poll
// received, leaving r.got and r.errno (false at once without BusyPoll);
// the error is the socket's, closed.
func (c *mmsgConn) busyRecv() (bool, error) {
	r := &c.r
	var start time.Time
	for c.busyPoll > 0 {
		if err := c.rc.Read(r.poll); err != nil || r.polled {
			return r.polled, err
		}
		if start.IsZero() {
			start = time.Now()
		} else if time.Since(start) >= c.busyPoll {
			return false, nil
		}
		runtime.Gosched()
		unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	}
	return false, nil
}

func (c *mmsgConn) ReadBatch(msgs []Datagram) (int, error) {
	if len(msgs) == 0 {
		return 0, nil
	}
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.gro {
		return c.readGRO(msgs)
	}
	return c.readDirect(msgs)
}

// readDirect receives into the caller's buffers: no copy.
func (c *mmsgConn) readDirect(msgs []Datagram) (int, error) {
	r := &c.r
	want := min(len(msgs), c.batch)
	for {
		for i := range want {
			setIov(&r.iovs[i], msgs[i].Buf[:cap(msgs[i].Buf)])
		}
		got, err := c.recv(want)
		if err != nil {
			return 0, err
		}
		// Drop datagrams cut short by a small buffer, closing the gaps
		// by copying the later ones down (a rare path).
		out := 0
		for j := range got {
			h := &r.hs[j]
			n := int(h.Len)
			if h.Hdr.Flags&unix.MSG_TRUNC != 0 {
				c.trunc.Add(1)
				continue
			}
			if out != j {
				if n > cap(msgs[out].Buf) {
					continue // only with buffers of unequal capacity
				}
				copy(msgs[out].Buf[:n], msgs[j].Buf[:n])
			}
			msgs[out].N = n
			msgs[out].Addr = r.source(j)
			out++
		}
		if out > 0 {
			return out, nil
		}
	}
}

// readGRO receives into conn-owned buffers, where a message may hold a run
// of datagrams of the size the UDP_GRO cmsg gives (the last may be
// shorter), and copies each datagram into its own caller buffer. Datagrams
// that do not fit in msgs wait for the next call.
func (c *mmsgConn) readGRO(msgs []Datagram) (int, error) {
	r := &c.r
	if r.bufs == nil {
		r.bufs = make([]byte, len(r.hs)*groBufSize)
	}
	for {
		if r.next == r.count {
			if err := c.recvGRO(r.bufs, min(len(msgs), len(r.hs))); err != nil {
				return 0, err
			}
		}
		if n := r.split(r.bufs, msgs, false); n > 0 {
			return n, nil
		}
	}
}

var _ RegionReader = (*mmsgConn)(nil)

// ReadInto is RegionReader's: under GRO, ReadBatch receives a coalesced
// message into the conn's memory and copies each datagram out of it into
// the caller's buffers; ReadInto receives into region and copies nothing.
func (c *mmsgConn) ReadInto(region []byte, msgs []Datagram) (int, error) {
	if len(msgs) == 0 {
		return 0, nil
	}
	c.rmu.Lock()
	defer c.rmu.Unlock()
	r := &c.r
	want := min(len(region)/groBufSize, len(msgs)/MaxGROSegments, len(r.hs))
	switch {
	case r.next < r.count: // left by ReadBatch, in the conn's memory
		return r.split(r.bufs, msgs, true), nil
	case want == 0 && !c.gro:
		return c.readDirect(msgs)
	case want == 0:
		return c.readGRO(msgs)
	}
	for {
		if err := c.recvGRO(region, want); err != nil {
			return 0, err
		}
		// want messages of at most MaxGROSegments datagrams each fit msgs:
		// nothing is left in region for a later call.
		if n := r.split(region, msgs, true); n > 0 {
			return n, nil
		}
	}
}

// recvGRO waits for and receives up to want messages into base, a
// groBufSize buffer each, and notes their datagram sizes and sources for
// split.
func (c *mmsgConn) recvGRO(base []byte, want int) error {
	r := &c.r
	for i := range want {
		r.iovs[i].Base = &base[i*groBufSize]
		r.iovs[i].SetLen(groBufSize)
	}
	got, err := c.recv(want)
	if err != nil {
		return err
	}
	for j := range got {
		h := &r.hs[j]
		r.segs[j] = int(h.Len) // without GRO, one datagram a message
		if r.oob != nil {
			if seg := groSegment(r.oob[j*oobLen:][:h.Hdr.Controllen]); seg > 0 {
				r.segs[j] = seg
			}
		}
		if h.Hdr.Flags&unix.MSG_TRUNC != 0 {
			c.trunc.Add(1)
			h.Len = 0 // cannot happen with 64 KiB buffers; drop if it does
			r.segs[j] = -1
		}
		r.addrs[j] = r.source(j)
	}
	r.count, r.next, r.off = got, 0, 0
	return nil
}

// split hands out pending datagrams of the messages received into base
// into msgs and returns how many: copied into the caller's buffers, or,
// lending, as slices of base.
func (r *recvState) split(base []byte, msgs []Datagram, lend bool) int {
	out := 0
	for out < len(msgs) && r.next < r.count {
		j := r.next
		total, seg := int(r.hs[j].Len), r.segs[j]
		if seg == 0 { // an empty datagram
			msgs[out].N, msgs[out].Addr = 0, r.addrs[j]
			if lend {
				msgs[out].Buf = base[j*groBufSize : j*groBufSize : j*groBufSize]
			}
			out++
		}
		for ; seg > 0 && r.off < total && out < len(msgs); r.off += seg {
			d := base[j*groBufSize+r.off : j*groBufSize+min(r.off+seg, total)]
			if lend {
				msgs[out].Buf, msgs[out].N = d[:len(d):len(d)], len(d)
				msgs[out].Addr = r.addrs[j]
				out++
				continue
			}
			if len(d) > cap(msgs[out].Buf) {
				r.trunc.Add(1)
				continue // does not fit the caller's buffer: dropped
			}
			msgs[out].N = copy(msgs[out].Buf[:len(d)], d)
			msgs[out].Addr = r.addrs[j]
			out++
		}
		if seg <= 0 || r.off >= total {
			r.next, r.off = j+1, 0
		}
	}
	return out
}

// groSegment returns the datagram size from a UDP_GRO control message in
// oob, or 0 if there is none (the message is a single datagram).
func groSegment(oob []byte) int {
	for len(oob) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		n := int(h.Len)
		if n < unix.SizeofCmsghdr || n > len(oob) {
			return 0
		}
		if h.Level == unix.SOL_UDP && h.Type == unix.UDP_GRO && n >= unix.CmsgLen(4) {
			return int(int32(binary.NativeEndian.Uint32(oob[unix.CmsgLen(0):])))
		}
		next := unix.CmsgSpace(n - unix.CmsgLen(0))
		if next > len(oob) {
			return 0
		}
		oob = oob[next:]
	}
	return 0
}

// ---- send ----

func (w *sendState) init(c *mmsgConn) {
	n := c.batch
	w.hs = make([]unix.Mmsghdr, n)
	w.iovs = make([]unix.Iovec, 2*n)
	w.names = make([]sockaddr, n)
	w.oob = make([]byte, n*oobLen)
	w.ends = make([]int, n)
	w.offs = make([]int, n)
	for i := range w.hs {
		w.hs[i].Hdr.Name = &w.names[i][0]
	}
	w.fn = w.sendmmsg
}

// sendmmsg runs under RawConn.Write; returning false waits for room in the
// socket buffer.
func (w *sendState) sendmmsg(fd uintptr) bool {
	var ok bool
	raceReleaseIO()
	w.sent, w.errno, ok = mmsg(unix.SYS_SENDMMSG, fd, unsafe.Pointer(&w.hs[w.start]), w.stop-w.start)
	return ok
}

func (c *mmsgConn) WriteBatch(msgs []Datagram) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	sent, off := 0, 0 // entries sent, and bytes of msgs[sent] sent (a run's)
	for sent < len(msgs) {
		nmsg, bad := c.pack(msgs[sent:], off)
		n, err := c.flush(nmsg)
		sent += n
		off = c.w.resume(off)
		if err == errGSORefused {
			continue // pack the rest again, without GSO
		}
		if err != nil {
			return sent, err
		}
		if bad != nil {
			return sent, bad
		}
	}
	return sent, nil
}

// pack builds sendmmsg headers for up to BatchSize messages from the front
// of msgs, the first from byte off of msgs[0] (a run's, part sent), and
// returns their number. With GSO, a run of datagrams to one address of one
// size (the last may be shorter) becomes one message whose iovecs gather
// the caller's buffers; the messages of one call gather from at most
// 2×BatchSize iovecs, so a run laid out back to back in memory (one
// iovec) lets a call carry up to 64 times as many datagrams as runs in
// pieces. An entry that is a run (Datagram.Seg) goes as such messages of
// its own. It stops before a datagram that cannot be sent and returns why.
func (c *mmsgConn) pack(msgs []Datagram, off int) (nmsg int, bad error) {
	w := &c.w
	gso := c.gso.Load()
	v := 0 // the next free iovec
	for i := 0; i < len(msgs) && nmsg < c.batch && w.fits(v, &msgs[i]); {
		d := &msgs[i]
		if err := checkSend(d, c.maxDgram); err != nil {
			return nmsg, err
		}
		nameLen, err := c.putSockaddr(&w.names[nmsg], d.Addr)
		if err != nil {
			return nmsg, err
		}
		if d.Seg > 0 {
			nmsg, v, off = w.packRun(d, off, nmsg, c.batch, v, nameLen, gso)
			if off == 0 {
				i++
			}
			continue
		}
		first, size := v, d.Size()
		v = w.gather(first, v, d)
		segs, total := 1, size
		for gso && size > 0 && i+segs < len(msgs) && segs < gsoMaxSegments && w.fits(v, &msgs[i+segs]) {
			e := &msgs[i+segs]
			es := e.Size()
			if e.Seg > 0 || e.Addr != d.Addr || es <= 0 || es > size || total+es > gsoMaxBytes || checkSend(e, c.maxDgram) != nil {
				break
			}
			v = w.gather(first, v, e)
			total += es
			segs++
			if es < size {
				break // a shorter datagram ends the run
			}
		}
		w.message(nmsg, nameLen, first, v, segs, size)
		w.ends[nmsg], w.offs[nmsg] = segs, 0
		nmsg++
		i += segs
	}
	return nmsg, nil
}

// packRun packs the run d from byte off on into messages from nmsg on, up
// to batch of them, each with one iovec from v on and to the address
// already in w.names[nmsg] (nameLen bytes): with GSO as few segmented
// sends as the kernel's limits allow, without one datagram each. It
// returns the next free message and iovec, and where in d the next
// message would start: 0 once all of d is packed.
func (w *sendState) packRun(d *Datagram, off, nmsg, batch, v, nameLen int, gso bool) (int, int, int) {
	per := 1
	if gso {
		per = gsoRun(d.Seg)
	}
	for k := nmsg; off < d.N && nmsg < batch && v < len(w.iovs); nmsg, v = nmsg+1, v+1 {
		if nmsg > k {
			w.names[nmsg] = w.names[k]
		}
		end := min(off+per*d.Seg, d.N)
		setIov(&w.iovs[v], d.Buf[off:end])
		w.message(nmsg, nameLen, v, v+1, (end-off+d.Seg-1)/d.Seg, d.Seg)
		if off = end; off == d.N {
			off = 0
		}
		w.ends[nmsg], w.offs[nmsg] = 0, off
		if off == 0 {
			w.ends[nmsg] = 1 // the run's last message
			return nmsg + 1, v + 1, 0
		}
	}
	return nmsg, v, off
}

// message fills header k: to the address in w.names[k] (nameLen bytes),
// gathering iovecs [first, v), segs datagrams of size bytes (a UDP_SEGMENT
// send when more than one).
func (w *sendState) message(k, nameLen, first, v, segs, size int) {
	h := &w.hs[k]
	h.Len = 0
	h.Hdr.Namelen = uint32(nameLen)
	h.Hdr.Iov = &w.iovs[first]
	h.Hdr.SetIovlen(v - first)
	if segs > 1 {
		oob := w.oob[k*oobLen:][:unix.CmsgSpace(2)]
		putSegmentCmsg(oob, size)
		h.Hdr.Control = &oob[0]
		h.Hdr.SetControllen(len(oob))
	} else {
		h.Hdr.Control = nil
		h.Hdr.SetControllen(0)
	}
}

// resume is where in the first entry not wholly sent the next pack
// starts: the byte after the last message sent, when that message cut a
// run, else 0; off is where the last pack started, for when nothing was
// sent.
func (w *sendState) resume(off int) int {
	if w.start == 0 {
		return off
	}
	return w.offs[w.start-1]
}

// gather points iovecs from v on at d's bytes, Buf[:N] and then Tail if
// there is one, and returns the next free iovec. Bytes that continue the
// message's last iovec (which began at first) in memory extend it
// instead: a run laid out back to back crosses into the kernel as one
// span, which it copies faster than the same bytes in pieces.
func (w *sendState) gather(first, v int, d *Datagram) int {
	v = w.add(first, v, d.Buf[:d.N])
	if len(d.Tail) > 0 {
		v = w.add(first, v, d.Tail)
	}
	return v
}

// fits says whether d's iovecs fit from v on, were it to need one for
// each of Buf and Tail.
func (w *sendState) fits(v int, d *Datagram) bool {
	if len(d.Tail) > 0 {
		v++
	}
	return v < len(w.iovs)
}

// add appends b to the message whose iovecs begin at first and end
// before v, and returns the next free iovec.
func (w *sendState) add(first, v int, b []byte) int {
	if v > first && len(b) > 0 {
		last := &w.iovs[v-1]
		if last.Base != nil && uintptr(unsafe.Pointer(last.Base))+uintptr(last.Len) == uintptr(unsafe.Pointer(unsafe.SliceData(b))) {
			last.SetLen(int(last.Len) + len(b))
			return v
		}
	}
	setIov(&w.iovs[v], b)
	return v + 1
}

// errGSORefused tells WriteBatch the kernel refused a segmented send and
// GSO is now off, so the rest must be packed again.
var errGSORefused = errors.New("udp gso refused")

// flush sends the packed messages [0, nmsg), resuming after partial sends,
// and returns the number of entries of msgs they completed.
func (c *mmsgConn) flush(nmsg int) (int, error) {
	w := &c.w
	sent := 0
	for w.start, w.stop = 0, nmsg; w.start < w.stop; {
		if err := c.rc.Write(w.fn); err != nil {
			return sent, err // closed: wraps net.ErrClosed
		}
		for _, s := range w.ends[w.start : w.start+w.sent] {
			sent += s
		}
		w.start += w.sent
		if w.errno == 0 {
			continue
		}
		// EIO: the device cannot checksum segments; EINVAL: the kernel
		// refuses this segmentation (segment over the path MTU, or
		// checksums off). Either way plain sends still work.
		if w.hs[w.start].Hdr.Controllen > 0 && (w.errno == unix.EIO || w.errno == unix.EINVAL) {
			c.gso.Store(false)
			return sent, errGSORefused
		}
		return sent, &net.OpError{Op: "write", Net: "udp", Source: net.UDPAddrFromAddrPort(c.local), Err: os.NewSyscallError("sendmmsg", w.errno)}
	}
	return sent, nil
}

// putSegmentCmsg writes a UDP_SEGMENT control message giving the segment
// size into oob, which is CmsgSpace(2) bytes.
func putSegmentCmsg(oob []byte, size int) {
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
	h.Level = unix.SOL_UDP
	h.Type = unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	binary.NativeEndian.PutUint16(oob[unix.CmsgLen(0):], uint16(size))
}

// ---- addresses ----

// putSockaddr writes ap into sa in the socket's family and returns its
// length. An IPv4 address goes to an IPv6 socket as ::ffff:a.b.c.d.
func (c *mmsgConn) putSockaddr(sa *sockaddr, ap netip.AddrPort) (int, error) {
	a := ap.Addr()
	if !c.v6 {
		a = a.Unmap()
		if !a.Is4() {
			return 0, fmt.Errorf("%w: %v on an IPv4 socket", ErrBadAddr, ap)
		}
		binary.NativeEndian.PutUint16(sa[0:], unix.AF_INET)
		binary.BigEndian.PutUint16(sa[2:], ap.Port())
		*(*[4]byte)(sa[4:]) = a.As4()
		clear(sa[8:unix.SizeofSockaddrInet4])
		return unix.SizeofSockaddrInet4, nil
	}
	var scope uint32
	if z := a.Zone(); z != "" {
		var err error
		if scope, err = zoneIndex(z); err != nil {
			return 0, fmt.Errorf("%w: %v: %v", ErrBadAddr, ap, err)
		}
	}
	binary.NativeEndian.PutUint16(sa[0:], unix.AF_INET6)
	binary.BigEndian.PutUint16(sa[2:], ap.Port())
	clear(sa[4:8]) // flow info
	*(*[16]byte)(sa[8:]) = a.As16()
	binary.NativeEndian.PutUint32(sa[24:], scope)
	return unix.SizeofSockaddrInet6, nil
}

// source returns the sender of received message j.
func (r *recvState) source(j int) netip.AddrPort {
	sa := &r.names[j]
	return parseSockaddr(sa[:min(int(r.hs[j].Hdr.Namelen), len(sa))])
}

// parseSockaddr reads a source address written by the kernel. IPv4 peers
// of a dual-stack socket come back unmapped, so a peer has one identity
// whichever socket it reached.
func parseSockaddr(b []byte) netip.AddrPort {
	if len(b) < 4 {
		return netip.AddrPort{}
	}
	port := binary.BigEndian.Uint16(b[2:])
	switch binary.NativeEndian.Uint16(b) {
	case unix.AF_INET:
		if len(b) >= unix.SizeofSockaddrInet4 {
			return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), port)
		}
	case unix.AF_INET6:
		if len(b) >= unix.SizeofSockaddrInet6 {
			a := netip.AddrFrom16([16]byte(b[8:24])).Unmap()
			if scope := binary.NativeEndian.Uint32(b[24:]); scope != 0 && a.Is6() {
				a = a.WithZone(strconv.FormatUint(uint64(scope), 10)) // link-local only: rare
			}
			return netip.AddrPortFrom(a, port)
		}
	}
	return netip.AddrPort{}
}

// zoneIndex turns an IPv6 zone (an interface name or number) into a scope id.
func zoneIndex(zone string) (uint32, error) {
	if n, err := strconv.ParseUint(zone, 10, 32); err == nil {
		return uint32(n), nil
	}
	ifi, err := net.InterfaceByName(zone)
	if err != nil {
		return 0, err
	}
	return uint32(ifi.Index), nil
}

// setIov points iov at b (or at nothing for an empty b).
func setIov(iov *unix.Iovec, b []byte) {
	if cap(b) == 0 {
		iov.Base = nil
		iov.SetLen(0)
		return
	}
	iov.Base = unsafe.SliceData(b)
	iov.SetLen(len(b))
}
