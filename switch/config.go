package swtch

import (
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"runtime"
	"time"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/handlers"
	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/proto"
	"github.com/flare-net/flare/wire"
)

// Defaults of the daemon.
const (
	DefaultListen      = "127.0.0.1:7470"
	DefaultAdmin       = "127.0.0.1:9470"
	DefaultPacketBytes = 1024 // payload per packet, as in the paper
	DefaultMaxJobs     = 64
	DefaultJobIdle     = 60 * time.Second
	DefaultWindow      = 64 // blocks in flight per host, the least the default sizing grants (Switch.windowTarget)
	DefaultJoinRate    = 1000
	DefaultPcapMax     = 1 << 30
	// DefaultMaxMemory is the host memory all jobs may hold together
	// (Config.MaxMemory) where the machine does not say less: a quarter of
	// the physical memory (or of the cgroup's limit) caps it, so that the
	// default is safe on a small box. 1 GiB admits a float32 job of about
	// 124 Mi elements (two generations of stored results, 8 bytes an
	// element, and its block table), or many jobs of usual sizes.
	DefaultMaxMemory = 1 << 30
	// DefaultMaxPending is the most pending (half-joined) jobs at once,
	// DefaultMaxPendingPerSource the most one source address creates, and
	// DefaultJoinTimeout how long a pending job waits for its ranks (the
	// hosts' own join timeout, hostlib.DefaultJoinTimeout).
	DefaultMaxPending          = 32
	DefaultMaxPendingPerSource = 8
	DefaultJoinTimeout         = 10 * time.Second
)

// The default window (Config.Window = 0), a first-order Little's law: the
// blocks a host must have in flight to keep its link busy are its rate in
// blocks a second times a block's round trip, and at a fixed rate in bytes
// that is more blocks the smaller they are (the paper's R = M·(B/P)·L, B in
// packets). So the default aims at DefaultWindowBytes in flight per host,
// and at most DefaultWindowPackets blocks per host summed over the job's
// members (the switch's socket queues and cores hold them), but never fewer
// than DefaultWindow blocks; the switch also holds a job's default window
// to DefaultWindowShare of the unit's L1 (Switch.windowTarget). Measured on 2 cores, P = 8, 1 KiB packets,
// three alternating runs (docs/PERFORMANCE.md): 256 blocks instead of 64
// took a 1 MiB call from 25–27 ms to 22–26 ms with the ranks in one
// process and from 33–36 to 25–32 ms with a process per rank; at P = 16,
// 256 blocks each overran the socket queues (6,522 retransmits a call).
const (
	DefaultWindowBytes   = 256 << 10
	DefaultWindowPackets = 2048
	// DefaultWindowShare: a job's 2W blocks of M buffers at its default
	// window take at most 1/DefaultWindowShare of the L1, so that one job
	// (a tree job's M is P) leaves room for the next; at least
	// DefaultWindow blocks, as before the sizing.
	DefaultWindowShare = 8
)

// windowFor is the target window of a job of world members whose blocks
// hold up to blockBytes of payload: Config.Window where set, otherwise the
// default sizing above. Memory may shrink it further (Switch.reserve).
func (c *Config) windowFor(world, blockBytes int) int {
	if c.Window > 0 {
		return c.Window
	}
	return DefaultWindowFor(world, blockBytes)
}

// DefaultWindowFor is the window a switch with Config.Window = 0 aims to
// grant a job of world members and blocks of blockBytes payload bytes.
func DefaultWindowFor(world, blockBytes int) int {
	w := min(DefaultWindowBytes/max(1, blockBytes), DefaultWindowPackets/max(1, world))
	return min(max(DefaultWindow, w), MaxWindow)
}

// The largest values Validate allows for the daemon's counted limits
// (each at least 1; a zero field takes its default first).
const (
	MaxJobsLimit = 1 << 16              // Config.MaxJobs
	MaxWindow    = 1 << 16              // Config.Window
	MaxJoinRate  = 1_000_000            // Config.JoinRate, per second
	MaxSteerRun  = handlers.MaxSteerRun // Config.SteerRun, blocks
)

