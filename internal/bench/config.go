package bench

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/hostlib"
	"github.com/flare-net/flare/proto"
	"github.com/flare-net/flare/wire"
)

// Limits of one measured configuration.
const (
	MaxRanks = 1024    // ranks in one process
	MaxCount = 1 << 30 // elements of a rank's vector
)

// Config is one measured allreduce configuration: where its ranks join,
// what they reduce and how the calls are measured. Run measures it.
type Config struct {
	// Switch is the switch's data address HOST:PORT. In a tree of
	// switches it lists the leaves, HOST:PORT,HOST:PORT,...: the ranks are
	// spread over them in equal contiguous blocks (leaf i holds ranks
	// i*N/L .. (i+1)*N/L-1), each joining its leaf as a local rank;
	// HOST:PORT=K,... gives each leaf K ranks instead.
	Switch string
	Job    uint32
	Token  uint64 // the job's secret; every rank of the job gives the same
	// Ranks is how many ranks run in this process, 0..Ranks-1 of a world
	// of Ranks. 0: this process is rank Rank of World alone.
	Ranks       int
	Rank, World int
	Count       int // elements per rank
	DType       wire.DType
	Op          wire.Op
	// Algo is the switch's design (auto, single, multiB, tree), or ring:
	// the host ring baseline over TCP, which with Ranks 0 connects to
	// Peers (every rank's listen address HOST:PORT, by rank).
	Algo         string
	Peers        []string
	Reproducible bool // bit-reproducible float sums (the tree design)
	Iters        int  // measured calls
	Warmup       int  // unmeasured calls first
	// Verify fills a deterministic pattern and checks every element of
	// every result.
	Verify  bool
	Timeout time.Duration // of one call
	// Sparse reduces (index, value) pairs: Density × Count per rank, a
	// share Overlap of their indices drawn from a set every rank shares,
	// stored in the switch as Storage, BlockElems indices per block (0:
	// the switch's choice).
	Sparse     bool
	Density    float64
	Overlap    float64
	Storage    wire.Storage
	BlockElems int
	NoOffload  bool // no UDP GSO/GRO
	// BusyPoll is how long the ranks' sockets poll before they sleep
	// (hostlib Options.BusyPoll).
	BusyPoll time.Duration
	// Multicast asks the switch for the job's results on a multicast
	// group (hostlib Options.Multicast).
	Multicast bool
	// Deadline is bounded time: the switch releases each block's partial
	// sum this long after its first packet (0: exact).
	Deadline time.Duration
	// TailRatio injects straggling: before each call every rank waits a
	// lognormal delay of median TailMedian and this p99/p50 (0: none),
	// and a call's time is the longest any rank waited from its own
	// delayed start.
	TailMedian time.Duration
	TailRatio  float64
	// Profile, when set, is the path prefix of the row's CPU profile and
	// execution trace (profileFiles), taken in this process over the
	// measured calls (profile.go); a rank process of Procs takes none.
	Profile string
}

// localRanks lists the ranks this process runs, and the world size.
func (c *Config) localRanks() ([]int, int) {
	if c.Ranks > 0 {
		local := make([]int, c.Ranks)
		for r := range local {
			local[r] = r
		}
		return local, c.Ranks
	}
	return []int{c.Rank}, c.World
}

