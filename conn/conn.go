package conn

import (
	"errors"
	"fmt"
	"iter"
	"net/netip"
	"time"
)

// Datagram is one UDP datagram in a batch. Buf is storage owned by the
// caller: on receive its capacity is the largest datagram that fits (a
// longer one is dropped, never cut short), on send Buf[:N] is what goes out.
// N is the number of bytes used and Addr the peer: the source on receive,
// the destination on send.
//
// Tail, on send only, is sent right after Buf[:N] as part of the same
// datagram: a header in Buf and a payload where it already lies (a host's
// vector) go out without being copied together first. The conn reads it
// only during WriteBatch. Receive neither reads nor sets it.
//
// Seg, on send only, makes the entry a run: when it is above zero,
// Buf[:N] holds datagrams of Seg bytes each back to back, the last
// possibly shorter, all to Addr and with no Tail, as one GSO send carries
// them. The conn sends them as such sends where it has GSO (several where
// one would pass the kernel's limits) and one by one where it has not; a
// caller that has its datagrams laid out so (the switch's results for one
// member) hands them over as one entry instead of one each. Receive
// neither reads nor sets it.
type Datagram struct {
	Buf  []byte
	N    int
	Addr netip.AddrPort
	Tail []byte
	Seg  int
}

// Size is the entry's length on send: Buf[:N] and Tail (a run's datagrams
// together).
func (d *Datagram) Size() int { return d.N + len(d.Tail) }

// Count is how many datagrams the entry sends: one, or a run's.
func (d *Datagram) Count() int {
	if d.Seg <= 0 {
		return 1
	}
	return (d.N + d.Seg - 1) / d.Seg
}

// Segments yields a run's datagrams in order, each a slice of Buf.
func (d *Datagram) Segments() iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		for off := 0; off < d.N; off += d.Seg {
			if !yield(d.Buf[off:min(off+d.Seg, d.N)]) {
				return
			}
		}
	}
}

// Datagrams yields the datagrams the entry sends, each in one piece: a
// run's in order (as Segments), or Buf[:N] and its Tail gathered after
// what *scratch holds where there is a tail. The bytes *scratch held
// before stay as they were, so that a caller may keep what it was
// yielded before; one that does not resets it first.
func (d *Datagram) Datagrams(scratch *[]byte) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		if d.Seg > 0 {
			for seg := range d.Segments() {
				if !yield(seg) {
					return
				}
			}
			return
		}
		b := d.Buf[:d.N]
		if len(d.Tail) > 0 {
			start := len(*scratch)
			*scratch = d.appendWhole(*scratch)
			b = (*scratch)[start:len(*scratch):len(*scratch)]
		}
		yield(b)
	}
}

// Count is how many datagrams msgs send (Datagram.Count).
func Count(msgs []Datagram) int {
	n := 0
	for i := range msgs {
		n += msgs[i].Count()
	}
	return n
}

// appendWhole appends the datagram's bytes, Buf[:N] and then Tail, to
// dst: what the kernel gathers from the two, for the conns that send or
// queue one buffer.
func (d *Datagram) appendWhole(dst []byte) []byte {
	return append(append(dst, d.Buf[:d.N]...), d.Tail...)
}