// Config is the daemon's configuration. Zero fields take defaults.
type Config struct {
	Listen      string     // UDP data address
	Admin       string     // HTTP admin address (/metrics, /healthz, /debug/pprof/); "off" disables it
	HPU         hpu.Config // processing unit shape; its BufferBytes is set from PacketBytes
	PacketBytes int        // payload bytes per packet (a multiple of 8)
	MaxJobs     int        // jobs admitted or pending at once
	// MaxMemory is the host memory, in bytes, that all jobs together may
	// hold besides their L1 quotas: stored results, block tables, block
	// states, sparse streams, member tables, pending joins. A job whose
	// footprint does not fit is refused at admission. 0: DefaultMaxMemory,
	// capped at a quarter of the machine's memory.
	MaxMemory int64
	// MaxPending bounds the pending jobs (not every rank joined yet), and
	// MaxPendingPerSource those one source address created; beyond either,
	// or with the job table full, the oldest pending job makes room.
	// JoinTimeout ends a pending job whose ranks have not all joined
	// within it of its first join. 0: the defaults (capped at MaxJobs and
	// MaxPending).
	MaxPending          int
	MaxPendingPerSource int
	JoinTimeout         time.Duration
	JobIdle             time.Duration // a job with no packet for this long ends and frees its memory
	Window              int           // target blocks in flight per host (shrunk to fit memory); 0: sized by DefaultWindowFor
	JoinRate            int           // joins accepted per second (a token bucket)
	// Conn is the data port. nil (the usual case) opens a UDP socket on
	// Listen with Socket's settings; tests and benchmarks give a
	// conn.MemNetwork conn instead. The switch owns it: Run closes it.
	Conn conn.Conn
	// Conns, instead of Conn, is a data port of several conns bound to one
	// address (conn.MemNetwork.ListenGroup), one reader and one writer
	// each. The switch owns them.
	Conns []conn.Conn
	// Readers is how many sockets the data port has, each with its own
	// reader and writer goroutine, so that receiving and sending spread
	// over that many CPUs: on Listen they share the address with
	// SO_REUSEPORT and the kernel steers each datagram by its block id
	// (all P packets of a block reach one reader; conn.ListenUDPGroup), and
	// a result leaves on the socket of the reader that took its block's
	// last packet. The job table, the processing unit and the counters are
	// shared. 0: min(GOMAXPROCS, HPU.Clusters) on Listen, len(Conns) with
	// Conns, 1 with Conn. 1 is one socket, one reader, one writer. The
	// relays always use one socket.
	Readers int
	// SteerRun is how many consecutive blocks the data port's sockets on
	// Listen steer to one reader (Conns steer as their group was made,
	// DataPortGroup): block b's packets go to reader (b / SteerRun) mod
	// Readers, a power of two in 1..MaxSteerRun (0 = 1: block mod
	// Readers). Hosts send
	// runs of consecutive blocks as one GSO datagram, which the kernel
	// steers by its first block; one block at a time, the readers then
	// take the runs' first blocks' shares (at 1 KiB, two readers 92% and
	// 8%, four 49/12/28/12%), while runs of 64 blocks spread evenly, with
	// some of a block's packets reaching a second reader where the hosts'
	// runs cross a boundary. docs/PERFORMANCE.md measures both.
	SteerRun int
	// SharedCPUs says the process runs busy goroutines of its own beside
	// the switch (hosts in the same process: flare demo, flare bench
	// --procs=false). Every hand-off from one goroutine to another then
	// waits for a CPU the hosts want too, and wakes a thread the kernel
	// may queue behind the busy one (docs/PERFORMANCE.md), so whoever runs
	// a handler sends what it emits: each reader the results of the cores
	// it ran for its batch, and what else is queued for its writer, before
	// it reads again (sendOwn); a core's goroutine its own run when the
	// socket is free (egress.go). The writer takes the rest. Without it
	// only the writers send, and a reader goes back to its socket at once.
	// Either way the switch's goroutines yield to the goroutines queued on
	// their own P (hpu.Config.LocalYield, which WithDefaults sets): with
	// runtime.Gosched each yield could move a reader to another P, and
	// its working set to another CPU's cache (docs/PERFORMANCE.md).
	SharedCPUs bool
	Socket     conn.Config // socket batch size, offload, buffers and busy poll (when Conn is nil)
	// Multicast, when set, is a pool of IPv4 multicast groups (such as
	// 239.255.70.0/24): a job whose members all join with
	// wire.OptMulticast gets one of them while it runs, and its results
	// go once to the group, port MulticastPort, instead of once to each
	// member (multicast.go). The results leave through the interface of
	// Socket.MulticastInterface, by default Listen's address. Needs the
	// switch's own UDP sockets (Conn and Conns nil). Anyone on the segment
	// can join a group, as anyone on it can read unicast results.
	Multicast netip.Prefix
	// MulticastPort is the groups' port, which the switch holds on its box
	// while it runs (conn.HoldGroupPort) and refuses to start without. 0:
	// Listen's port + 1, or, where Listen's port is 0, a free port the
	// kernel picks.
	MulticastPort int
	PcapPath      string // capture every datagram in and out to this pcap file; "" = off
	PcapMax       int64  // size bound of the capture file in bytes (0 = DefaultPcapMax)
	// Parent, when set (HOST:PORT), makes this switch a child in a tree of
	// switches: once a job's members have joined here, the switch joins the
	// job at Parent as child ChildIndex and sends each finished block up
	// instead of multicasting it; the parent's results come back down.
	Parent     string
	ChildIndex int // this switch's index among its parent's children (0..Children-1 there)
	// Children, when positive, makes this switch an inner switch or the
	// root: every job's members are this many child switches (which join
	// with FlagFromSwitch), and LocalHosts hosts besides.
	Children int
	// LocalHosts, with Children, is how many hosts join this switch
	// directly in every job, next to its child switches: members
	// Children..Children+LocalHosts-1, each host joining with its rank
	// among them and LocalHosts as its world.
	LocalHosts int
	Logger     *slog.Logger
	// Admission is AdmissionOpen ("" too: any host may create a job by
	// joining it) or AdmissionRegistered (only jobs registered over the
	// admin port, POST /v1/jobs).
	Admission string
	// AdminSecretFile holds the admin port's bearer secret: writes and
	// /v1/ need it (without it the port takes none). Required with
	// AdmissionRegistered. Read once, by New.
	AdminSecretFile string
	// SettingName spells a Config field (MaxMemory, Admission) in what
	// the switch tells hosts and admin clients when a limit refuses them,
	// so that the refusal names the setting its operator can change: the
	// daemon gives its flags (--max-memory). nil, or "" for a field: the
	// field as Config.MaxMemory.
	SettingName func(field string) string

	// regions is each reader's receive regions, for tests (0:
	// readerRegions; region.go).
	regions int
}

