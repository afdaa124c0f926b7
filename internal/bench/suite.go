package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/internal/inproc"
	"github.com/flare-net/flare/internal/units"
	"github.com/flare-net/flare/proto"
	"github.com/flare-net/flare/wire"
)

// The paths `flare bench` measures.
const (
	PathSwitch    = "switch"    // the switch daemon
	PathMulticast = "switch-mc" // the switch daemon, its results sent once to the job's multicast group
	PathRing      = "ring"      // the host ring baseline over TCP
	PathRelay     = "relay"     // the UDP echo relay: the kernel's ceiling
	PathFanout    = "fanout"    // the fan-out relay: the switch's pattern's ceiling
	PathFanoutMC  = "fanout-mc" // the fan-out relay, its packets sent once to a multicast group: switch-mc's ceiling
)

// BenchGroups and relayGroups are the multicast group pools of the switch
// `flare bench` embeds (for PathMulticast) and of its fan-out relay (for
// PathFanoutMC): administratively scoped blocks (RFC 2365).
var (
	BenchGroups = netip.MustParsePrefix("239.255.70.0/24")
	relayGroups = netip.MustParsePrefix("239.255.71.0/24")
)

// ThroughSwitch says whether path p runs through the switch (switch, switch-mc).
func ThroughSwitch(p string) bool { return p == PathSwitch || p == PathMulticast }

// isRelay says whether path p is one of the relays (ceilings, never sums).
func isRelay(p string) bool { return p == PathRelay || p == PathFanout || p == PathFanoutMC }

// MaxRounds is the most Suite.Rounds.
const MaxRounds = 100

// Suite is one `flare bench` run: every path at every P and size in one
// run, with the ratios of each row against the others of its P and size;
// with Sparse, the sparse comparison (SparseRow); with Tree, the tree of
// switches (TreeRow).
type Suite struct {
	// Switch is a running switch daemon's data address; "" runs one in
	// this process (as the relays always are).
	Switch string
	Ranks  []int   // world sizes P
	Sizes  []int64 // bytes per rank
	Paths  []string
	DType  wire.DType
	Op     wire.Op
	// Algo is the switch's design: auto, single, multiB or tree.
	Algo   string
	Iters  int
	Warmup int
	// Rounds measures every leg of a (P, size) group this many times in
	// turn (each time Iters calls after Warmup), so that every path meets
	// the machine's slow and fast spells alike: on a shared box they last
	// seconds, longer than a row. The dense table only; 0 is 1.
	Rounds  int
	Verify  bool // check every element of the switch and ring results
	Timeout time.Duration
	// Sparse compares sparse in-network (hash, array), dense in-network
	// and the host sparse baseline at every density.
	Sparse    bool
	Densities []float64
	Overlap   float64
	// Tree, when set, runs a root and Tree.Leaves leaf switches in this
	// process instead, Tree.Hosts ranks per leaf (Switch, Ranks, Paths and
	// Procs unused).
	Tree TreeShape
	// Packets are the payload bytes per packet the switch and the relays
	// run at, each a multiple of 8 in 8..8192: every (P, size) group
	// measures them once per size. Empty: the switch's default
	// (swtch.DefaultPacketBytes). The sparse table takes the first.
	Packets []int
	// Peers, when set, are host-based libraries' rows (ReadPeers), printed
	// in the dense table after the rows of their P, size, dtype and op,
	// with every row's time over the faster peer's (Row.OverBestPeer).
	Peers *Peers
	// PeerCmds are host-based libraries' benchmarks the dense table runs
	// itself, each once a round after the rows of every P and size, and
	// prints as it prints Peers' rows (the rounds merged as its own are).
	PeerCmds []PeerCmd
	// Procs runs each rank as a process of its own; nil: every rank in
	// this process.
	Procs *Procs
	JSON  bool // one JSON object per row, instead of a table
	// BusyPoll is how long the sockets of the embedded switch, the relays
	// and the ranks keep polling before they sleep (conn.Config.BusyPoll):
	// with a process per rank, conn.DefaultBusyPoll keeps the box's CPUs
	// from sleeping between a call's datagrams; with the ranks in this
	// process, 0, since a polling goroutine takes its CPU from the ranks'
	// (docs/PERFORMANCE.md). The same for every path, ceilings included.
	BusyPoll time.Duration
	// Profile, when set, is a directory where every dense row measured in
	// this process leaves its CPU profile and execution trace over its
	// measured calls (Config.Profile), named by P, size, path, packet and
	// round (p8-16MiB-switch-1KiB-r1.cpu.pprof and .trace): the embedded
	// switch's or the relay's with a process per rank, and the ranks' too
	// with the ranks in this process. The dense table only.
	Profile string
}

// Validate names the first field out of range, and the range.
func (s Suite) Validate() error {
	if err := s.validateData(); err != nil {
		return err
	}
	for _, p := range s.Paths {
		if !ThroughSwitch(p) && p != PathRing && !isRelay(p) {
			return fmt.Errorf("Suite.Paths %q: want switch, switch-mc, ring, relay, fanout or fanout-mc", p)
		}
	}
	for _, p := range s.Ranks {
		if p < 1 || p > MaxRanks {
			return fmt.Errorf("Suite.Ranks %d: must be in 1..%d", p, MaxRanks)
		}
	}
	if err := s.validatePackets(); err != nil {
		return err
	}
	if err := s.validatePeerCmds(); err != nil {
		return err
	}
	if s.Profile != "" && (s.Sparse || s.Tree != (TreeShape{})) {
		return fmt.Errorf("Suite.Profile with Suite.Sparse or Suite.Tree: profiles are taken of the dense table's rows only")
	}
	if s.Tree != (TreeShape{}) {
		return s.Tree.Validate()
	}
	return nil
}