// Conn is a UDP socket that moves datagrams in batches, so that one system
// call (and, where the kernel offers it, one trip through the stack) carries
// many packets. It is the switch daemon's and the host library's only view
// of the network; MemNetwork provides one without sockets for tests.
//
// One goroutine may read while another writes. Each datagram stays its own
// packet for the caller, whatever the conn coalesces underneath.
type Conn interface {
	// ReadBatch blocks until at least one datagram has arrived, then fills
	// msgs[:n] (at most BatchSize of them) with what is waiting: msgs[i].N
	// and msgs[i].Addr are set and the data is in msgs[i].Buf[:N]. Buf
	// slices are never exchanged between msgs. After Close it returns an
	// error for which errors.Is(err, net.ErrClosed) holds, and a blocked
	// ReadBatch returns promptly with it.
	ReadBatch(msgs []Datagram) (n int, err error)

	// WriteBatch sends msgs[i].Buf[:msgs[i].N] to msgs[i].Addr for every i,
	// in system calls of at most BatchSize messages (a message is one
	// datagram, or with GSO a run of them to one address). It returns how many
	// entries of msgs were sent (a run counts once, sent whole); on error,
	// msgs[:n] went out and msgs[n] is where it stopped (a datagram too
	// large or with a bad address fails with an error wrapping
	// ErrDatagramTooLarge, ErrBadRun or ErrBadAddr before anything after it
	// is sent). A run the error cut short may have sent some of its
	// datagrams: sending it again repeats them, which the protocol's
	// receivers take as they take a retransmission.
	WriteBatch(msgs []Datagram) (n int, err error)

	// LocalAddr is the address the conn is bound to (unspecified for a
	// wildcard listen such as ":0").
	LocalAddr() netip.AddrPort

	// Close closes the socket and unblocks ReadBatch and WriteBatch.
	Close() error

	// BatchSize is the batch size the conn was made with: the most datagrams
	// one ReadBatch returns and the most messages one system call sends.
	BatchSize() int

	// Offload says which kernel offloads are in use, for logs and metrics.
	Offload() Offload
}

// RegionReader is a Conn that can receive into one region of the caller's
// memory and hand the datagrams out as slices of it, sparing the copy
// ReadBatch makes when the kernel coalesces datagrams (GRO): conns from
// ListenUDP on Linux are.
type RegionReader interface {
	// ReadInto is ReadBatch, except that it sets msgs[i].Buf to the memory
	// holding datagram i, with length and capacity msgs[i].N: a part of
	// region, or of the conn's own memory. The datagrams stay there until
	// the caller gives the same region to ReadInto again or calls
	// ReadBatch, so the caller gives a region to one ReadInto at a time
	// and reads its datagrams first. A region of k·MaxGROMessage bytes
	// takes up to k coalesced messages a call, where msgs has room for
	// their 64·k datagrams; without GRO, each message is one datagram.
	// With a region or msgs too small for one message, it receives into
	// the Bufs msgs has, as ReadBatch does.
	ReadInto(region []byte, msgs []Datagram) (n int, err error)
}

// Lender is c as a RegionReader where it lends (it is one, and the kernel
// coalesces for it), or nil: then ReadBatch into the caller's buffers
// copies nothing either.
func Lender(c Conn) RegionReader {
	if rr, ok := c.(RegionReader); ok && c.Offload().GRO {
		return rr
	}
	return nil
}

// NewRegion returns a region for k coalesced messages a receive and the
// datagrams that hold all of theirs, for ReadInto.
func NewRegion(k int) (region []byte, msgs []Datagram) {
	return make([]byte, k*MaxGROMessage), make([]Datagram, k*MaxGROSegments)
}

// Offload reports the UDP segmentation offloads a Conn uses. GSO (UDP_SEGMENT)
// lets one send carry a run of equal-sized datagrams to one peer; GRO
// (UDP_GRO) lets one receive return such a run. Both are Linux-only, probed
// when the socket is opened; GSO switches itself off for good if the kernel
// later refuses a segmented send.
type Offload struct {
	GSO, GRO bool
}

const (
	// gsoMaxSegments is the most datagrams one GSO send carries; the kernel
	// refuses more (UDP_MAX_SEGMENTS, 64 before Linux 6.9).
	gsoMaxSegments = 64
	// gsoMaxBytes bounds the payload of one GSO send: it must fit a single
	// IPv4 datagram's length field.
	gsoMaxBytes = MaxDatagramLimit
)

// gsoRun is the most datagrams of size bytes one GSO send carries: 64,
// and fewer where their bytes would pass MaxDatagramLimit (62 of 1,056
// bytes, 7 of 8,224).
func gsoRun(size int) int {
	if size <= 0 {
		return gsoMaxSegments
	}
	return max(1, min(gsoMaxSegments, gsoMaxBytes/size))
}