// setting is how a refusal names Config field field (SettingName).
func (c *Config) setting(field string) string {
	if c.SettingName != nil {
		if n := c.SettingName(field); n != "" {
			return n
		}
	}
	return "Config." + field
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.Admin == "" {
		c.Admin = DefaultAdmin
	}
	if c.PacketBytes == 0 {
		c.PacketBytes = DefaultPacketBytes
	}
	if c.MaxJobs == 0 {
		c.MaxJobs = DefaultMaxJobs
	}
	if c.MaxMemory == 0 {
		c.MaxMemory = defaultMaxMemory(machineMemory())
	}
	if c.MaxPending == 0 {
		c.MaxPending = min(DefaultMaxPending, c.MaxJobs)
	}
	if c.MaxPendingPerSource == 0 {
		c.MaxPendingPerSource = min(DefaultMaxPendingPerSource, c.MaxPending)
	}
	if c.JoinTimeout == 0 {
		c.JoinTimeout = DefaultJoinTimeout
	}
	if c.JobIdle == 0 {
		c.JobIdle = DefaultJobIdle
	}
	if c.JoinRate == 0 {
		c.JoinRate = DefaultJoinRate
	}
	if c.PcapMax == 0 {
		c.PcapMax = DefaultPcapMax
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	c.HPU.BufferBytes = c.PacketBytes
	c.HPU.LocalYield = true
	c.HPU = c.HPU.WithDefaults()
	if c.Readers == 0 {
		switch {
		case len(c.Conns) > 0:
			c.Readers = len(c.Conns)
		case c.Conn != nil:
			c.Readers = 1
		default:
			c.Readers = max(1, min(runtime.GOMAXPROCS(0), c.HPU.Clusters, conn.MaxGroup))
		}
	}
	if c.SteerRun == 0 {
		c.SteerRun = 1
	}
	if c.HPU.Submitters == 0 {
		c.HPU.Submitters = c.Readers // each reader submits its batches
	}
	c.Socket = c.Socket.WithDefaults()
	if c.Multicast.IsValid() {
		if ap, err := netip.ParseAddrPort(c.Listen); err == nil {
			if c.MulticastPort == 0 && ap.Port() != 0 {
				c.MulticastPort = groupPort(ap.Port())
			} // (port 0: a free one, held once the data port is bound, Switch.listen)
			if a := ap.Addr().Unmap(); !c.Socket.MulticastInterface.IsValid() && a.Is4() && !a.IsUnspecified() {
				c.Socket.MulticastInterface = a
			}
		}
	}
	if c.Socket.MaxDatagram < wire.HeaderLen+c.PacketBytes {
		c.Socket.MaxDatagram = wire.HeaderLen + c.PacketBytes
	}
	return c
}

// Validate names the first field out of range, and the range.
func (c Config) Validate() error {
	if _, err := netip.ParseAddrPort(c.Listen); err != nil {
		return fmt.Errorf("Config.Listen = %q: want HOST:PORT with a numeric IP, such as 127.0.0.1:7470", c.Listen)
	}
	if c.Admin != "off" {
		if _, err := netip.ParseAddrPort(c.Admin); err != nil {
			return fmt.Errorf("Config.Admin = %q: want HOST:PORT with a numeric IP, such as 127.0.0.1:9470, or off", c.Admin)
		}
	}
	if err := c.validateLimits(); err != nil {
		return err
	}
	if err := c.validateReaders(); err != nil {
		return err
	}
	if err := c.validateTree(); err != nil {
		return err
	}
	if err := c.validateMulticast(); err != nil {
		return err
	}
	if err := c.HPU.Validate(); err != nil {
		return hpuFieldError(err, c.HPU)
	}
	if err := c.Socket.Validate(); err != nil {
		switch { // (in conn.Config.Validate's order)
		case c.Socket.BatchSize < 1 || c.Socket.BatchSize > conn.MaxBatchSize:
			return fmt.Errorf("Config.Socket.BatchSize: %w", err)
		case c.Socket.MaxDatagram < 1 || c.Socket.MaxDatagram > conn.MaxDatagramLimit:
			return fmt.Errorf("Config.Socket.MaxDatagram: %w", err)
		case c.Socket.BusyPoll < 0 || c.Socket.BusyPoll > conn.MaxBusyPoll:
			return fmt.Errorf("Config.Socket.BusyPoll: %w", err)
		}
		return fmt.Errorf("Config.Socket.MulticastInterface: %w", err)
	}
	return nil
}

// validateLimits checks the packet size and the daemon's limits.
func (c Config) validateLimits() error {
	switch {
	case c.PacketBytes < 8 || c.PacketBytes > 8192 || c.PacketBytes%8 != 0:
		return fmt.Errorf("Config.PacketBytes = %d: must be a multiple of 8 in 8..8192 bytes", c.PacketBytes)
	case c.MaxJobs < 1 || c.MaxJobs > MaxJobsLimit:
		return fmt.Errorf("Config.MaxJobs = %d: must be in 1..%d", c.MaxJobs, MaxJobsLimit)
	case c.MaxMemory < 1<<20 || c.MaxMemory > 1<<40:
		return fmt.Errorf("Config.MaxMemory = %d: must be in 1MiB..1TiB", c.MaxMemory)
	case c.MaxPending < 1 || c.MaxPending > c.MaxJobs:
		return fmt.Errorf("Config.MaxPending = %d: must be in 1..%d (Config.MaxJobs)", c.MaxPending, c.MaxJobs)
	case c.MaxPendingPerSource < 1 || c.MaxPendingPerSource > c.MaxPending:
		return fmt.Errorf("Config.MaxPendingPerSource = %d: must be in 1..%d (Config.MaxPending)", c.MaxPendingPerSource, c.MaxPending)
	case c.JoinTimeout < 100*time.Millisecond || c.JoinTimeout > time.Hour:
		return fmt.Errorf("Config.JoinTimeout = %v: must be in 100ms..1h", c.JoinTimeout)
	case c.JobIdle < time.Second || c.JobIdle > 24*time.Hour:
		return fmt.Errorf("Config.JobIdle = %v: must be in 1s..24h", c.JobIdle)
	case c.Window < 0 || c.Window > MaxWindow:
		return fmt.Errorf("Config.Window = %d: must be in 0..%d (0: sized by the packet size and the members)", c.Window, MaxWindow)
	case c.JoinRate < 1 || c.JoinRate > MaxJoinRate:
		return fmt.Errorf("Config.JoinRate = %d: must be in 1..%d per second", c.JoinRate, MaxJoinRate)
	case c.PcapMax < 1<<10 || c.PcapMax > 1<<40:
		return fmt.Errorf("Config.PcapMax = %d: must be in 1KiB..1TiB", c.PcapMax)
	}
	return nil
}

// validateReaders checks the data port's sockets against its readers.
func (c Config) validateReaders() error {
	switch {
	case c.Conn != nil && len(c.Conns) > 0:
		return fmt.Errorf("Config.Conn and Config.Conns (%d conns) are both set: give one conn, or a group of them", len(c.Conns))
	case c.Readers < 1 || c.Readers > conn.MaxGroup:
		return fmt.Errorf("Config.Readers = %d: must be in 1..%d (0: min(GOMAXPROCS, clusters))", c.Readers, conn.MaxGroup)
	case c.SteerRun < 1 || c.SteerRun > MaxSteerRun || c.SteerRun&(c.SteerRun-1) != 0:
		return fmt.Errorf("Config.SteerRun = %d: must be a power of two in 1..%d blocks (0: 1)", c.SteerRun, MaxSteerRun)
	case c.Conn != nil && c.Readers != 1:
		return fmt.Errorf("Config.Readers = %d with Config.Conn: one conn has one reader; give a group in Config.Conns", c.Readers)
	case len(c.Conns) > 0 && c.Readers != len(c.Conns):
		return fmt.Errorf("Config.Readers = %d with %d Config.Conns: one reader per conn", c.Readers, len(c.Conns))
	}
	for i, cn := range c.Conns {
		if cn == nil {
			return fmt.Errorf("Config.Conns[%d] is nil", i)
		}
	}
	return nil
}

// validateTree checks this switch's place in a tree of switches.
func (c Config) validateTree() error {
	if c.Parent != "" {
		if _, err := netip.ParseAddrPort(c.Parent); err != nil {
			return fmt.Errorf("Config.Parent = %q: want the parent switch's data address HOST:PORT with a numeric IP, such as 10.0.0.1:7470", c.Parent)
		}
	}
	switch {
	case c.ChildIndex < 0 || c.ChildIndex >= proto.MaxChildren:
		return fmt.Errorf("Config.ChildIndex = %d: must be in 0..%d", c.ChildIndex, proto.MaxChildren-1)
	case c.ChildIndex > 0 && c.Parent == "":
		return fmt.Errorf("Config.ChildIndex = %d without Config.Parent: the index is this switch's place at its parent", c.ChildIndex)
	case c.Children < 0 || c.Children > proto.MaxChildren:
		return fmt.Errorf("Config.Children = %d: must be in 0..%d (0: this switch's members are hosts)", c.Children, proto.MaxChildren)
	case c.LocalHosts != 0 && c.Children == 0:
		return fmt.Errorf("Config.LocalHosts = %d without Config.Children: a switch without child switches takes any number of hosts", c.LocalHosts)
	case c.LocalHosts < 0 || c.Children+c.LocalHosts > proto.MaxChildren:
		return fmt.Errorf("Config.LocalHosts = %d: must be in 0..%d (with Config.Children = %d, at most %d members)", c.LocalHosts,
			proto.MaxChildren-c.Children, c.Children, proto.MaxChildren)
	}
	return nil
}

// validateMulticast checks the group pool and where its results leave.
func (c Config) validateMulticast() error {
	if !c.Multicast.IsValid() {
		switch {
		case c.MulticastPort != 0:
			return fmt.Errorf("Config.MulticastPort = %d without Config.Multicast: the port is the groups'", c.MulticastPort)
		case c.Socket.MulticastInterface.IsValid():
			return fmt.Errorf("Config.Socket.MulticastInterface = %v without Config.Multicast: it is where the groups' results leave", c.Socket.MulticastInterface)
		}
		return nil
	}
	p := c.Multicast
	switch ifa := c.Socket.MulticastInterface; {
	case !p.Addr().Is4() || !p.Masked().Addr().IsMulticast() || p.Bits() < 4 || p.Masked().Addr().IsLinkLocalMulticast():
		return fmt.Errorf("Config.Multicast = %v: must be IPv4 multicast groups in 224.0.0.0/4 outside 224.0.0.0/24 (link-local control), such as 239.255.70.0/24", p)
	case c.MulticastPort < 0 || c.MulticastPort > 65535:
		return fmt.Errorf("Config.MulticastPort = %d: must be in 1..65535 (0: Listen's port + 1, or a free one where that is 0)", c.MulticastPort)
	case c.Conn != nil || len(c.Conns) > 0:
		return fmt.Errorf("Config.Multicast = %v with Config.Conn or Config.Conns: multicast results need the switch's own UDP sockets", p)
	case !ifa.IsValid():
		return fmt.Errorf("Config.Multicast = %v with Config.Listen = %q: set Config.Socket.MulticastInterface to the IPv4 address of the interface toward the hosts", p, c.Listen)
	}
	return nil
}

// hpuFieldError names the Config.HPU field the processing unit's error is
// about.
func hpuFieldError(err error, h hpu.Config) error {
	for _, f := range []struct {
		field string
		bad   bool
	}{
		{"Clusters", h.Clusters < 1 || h.Clusters > hpu.MaxClusters},
		{"CoresPerCluster", h.CoresPerCluster < 1 || h.CoresPerCluster > hpu.MaxCoresPerCluster},
		{"QueueDepth", h.QueueDepth < 1 || h.QueueDepth > hpu.MaxQueueDepth},
		{"SubsetS", h.SubsetS < 1 || h.SubsetS > h.CoresPerCluster},
		{"Submitters", h.Submitters < 0 || h.Submitters > hpu.MaxSubmitters},
	} {
		if f.bad {
			return fmt.Errorf("Config.HPU.%s: %w", f.field, err)
		}
	}
	return fmt.Errorf("Config.HPU.L1Bytes: %w", err)
}

// maxChildren re-exports the handler's fan-in bound for join validation.
const maxChildren = proto.MaxChildren

// maxElements bounds a job's vector length: 2^32 elements, or where an int
// is 32 bits wide, few enough that a vector's bytes (8 an element) and its
// rounding up to whole blocks still fit one.
const maxElements = min(1<<32, math.MaxInt>>4)

// defaultMaxMemory is DefaultMaxMemory, capped at a quarter of machine,
// what the machine (or the cgroup the daemon runs in) has (0: unknown),
// and at least the 1 MiB Validate allows.
func defaultMaxMemory(machine int64) int64 {
	m := int64(DefaultMaxMemory)
	if machine > 0 {
		m = max(min(m, machine/4), 1<<20)
	}
	return m
}
