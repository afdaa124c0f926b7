package hostlib

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/wire"
)

// Defaults of Options: a zero field means its default.
const (
	// DefaultJoinTimeout bounds Join: every rank must join within it, since
	// the switch answers only once the whole job has joined.
	DefaultJoinTimeout = 10 * time.Second
	// DefaultTimeout bounds one AllReduce call.
	DefaultTimeout = 30 * time.Second
)

// Limits checked by Join.
const (
	// MaxWorld is the largest job: the join carries the world size, and
	// every packet the sender's rank, in 16 bits.
	MaxWorld = math.MaxUint16
	// MaxBuffers is the largest B a join can ask for (an 8-bit field).
	MaxBuffers = math.MaxUint8
)

// Timing of the protocol's host side.
const (
	joinResend = 100 * time.Millisecond // a join is sent again this often until answered
	rtoInitial = 20 * time.Millisecond  // a block's first retransmission timeout, every call
	rtoMax     = time.Second            // the RTO doubles per retransmission up to this
	// rtoSparse is a sparse block's smallest RTO: retransmitting one costs
	// its whole stream, and the switch does not answer it with the result
	// (it only drops the copies), so an early timeout is all cost.
	rtoSparse   = 100 * time.Millisecond
	leaveCopies = 2 // Leave is best effort: send it this many times
)

// maxDatagram is the largest packet a session sends or receives: the size
// conn recommends for receive buffers, which the switch's own conn does not
// exceed either.
const maxDatagram = conn.DefaultMaxDatagram

// Options describe one rank's membership in a job: which switch, which job,
// and the vector every AllReduce of the session reduces. Every rank of a job
// must give the same Job, Token, World, DType, Op, Elements, Algo, Buffers,
// Reproducible and PacketElems; the switch refuses a join that differs.
type Options struct {
	// Switch is the switch's UDP address, "host:port" ("127.0.0.1:7470");
	// without a port, wire.DefaultPort is used.
	Switch string

	// Job identifies the job on the switch, chosen by the hosts.
	Job uint32
	// Token is the job's secret: every packet carries it, and the switch
	// drops packets of the job with another token.
	Token uint64

	// Rank is this host's rank, 0 <= Rank < World.
	Rank int
	// World is the number of ranks in the job, 1..MaxWorld.
	World int

	// DType is the element type of the vector.
	DType wire.DType
	// Op is the reduction: a built-in operator defined on DType, or a
	// custom code (from wire.OpCustomBase) registered on the switch with
	// elem.RegisterOp.
	Op wire.Op

	// Elements is the vector's length in elements (not bytes), at least 1.
	Elements int

	// Algo is the aggregation design asked for; wire.AlgoAuto (the zero
	// value) lets the switch choose by message size, as the paper does.
	Algo wire.Algo
	// Buffers is B, the aggregation buffers per block of the multi-buffer
	// design, 0..MaxBuffers; 0 lets the switch choose.
	Buffers int
	// Reproducible asks for bit-identical floating-point results whatever
	// the packets' arrival order: the switch then uses the tree design, so
	// Algo must be auto or tree.
	Reproducible bool
	// PacketElems is the number of elements per packet (and per block);
	// 0 lets the switch choose. A packet must fit a datagram of
	// conn.DefaultMaxDatagram bytes, header included.
	PacketElems int

	// Sparse makes the job a sparse allreduce: the session's calls are
	// SparseAllReduce, with (index, value) pairs, instead of AllReduce.
	// Op must be sum, min or max (an index a host does not send is no
	// operand), and Algo auto, single or multi.
	Sparse bool
	// Storage is how the switch keeps a sparse block's partial result:
	// wire.StorageHash (a bounded table; pairs that collide come back to
	// the hosts unaggregated, "spilled") or wire.StorageArray (a slot per
	// index). The zero value means hash for a sparse job. Dense jobs leave
	// it zero.
	Storage wire.Storage
	// BlockElems is a sparse job's index range per block; 0 lets the
	// switch choose (4096). Blocks are fixed ranges, the same for every
	// host, so with indices spread evenly they carry comparable numbers of
	// pairs.
	BlockElems int

	// BlockDeadline, when positive, makes the job bounded-time (tail
	// tolerant, as OptiReduce): the switch releases each block's partial
	// aggregate this long after the block's first packet reached it,
	// without the ranks that had not sent it yet, and Contributors() says
	// how many ranks each block holds. 1 ms..65.535 s, whole milliseconds;
	// dense jobs with the single-buffer design only (Algo auto or single).
	BlockDeadline time.Duration

	// DisableOffload turns off UDP GSO and GRO on the session's socket, so
	// every datagram crosses the kernel on its own (to compare, to work
	// around a driver, or to make per-datagram loss rules exact).
	DisableOffload bool

	// BusyPoll is how long the session's sockets keep polling once they
	// find nothing to read, giving the CPU up between polls, before they
	// sleep until a datagram comes (conn.Config.BusyPoll). With a rank in
	// a process of its own, sharing a few CPUs with the switch and other
	// ranks, conn.DefaultBusyPoll keeps a CPU from sleeping between a
	// call's datagrams, whose wake-up would cost 20-100 µs on a virtual
	// machine. With many sessions in one process they take the CPUs from
	// each other: leave it 0. 0..conn.MaxBusyPoll; this rank's alone, not
	// part of what the ranks must agree on.
	BusyPoll time.Duration

	// Multicast asks the switch to send this job's results once to a
	// multicast group, which every rank listens on, instead of once to
	// each rank: the switch (and the network before the hosts' links)
	// then carries a result once, not World times. The switch grants it
	// when it was started with a group pool (flare switch --multicast) and
	// every rank asks; otherwise the job runs unicast, as without.
	// Retransmitted results stay unicast. IPv4 only; not with Conn. It is
	// this rank's, not part of what the ranks must agree on, but a rank
	// that joins a job running with a group again must ask too.
	Multicast bool

	// Conn is the session's socket. nil (the usual case) opens a UDP
	// socket bound to the loopback when Switch is local, every address
	// otherwise; tests and benchmarks give a conn.MemNetwork conn instead.
	// The session owns it: Close, or a Join that fails, closes it. It is
	// this rank's alone, not part of what the ranks must agree on.
	Conn conn.Conn

	// JoinTimeout bounds Join (DefaultJoinTimeout if zero).
	JoinTimeout time.Duration
	// Timeout bounds each AllReduce call (DefaultTimeout if zero); a
	// deadline on the call's context applies as well.
	Timeout time.Duration
}