// validateData checks what every row reduces and how it is measured.
func (s Suite) validateData() error {
	if s.Sparse {
		for _, d := range s.Densities {
			if !(d > 0 && d <= 1) {
				return fmt.Errorf("Suite.Densities %v: each must be in (0, 1]", d)
			}
		}
		if !(s.Overlap >= 0 && s.Overlap <= 1) {
			return fmt.Errorf("Suite.Overlap = %v: must be in [0, 1]", s.Overlap)
		}
	}
	if !s.DType.Valid() {
		return fmt.Errorf("Suite.DType = %v: must be one of %v", s.DType, wire.DTypes)
	}
	if s.Algo == "ring" {
		return fmt.Errorf("Suite.Algo = ring: the ring is measured as its own path; Suite.Algo picks the switch's design")
	}
	if _, _, err := parseAlgo(s.Algo); err != nil {
		return fmt.Errorf("Suite.Algo = %q: want auto, single, multi2, multi4 (multiB, B in 2..%d) or tree", s.Algo, proto.MaxBuffers)
	}
	switch {
	case s.Iters < 1 || s.Warmup < 0:
		return fmt.Errorf("Suite.Iters = %d with Suite.Warmup = %d: want iters >= 1 and warmup >= 0", s.Iters, s.Warmup)
	case s.Timeout <= 0:
		return fmt.Errorf("Suite.Timeout = %v: must be positive", s.Timeout)
	case s.BusyPoll < 0 || s.BusyPoll > conn.MaxBusyPoll:
		return fmt.Errorf("Suite.BusyPoll = %v: must be in 0..%v", s.BusyPoll, conn.MaxBusyPoll)
	case s.Rounds < 0 || s.Rounds > MaxRounds:
		return fmt.Errorf("Suite.Rounds = %d: must be in 1..%d (0: 1)", s.Rounds, MaxRounds)
	case s.Rounds > 1 && (s.Sparse || s.Tree != (TreeShape{})):
		return fmt.Errorf("Suite.Rounds = %d with Suite.Sparse or Suite.Tree: rounds apply to the dense table", s.Rounds)
	}
	for _, n := range s.Sizes {
		if n < int64(s.DType.Size()) || n > MaxCount {
			return fmt.Errorf("Suite.Sizes %s: must be in %d..1GiB", units.FormatSize(n), s.DType.Size())
		}
	}
	return nil
}

// Run measures the suite and writes its rows to w, as a table or JSON
// lines.
func (s Suite) Run(ctx context.Context, w io.Writer) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if s.Tree != (TreeShape{}) {
		return s.runTree(ctx, w)
	}
	if s.Procs != nil {
		defer shareBox(slices.Max(s.Ranks))()
	}
	g := inproc.New(ctx)
	defer g.Close() // the relays' and embedded switch's errors do not change the rows
	env, err := s.start(g)
	if err != nil {
		return err
	}
	if s.Sparse {
		return env.runSparse(ctx, w)
	}
	return env.runDense(ctx, w)
}

// suiteRun is a suite with what it started: the relays and the switch
// of every packet size.
type suiteRun struct {
	Suite
	servers map[int]*servers // by packet size
	job     uint32           // the last job id used
}

// start starts, in g, the relays the paths ask for and, without
// Suite.Switch, the switch, at every packet size. Suite.Switch becomes
// the first size's switch: the one the sparse table measures.
func (s Suite) start(g *inproc.Group) (*suiteRun, error) {
	env := &suiteRun{Suite: s, servers: map[int]*servers{}}
	for _, pk := range s.packets() {
		srv, err := s.startServers(g, pk)
		if err != nil {
			return nil, err
		}
		env.servers[pk] = srv
	}
	env.Switch = env.servers[s.packets()[0]].sw
	return env, nil
}

// config is the Config of one row: p ranks in this process, size bytes
// each, a fresh job and token.
func (s *suiteRun) config(p int, size int64) Config {
	s.job++
	return Config{Switch: s.Switch, Job: s.job, Token: newToken(), Ranks: p, Count: int(size) / s.DType.Size(),
		DType: s.DType, Op: s.Op, Algo: s.Algo, Iters: s.Iters, Warmup: s.Warmup, Verify: s.Verify, Timeout: s.Timeout,
		Overlap: s.Overlap, BusyPoll: s.BusyPoll}
}

// measure measures c, in this process or with one process per rank; with
// a process per rank it also returns this process's CPU over the measured
// calls (cpuSpan), nil otherwise.
func (s *suiteRun) measure(ctx context.Context, c Config) (*Result, *cpuSpan, error) {
	if s.Procs != nil {
		if err := c.Validate(); err != nil {
			return nil, nil, err
		}
		return s.Procs.run(ctx, c)
	}
	res, err := Run(ctx, c)
	return res, nil, err
}

// writeJSON writes one row as a JSON line.
func writeJSON(w io.Writer, row any) error { return json.NewEncoder(w).Encode(row) }

// newTable is a table writer of right-aligned columns.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
}