// WholeRuns is n rounded down to whole GSO sends of datagrams of size
// bytes on c: a batch of that many such datagrams to one address goes out
// as full sends, where n of them might end in a short one (64 of 1,056
// bytes go as 62 and 2). It is n where c has no GSO, or where n is less
// than one send's worth.
func WholeRuns(c Conn, n, size int) int {
	run := gsoRun(size)
	if !c.Offload().GSO || n < run {
		return n
	}
	return n / run * run
}

// Defaults for Config; a zero field means its default.
const (
	// DefaultBatchSize is the batch a reader or writer moves per system call:
	// enough to amortise the call, small enough to keep latency and the
	// per-conn arrays small.
	DefaultBatchSize = 64

	// DefaultMaxDatagram is the largest datagram a conn sends, and the size
	// callers should give their receive buffers. 9000 bytes (a jumbo frame's
	// worth) fits a Flare data packet (32-byte header + 1 KiB = 1056 bytes)
	// several times over, leaving room for larger blocks in experiments, and
	// crosses loopback unfragmented.
	DefaultMaxDatagram = 9000

	// DefaultSocketBuffer is the SO_RCVBUF/SO_SNDBUF size asked for: 8 MiB
	// absorbs a few milliseconds of bursts at 10+ Gbit/s while the reader is
	// descheduled.
	DefaultSocketBuffer = 8 << 20

	// DefaultBusyPoll is the busy poll of flare's daemon and of a rank in
	// a process of its own (flare switch, flare allreduce --rank): long
	// enough to bridge the gaps between a call's datagrams on a box whose
	// CPUs the switch and the ranks share (docs/PERFORMANCE.md).
	DefaultBusyPoll = 50 * time.Microsecond
)

// Limits checked by Config.Validate.
const (
	// MaxBatchSize is the kernel's limit on messages per sendmmsg/recvmmsg
	// (UIO_MAXIOV).
	MaxBatchSize = 1024

	// MaxDatagramLimit is the largest UDP payload IPv4 can carry
	// (65535 − 20-byte IP header − 8-byte UDP header).
	MaxDatagramLimit = 65507

	// MaxGROMessage is the room one coalesced (GRO) receive takes: 64 KiB,
	// more than the 65,535 bytes it can hold, so that each message starts
	// aligned and so do the datagrams in it, whose payloads the switch's
	// element kernels read in place. RegionReader's regions are counted in
	// it.
	MaxGROMessage = 1 << 16

	// MaxGROSegments is the most datagrams one coalesced receive holds
	// (the kernel's UDP_GRO_CNT_MAX).
	MaxGROSegments = 64

	// MaxBusyPoll bounds Config.BusyPoll: a reader that polls longer than
	// a scheduler's time slice only takes CPU from others.
	MaxBusyPoll = 10 * time.Millisecond
)

// Config configures ListenUDP. The zero value gives the defaults.
type Config struct {
	// BatchSize is the most datagrams one ReadBatch returns and one system
	// call sends; 1..MaxBatchSize, 0 means DefaultBatchSize.
	BatchSize int

	// MaxDatagram is the largest datagram WriteBatch accepts, in bytes;
	// 1..MaxDatagramLimit, 0 means DefaultMaxDatagram. Receive limits come
	// from the capacity of the caller's buffers instead.
	MaxDatagram int

	// DisableOffload turns off UDP GSO and GRO even where the kernel has
	// them (to compare, or to work around a driver).
	DisableOffload bool

	// SocketBuffer is the receive and send buffer size asked of the kernel,
	// in bytes; 0 means DefaultSocketBuffer and a negative value keeps the
	// system default. As root (CAP_NET_ADMIN) the size is forced past
	// net.core.rmem_max/wmem_max; otherwise the kernel caps it there.
	SocketBuffer int

	// MulticastInterface, when valid, is the IPv4 address of the interface
	// the socket sends multicast datagrams out of (IP_MULTICAST_IF), looped
	// back to this box's own listeners too. Linux only; unset, the routing
	// table picks the interface.
	MulticastInterface netip.Addr

	// BusyPoll is how long a read that finds the socket empty keeps
	// polling it, giving the CPU up between polls to any other goroutine
	// or process that wants it, before it sleeps until a datagram comes
	// (as Open MPI's progress loop, or SO_BUSY_POLL for a device queue).
	// A CPU that sleeps between datagrams costs a wake-up for the next
	// one: 20-100 µs on a virtual machine. A reader that datagrams reach
	// more often than this keeps its CPU busy, yielding it to any other
	// work. 0 sleeps at once; 0..MaxBusyPoll. Linux; elsewhere a read
	// sleeps at once.
	BusyPoll time.Duration
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.MaxDatagram == 0 {
		c.MaxDatagram = DefaultMaxDatagram
	}
	if c.SocketBuffer == 0 {
		c.SocketBuffer = DefaultSocketBuffer
	}
	return c
}