// withDefaults returns o with every zero field that has a default set to it.
func (o Options) withDefaults() Options {
	if o.Sparse && o.Storage == wire.StorageDense {
		o.Storage = wire.StorageHash
	}
	if o.JoinTimeout == 0 {
		o.JoinTimeout = DefaultJoinTimeout
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	return o
}

// validate reports the first option out of range, naming the field and what
// is allowed. It expects defaults to have been applied.
func (o *Options) validate() error {
	switch {
	case o.Switch == "":
		return errors.New(`Switch is empty: give the switch's UDP address, e.g. "127.0.0.1:7470"`)
	case o.World < 1 || o.World > MaxWorld:
		return fmt.Errorf("World = %d: must be in 1..%d", o.World, MaxWorld)
	case o.Rank < 0 || o.Rank >= o.World:
		return fmt.Errorf("Rank = %d: must be in 0..%d (World = %d)", o.Rank, o.World-1, o.World)
	case !o.DType.Valid():
		return fmt.Errorf("DType = %v: must be one of %v", o.DType, wire.DTypes)
	case !o.Op.Valid():
		return fmt.Errorf("Op = %v: must be a built-in operator (%v) or a custom code in %d..255",
			o.Op, wire.Ops, wire.OpCustomBase)
	case o.Elements < 1 || o.Elements > math.MaxInt/o.DType.Size():
		return fmt.Errorf("Elements = %d: must be in 1..%d for %v", o.Elements, math.MaxInt/o.DType.Size(), o.DType)
	case !o.Algo.Valid():
		return fmt.Errorf("Algo = %v: must be auto, single, multi or tree", o.Algo)
	case o.Buffers < 0 || o.Buffers > MaxBuffers:
		return fmt.Errorf("Buffers = %d: must be in 0..%d", o.Buffers, MaxBuffers)
	case o.Reproducible && o.Algo != wire.AlgoAuto && o.Algo != wire.AlgoTree:
		return fmt.Errorf("Algo = %v with Reproducible: only the tree design is reproducible; use auto or tree", o.Algo)
	case o.Sparse && o.Op != wire.OpSum && o.Op != wire.OpMin && o.Op != wire.OpMax:
		return fmt.Errorf("Op = %v with Sparse: must be sum, min or max (an index a host does not send is no operand)", o.Op)
	case o.Sparse && (o.Algo == wire.AlgoTree || o.Reproducible):
		return fmt.Errorf("Algo = %v, Reproducible = %v with Sparse: sparse jobs use single or multi buffers", o.Algo, o.Reproducible)
	case o.Sparse && o.Storage != wire.StorageHash && o.Storage != wire.StorageArray && o.Storage != wire.StorageDense:
		return fmt.Errorf("Storage = %v with Sparse: must be hash or array", o.Storage)
	case o.Sparse && o.PacketElems != 0:
		return fmt.Errorf("PacketElems = %d with Sparse: the switch sets pairs per packet; use BlockElems for the block size", o.PacketElems)
	case o.Sparse && (o.BlockElems < 0 || uint64(o.BlockElems) > math.MaxUint32):
		return fmt.Errorf("BlockElems = %d: must be in 0..%d (0 lets the switch choose)", o.BlockElems, uint32(math.MaxUint32))
	case !o.Sparse && (o.Storage != wire.StorageDense || o.BlockElems != 0):
		return fmt.Errorf("Storage = %v, BlockElems = %d: only for sparse jobs (set Sparse)", o.Storage, o.BlockElems)
	case o.BlockDeadline < 0 || o.BlockDeadline > 65535*time.Millisecond || (o.BlockDeadline > 0 && o.BlockDeadline%time.Millisecond != 0) || (o.BlockDeadline > 0 && o.BlockDeadline < time.Millisecond):
		return fmt.Errorf("BlockDeadline = %v: must be 0 (exact) or whole milliseconds in 1ms..1m5.535s", o.BlockDeadline)
	case o.BlockDeadline > 0 && (o.Sparse || o.Reproducible || (o.Algo != wire.AlgoAuto && o.Algo != wire.AlgoSingle)):
		return fmt.Errorf("BlockDeadline with Sparse = %v, Reproducible = %v, Algo = %v: bounded time works with the dense single-buffer design only", o.Sparse, o.Reproducible, o.Algo)
	case o.Multicast && o.Conn != nil:
		return errors.New("Multicast with Conn: multicast results need the session's own UDP sockets (leave Conn nil)")
	case o.BusyPoll < 0 || o.BusyPoll > conn.MaxBusyPoll:
		return fmt.Errorf("BusyPoll = %v: must be in 0..%v", o.BusyPoll, conn.MaxBusyPoll)
	case o.JoinTimeout < 0:
		return fmt.Errorf("JoinTimeout = %v: must not be negative (0 means %v)", o.JoinTimeout, DefaultJoinTimeout)
	case o.Timeout < 0:
		return fmt.Errorf("Timeout = %v: must not be negative (0 means %v)", o.Timeout, DefaultTimeout)
	}
	if maxPE := (maxDatagram - wire.HeaderLen) / o.DType.Size(); o.PacketElems < 0 || o.PacketElems > maxPE {
		return fmt.Errorf("PacketElems = %d: must be in 0..%d for %v (0 lets the switch choose)", o.PacketElems, maxPE, o.DType)
	}
	if o.PacketElems > 0 {
		if n := blockCount(o.Elements, o.PacketElems); uint64(n) > math.MaxUint32 {
			return fmt.Errorf("PacketElems = %d: %d elements would make %d blocks; a job has at most %d (32-bit block ids)",
				o.PacketElems, o.Elements, n, uint32(math.MaxUint32))
		}
	}
	if o.Op.Builtin() {
		// Custom codes are checked by the switch, where they must be
		// registered; a built-in must at least be defined on the dtype.
		if _, err := elem.KernelFor(o.DType, o.Op); err != nil {
			return fmt.Errorf("Op = %v: not defined on %v", o.Op, o.DType)
		}
	}
	return nil
}

// socket is the settings of the session's own sockets.
func (o *Options) socket() conn.Config {
	return conn.Config{DisableOffload: o.DisableOffload, BusyPoll: o.BusyPoll}
}

// blockCount is the number of blocks of pe elements that cover n elements.
func blockCount(n, pe int) int { return (n + pe - 1) / pe }

// resolveSwitch turns Options.Switch into an address, adding the default
// port when there is none. A literal address needs no look-up.
func resolveSwitch(s string) (netip.AddrPort, error) {
	if _, _, err := net.SplitHostPort(s); err != nil {
		s = net.JoinHostPort(s, strconv.Itoa(wire.DefaultPort))
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return unmapAddrPort(ap), nil
	}
	ua, err := net.ResolveUDPAddr("udp", s)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return unmapAddrPort(ua.AddrPort()), nil
}

// unmapAddrPort turns an IPv4-mapped IPv6 address into plain IPv4.
func unmapAddrPort(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// listenAddr is where a host binds to reach sw: the loopback of sw's family
// when sw is local (nothing else can reach the session then), otherwise
// every address (a dual-stack socket, which reaches IPv4 peers too).
func listenAddr(sw netip.AddrPort) string {
	switch a := sw.Addr(); {
	case a.Is4() && a.IsLoopback():
		return "127.0.0.1:0"
	case a.IsLoopback():
		return "[::1]:0"
	}
	return ":0"
}