// Validate names the first field out of range, and the range.
func (c Config) Validate() error {
	if err := c.validateRanks(); err != nil {
		return err
	}
	switch {
	case c.Count < 1 || c.Count > MaxCount:
		return fmt.Errorf("Config.Count = %d: must be in 1..%d elements", c.Count, MaxCount)
	case !c.DType.Valid():
		return fmt.Errorf("Config.DType = %v: must be one of %v", c.DType, wire.DTypes)
	case c.Iters < 1 || c.Warmup < 0:
		return fmt.Errorf("Config.Iters = %d with Config.Warmup = %d: want iters >= 1 and warmup >= 0", c.Iters, c.Warmup)
	case c.Timeout <= 0:
		return fmt.Errorf("Config.Timeout = %v: must be positive", c.Timeout)
	case c.Deadline != 0 && (c.Deadline < time.Millisecond || c.Deadline > 65535*time.Millisecond || c.Deadline%time.Millisecond != 0):
		return fmt.Errorf("Config.Deadline = %v: must be whole milliseconds in 1ms..65.535s", c.Deadline)
	case c.Deadline != 0 && (c.Sparse || (c.Algo != "auto" && c.Algo != "single")):
		return fmt.Errorf("Config.Deadline with Config.Algo = %s: bounded time works with the dense single-buffer design (auto or single)", c.Algo)
	case c.TailRatio != 0 && (c.TailRatio < 1 || c.TailRatio > 100 || c.TailMedian <= 0):
		return fmt.Errorf("Config.TailRatio = %v with Config.TailMedian = %v: want a ratio in 1..100 and a positive median", c.TailRatio, c.TailMedian)
	case c.BusyPoll < 0 || c.BusyPoll > conn.MaxBusyPoll:
		return fmt.Errorf("Config.BusyPoll = %v: must be in 0..%v", c.BusyPoll, conn.MaxBusyPoll)
	case c.BlockElems < 0 || uint64(c.BlockElems) > math.MaxUint32:
		return fmt.Errorf("Config.BlockElems = %d: must be in 0..%d (0 = the switch's choice)", c.BlockElems, uint32(math.MaxUint32))
	}
	if _, err := elem.KernelFor(c.DType, c.Op); err != nil {
		return fmt.Errorf("Config.Op: %w", err)
	}
	if c.Sparse {
		if err := c.validateSparse(); err != nil {
			return err
		}
	}
	if err := c.validateSwitch(); err != nil {
		return err
	}
	_, _, err := parseAlgo(c.Algo)
	return err
}

// validateRanks checks where the ranks run: all in this process, or this
// process one rank of a world (the ring then needs every rank's address).
func (c Config) validateRanks() error {
	switch {
	case c.Ranks < 0 || c.Ranks > MaxRanks:
		return fmt.Errorf("Config.Ranks = %d: must be in 1..%d", c.Ranks, MaxRanks)
	case c.Ranks == 0 && c.World == 0:
		return errors.New("give Config.Ranks N (all ranks here) or Config.Rank R with Config.World N (one process per host)")
	case c.Ranks == 0 && (c.World < 1 || c.World > hostlib.MaxWorld || c.Rank < 0 || c.Rank >= c.World):
		return fmt.Errorf("Config.Rank = %d with Config.World = %d: world must be in 1..%d and rank in 0..world-1", c.Rank, c.World, hostlib.MaxWorld)
	case c.Algo == "ring" && c.Ranks == 0 && len(c.Peers) != c.World:
		return fmt.Errorf("Config.Algo = ring with Config.Rank = %d, Config.World = %d: give Config.Peers with %d addresses (every rank's, by rank), or use Config.Ranks N",
			c.Rank, c.World, c.World)
	case len(c.Peers) > 0 && (c.Algo != "ring" || c.Ranks != 0):
		return errors.New("Config.Peers: only with Config.Algo = ring and Config.Rank R with Config.World N")
	}
	return nil
}

// validateSparse checks what a sparse allreduce adds.
func (c Config) validateSparse() error {
	switch {
	case !(c.Density > 0 && c.Density <= 1):
		return fmt.Errorf("Config.Density = %v: must be in (0, 1]", c.Density)
	case !(c.Overlap >= 0 && c.Overlap <= 1):
		return fmt.Errorf("Config.Overlap = %v: must be in [0, 1]", c.Overlap)
	case c.Op != wire.OpSum && c.Op != wire.OpMin && c.Op != wire.OpMax:
		return fmt.Errorf("Config.Op = %v with Config.Sparse: must be sum, min or max", c.Op)
	case c.Algo == "tree" || c.Reproducible:
		return fmt.Errorf("Config.Algo = %s with Config.Sparse: sparse jobs use auto, single, multiB or ring", c.Algo)
	case uint64(c.Count) > math.MaxUint32:
		return fmt.Errorf("Config.Count = %d with Config.Sparse: indices are 32-bit", c.Count)
	case c.Algo != "ring" && c.Storage != wire.StorageHash && c.Storage != wire.StorageArray:
		return fmt.Errorf("Config.Storage = %v with Config.Sparse: want hash or array", c.Storage)
	}
	return nil
}