// Validate reports the first field out of range, naming it and the allowed
// range. It expects defaults to have been applied.
func (c Config) Validate() error {
	switch {
	case c.BatchSize < 1 || c.BatchSize > MaxBatchSize:
		return fmt.Errorf("batch size = %d: must be in 1..%d", c.BatchSize, MaxBatchSize)
	case c.MaxDatagram < 1 || c.MaxDatagram > MaxDatagramLimit:
		return fmt.Errorf("max datagram = %d bytes: must be in 1..%d", c.MaxDatagram, MaxDatagramLimit)
	case c.BusyPoll < 0 || c.BusyPoll > MaxBusyPoll:
		return fmt.Errorf("busy poll = %v: must be in 0..%v", c.BusyPoll, MaxBusyPoll)
	case c.MulticastInterface.IsValid() && (!c.MulticastInterface.Is4() || c.MulticastInterface.IsUnspecified() || c.MulticastInterface.IsMulticast()):
		return fmt.Errorf("multicast interface = %v: must be an IPv4 unicast address of this host", c.MulticastInterface)
	}
	return nil
}

// ListenUDP opens a UDP socket bound to addr ("127.0.0.1:7470", "[::1]:0",
// ":0" for every address of both families) and returns it as a Conn. Hosts
// listen on ":0" too and WriteBatch to the switch's address.
func ListenUDP(addr string, cfg Config) (Conn, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("listen udp %s: %w", addr, err)
	}
	return listenUDP(addr, cfg)
}

// Errors from WriteBatch about one datagram; the datagrams before it were
// sent.
var (
	// ErrDatagramTooLarge means N exceeds the capacity of Buf (or is
	// negative), or N and the Tail together exceed the conn's MaxDatagram.
	ErrDatagramTooLarge = errors.New("datagram larger than the conn's MaxDatagram")
	// ErrBadRun means a run (Seg above zero) has a Tail or no bytes.
	ErrBadRun = errors.New("bad datagram run")
	// ErrBadAddr means the destination is not a usable unicast address and
	// port for this socket (zero value, port 0, or IPv6 on an IPv4 socket).
	ErrBadAddr = errors.New("bad destination address")
)

// checkSend reports why d cannot be sent by a conn whose largest datagram is
// max, or nil. It allocates only when it fails.
func checkSend(d *Datagram, max int) error {
	switch {
	case d.N < 0 || d.N > cap(d.Buf) || (d.Seg <= 0 && d.Size() > max):
		return fmt.Errorf("%w: N = %d and a tail of %d (buffer %d bytes, limit %d)", ErrDatagramTooLarge, d.N, len(d.Tail), cap(d.Buf), max)
	case d.Seg > max:
		return fmt.Errorf("%w: a run's datagrams of %d bytes (limit %d)", ErrDatagramTooLarge, d.Seg, max)
	case d.Seg > 0 && (len(d.Tail) > 0 || d.N == 0):
		return fmt.Errorf("%w: a run of %d bytes with a tail of %d: must have bytes and no tail", ErrBadRun, d.N, len(d.Tail))
	case !d.Addr.IsValid() || d.Addr.Port() == 0 || d.Addr.Addr().IsUnspecified():
		return fmt.Errorf("%w: %v", ErrBadAddr, d.Addr)
	}
	return nil
}