// validateSwitch checks a list of leaf switches against the ranks.
func (c Config) validateSwitch() error {
	n := len(c.leaves())
	if n <= 1 {
		return nil
	}
	_, world := c.localRanks()
	switch {
	case n > world:
		return fmt.Errorf("Config.Switch with %d leaf switches and %d ranks: every leaf needs at least one rank", n, world)
	case c.Deadline != 0:
		return fmt.Errorf("Config.Switch with %d leaf switches: bounded time (Config.Deadline) needs one switch", n)
	}
	_, err := c.leafCounts(world)
	return err
}

// parseAlgo reads Config.Algo as the design a host asks the switch for.
func parseAlgo(s string) (wire.Algo, int, error) {
	switch s {
	case "auto", "ring":
		return wire.AlgoAuto, 0, nil
	case "single":
		return wire.AlgoSingle, 0, nil
	case "tree":
		return wire.AlgoTree, 0, nil
	}
	if rest, ok := strings.CutPrefix(s, "multi"); ok {
		var b int
		if _, err := fmt.Sscanf(rest, "%d", &b); err == nil && b >= 2 && b <= proto.MaxBuffers {
			return wire.AlgoMulti, b, nil
		}
	}
	return 0, 0, fmt.Errorf("Config.Algo = %q: want auto, single, multi2, multi4 (multiB, B in 2..%d), tree or ring", s, proto.MaxBuffers)
}

// algoName is a design as Config.Algo writes it.
func algoName(a wire.Algo, b int) string {
	if a == wire.AlgoMulti {
		return fmt.Sprintf("multi%d", b)
	}
	return a.String()
}

// leaves lists the entries of Switch: one switch, or a tree's switches
// that take hosts, each HOST:PORT with an optional =N.
func (c *Config) leaves() []string { return strings.Split(c.Switch, ",") }

// leafCounts is the =N of every Switch entry, the ranks each serves, or
// nil when no entry has one (equal shares). Entries must all have it or
// none, and the counts must add up to world.
func (c *Config) leafCounts(world int) ([]int, error) {
	l := c.leaves()
	var counts []int
	for _, e := range l {
		_, n, ok := strings.Cut(strings.TrimSpace(e), "=")
		if !ok {
			continue
		}
		v, err := strconv.Atoi(n)
		if err != nil || v < 1 {
			return nil, fmt.Errorf("Config.Switch entry %q: =N must be a rank count >= 1", e)
		}
		counts = append(counts, v)
	}
	sum := 0
	for _, v := range counts {
		sum += v
	}
	switch {
	case counts == nil:
		return nil, nil
	case len(counts) != len(l):
		return nil, fmt.Errorf("Config.Switch = %s: give =N on every entry or on none", c.Switch)
	case sum != world:
		return nil, fmt.Errorf("Config.Switch = %s: the =N counts add up to %d ranks, want %d (Config.Ranks or Config.World)", c.Switch, sum, world)
	}
	return counts, nil
}

// place is where global rank r of world joins: with L switches listed,
// switch i holds a contiguous block of ranks, its =N or else an equal
// share (ranks i*world/L .. (i+1)*world/L-1), and r joins it as its local
// rank among them. With one switch it is (switch, r, world). Contiguous
// blocks keep a reproducible (tree) result the same as one switch's when
// the blocks are powers of two: the leaves' trees are the subtrees of the
// flat one.
func (c *Config) place(r, world int) (sw string, rank, localWorld int) {
	l := c.leaves()
	addr := func(i int) string { a, _, _ := strings.Cut(strings.TrimSpace(l[i]), "="); return a }
	if counts, _ := c.leafCounts(world); counts != nil {
		lo := 0
		for i, n := range counts {
			if r < lo+n {
				return addr(i), r - lo, n
			}
			lo += n
		}
	}
	i := r * len(l) / world // a leaf at or before r's: i*world/len(l) <= r
	for (i+1)*world/len(l) <= r {
		i++
	}
	lo, hi := i*world/len(l), (i+1)*world/len(l)
	return addr(i), r - lo, hi - lo
}
