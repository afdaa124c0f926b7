package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/hostlib"
	"github.com/flare-net/flare/proto"
	"github.com/flare-net/flare/wire"
)

// arConfig is one measured allreduce configuration.
type arConfig struct {
	sw           string
	job          uint32
	token        uint64
	ranks        int // ranks run in this process
	rank, world  int
	count        int
	dtype        wire.DType
	op           wire.Op
	algo         string
	iters        int
	warmup       int
	verify       bool
	timeout      time.Duration
	reproducible bool
	peers        []string // ring listen addresses by rank, for --algo ring with --rank
	sparse       bool
	density      float64      // sparse: fraction of non-zeros per rank
	overlap      float64      // sparse: fraction of a rank's indices drawn from a set all ranks share
	storage      wire.Storage // sparse: hash or array
	blockElems   int          // sparse: indices per block (0 = the switch's choice)
	noOffload    bool
	deadline     time.Duration // bounded time: the switch's per-block deadline (0 = exact)
	tailMedian   time.Duration // injected straggling: each rank waits a random delay before each call
	tailRatio    float64       // its p99/p50 (lognormal); 0 = no injection
}

// arResult is one output row (the --json contract).
type arResult struct {
	Ranks       int     `json:"ranks"`
	Bytes       int64   `json:"bytes"`
	DType       string  `json:"dtype"`
	Op          string  `json:"op"`
	Algo        string  `json:"algo"`
	Iters       int     `json:"iters"`
	MedianS     float64 `json:"median_s"`
	P99S        float64 `json:"p99_s"`
	AlgbwGBps   float64 `json:"algbw_GBps"`
	Verified    bool    `json:"verified"`
	Retransmits int64   `json:"retransmits"`
	PacketBytes int     `json:"packet_bytes,omitempty"` // payload bytes per packet the switch granted (dense in-network calls)
	// Bounded-time runs (--deadline) and injected tails (--tail-ratio).
	DeadlineMS      float64 `json:"deadline_ms,omitempty"`
	TailRatio       float64 `json:"tail_ratio,omitempty"`
	DroppedFraction float64 `json:"dropped_fraction,omitempty"` // contributions left out of partial results
	PartialBlocks   int64   `json:"partial_blocks,omitempty"`   // per call, over the local ranks
	TxBytes         int64   `json:"tx_bytes"`                   // UDP (or TCP, for the ring) payload bytes the local ranks sent, per call
	RxBytes         int64   `json:"rx_bytes"`                   // and received
	// Sparse runs only.
	Density      float64 `json:"density,omitempty"`
	Storage      string  `json:"storage,omitempty"`
	SpilledPairs int64   `json:"spilled_pairs,omitempty"` // per call, over the local ranks
}

// summarise fills the time fields from the measured calls.
func (r *arResult) summarise(times []float64) {
	slices.Sort(times)
	r.MedianS = times[len(times)/2]
	r.P99S = times[min(len(times)-1, (len(times)*99+99)/100-1)]
	r.AlgbwGBps = float64(r.Bytes) / r.MedianS / 1e9
}

// localRanks lists the ranks this process runs, and the world size.
func (c *arConfig) localRanks() ([]int, int) {
	if c.ranks > 0 {
		local := make([]int, c.ranks)
		for r := range local {
			local[r] = r
		}
		return local, c.ranks
	}
	return []int{c.rank}, c.world
}

func runAllReduce(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("allreduce", "Allreduce through a Flare switch (or the host ring baseline) and report the speed.\nWith --ranks N, N ranks run in this process; with --rank R --world N, this process is one rank.",
		"  flare allreduce --switch 127.0.0.1:7470 --ranks 8 --bytes 16MiB --verify\n"+
			"  export FLARE_TOKEN=$(flare token)                                       # one process per host: one token for all\n"+
			"  flare allreduce --rank 0 --world 4 --bytes 1MiB --dtype int32 --json\n"+
			"  flare allreduce --ranks 8 --bytes 1MiB --algo ring                     # host ring baseline\n"+
			"  flare allreduce --algo ring --rank 0 --world 2 --peers 127.0.0.1:9001,127.0.0.1:9002\n"+
			"  flare allreduce --switch 10.0.1.1:7470,10.0.2.1:7470 --rank 5 --world 8   # tree: rank 5 is local rank 1 of leaf 1\n", stdout)
	var c arConfig
	fs.StringVar(&c.sw, "switch", "127.0.0.1:7470", "switch data address HOST:PORT; in a tree of switches, the leaf switches' addresses\nHOST:PORT,HOST:PORT,...: ranks are spread over them in equal contiguous blocks\n(leaf i holds ranks i*N/L .. (i+1)*N/L-1), each joining its leaf as a local rank;\nHOST:PORT=K,... gives each switch K ranks instead (a switch with --local-hosts K among them)")
	job := fs.Uint32("job", 1, "job id")
	token := fs.String("token", "", "job token, the secret every rank of the job shares (decimal, or 0x-hex);\nwith --ranks a random one when not given; with --rank give it here or in "+tokenEnv+" (flare token prints one)")
	fs.IntVar(&c.ranks, "ranks", 0, "run this many ranks in this process")
	fs.IntVar(&c.rank, "rank", -1, "this process's rank (with --world)")
	fs.IntVar(&c.world, "world", 0, "world size (with --rank)")
	bytesFlag := fs.String("bytes", "", "vector size per rank: 1000, 64KiB, 16MiB (or --count)")
	fs.IntVar(&c.count, "count", 0, "vector length in elements")
	dtype := fs.String("dtype", "float32", "int8, int16, int32, int64, float32, float64, bfloat16 or float16")
	op := fs.String("op", "sum", "sum, min, max, prod, and, or or xor")
	fs.StringVar(&c.algo, "algo", "auto", "auto, single, multi2, multi4, tree or ring (the host ring baseline)")
	fs.IntVar(&c.iters, "iters", 10, "measured allreduce calls")
	fs.IntVar(&c.warmup, "warmup", 2, "unmeasured calls first")
	fs.BoolVar(&c.verify, "verify", false, "fill a deterministic pattern and check every element (exit 1 on a mismatch)")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "limit of one allreduce call")
	fs.BoolVar(&c.reproducible, "reproducible", false, "ask for bit-reproducible float sums (tree)")
	fs.StringSliceVar(&c.peers, "peers", nil, "with --algo ring and --rank: every rank's TCP listen address HOST:PORT, by rank")
	fs.BoolVar(&c.sparse, "sparse", false, "sparse allreduce of (index, value) pairs; --bytes is the dense vector's size")
	fs.Float64Var(&c.density, "density", 0.01, "sparse: fraction of non-zero elements per rank, in (0, 1]")
	fs.Float64Var(&c.overlap, "overlap", 0.5, "sparse: fraction of a rank's indices drawn from a set all ranks share, in [0, 1]")
	storage := fs.String("storage", "hash", "sparse: the switch's storage, hash (spills collisions) or array")
	fs.IntVar(&c.blockElems, "block-elems", 0, "sparse: indices per block (0 = the switch's choice)")
	fs.BoolVar(&c.noOffload, "no-offload", false, "do not use UDP GSO/GRO (every datagram crosses the kernel alone)")
	fs.DurationVar(&c.deadline, "deadline", 0, "bounded time: the switch releases each block's partial sum this long after its first packet (e.g. 5ms)")
	fs.DurationVar(&c.tailMedian, "tail-median", 2*time.Millisecond, "with --tail-ratio: median of the injected delay before each call")
	fs.Float64Var(&c.tailRatio, "tail-ratio", 0, "inject a lognormal delay before each rank's call with this p99/p50 (e.g. 1.5 or 3; 0 = none);\ntimes are then the longest any rank waited from its own delayed start")
	asJSON := fs.Bool("json", false, "print one JSON object per configuration")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of this process to FILE (for go tool pprof)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return flagError("--cpuprofile", err)
		}
		defer stop()
	}
	c.job = *job
	var err error
	if c.dtype, err = wire.ParseDType(*dtype); err != nil {
		return flagError("--dtype", err)
	}
	if c.op, err = wire.ParseOp(*op); err != nil {
		return flagError("--op", err)
	}
	if _, err := elem.KernelFor(c.dtype, c.op); err != nil {
		return flagError("--op", err)
	}
	if err := c.resolveCount(*bytesFlag); err != nil {
		return err
	}
	switch {
	case !c.sparse:
	case *storage == "hash":
		c.storage = wire.StorageHash
	case *storage == "array":
		c.storage = wire.StorageArray
	default:
		return fmt.Errorf("--storage %q: want hash or array", *storage)
	}
	if err := c.validate(); err != nil {
		return err
	}
	if err := c.resolveToken(*token, fs.Changed("token"), os.Getenv(tokenEnv)); err != nil {
		return err
	}
	measureFn := measure
	if c.sparse {
		measureFn = measureSparse
	}
	res, err := measureFn(ctx, c)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(res)
	}
	fmt.Fprintf(stdout, "%d ranks  %s of %s %s  algo %s  median %.3f ms  p99 %.3f ms  algbw %.3f GB/s  retransmits %d  verified %v\n",
		res.Ranks, formatSize(res.Bytes), res.DType, res.Op, res.Algo, res.MedianS*1e3, res.P99S*1e3, res.AlgbwGBps, res.Retransmits, res.Verified)
	return nil
}

func (c *arConfig) resolveCount(bytesFlag string) error {
	switch {
	case bytesFlag != "" && c.count != 0:
		return fmt.Errorf("--bytes and --count: give one")
	case bytesFlag != "":
		n, err := parseSize(bytesFlag)
		if err != nil {
			return flagError("--bytes", err)
		}
		c.count = int(n) / c.dtype.Size()
	case c.count == 0:
		c.count = (1 << 20) / c.dtype.Size()
	}
	return nil
}

func (c *arConfig) validate() error {
	switch {
	case c.count < 1 || c.count > 1<<30:
		return fmt.Errorf("--count %d: must be in 1..%d elements", c.count, 1<<30)
	case c.ranks != 0 && (c.rank >= 0 || c.world != 0):
		return fmt.Errorf("--ranks and --rank/--world: give one")
	case c.ranks == 0 && c.world == 0:
		return fmt.Errorf("give --ranks N (all ranks here) or --rank R --world N (one process per host)")
	case c.ranks < 0 || c.ranks > 1024:
		return fmt.Errorf("--ranks %d: must be in 1..1024", c.ranks)
	case c.ranks == 0 && (c.world < 1 || c.world > hostlib.MaxWorld || c.rank < 0 || c.rank >= c.world):
		return fmt.Errorf("--rank %d --world %d: world must be in 1..%d and rank in 0..world-1", c.rank, c.world, hostlib.MaxWorld)
	case c.iters < 1 || c.warmup < 0:
		return fmt.Errorf("--iters %d --warmup %d: want iters >= 1 and warmup >= 0", c.iters, c.warmup)
	case c.deadline != 0 && (c.deadline < time.Millisecond || c.deadline > 65535*time.Millisecond || c.deadline%time.Millisecond != 0):
		return fmt.Errorf("--deadline %v: must be whole milliseconds in 1ms..65.535s", c.deadline)
	case c.deadline != 0 && (c.sparse || c.algo == "ring" || (c.algo != "auto" && c.algo != "single")):
		return fmt.Errorf("--deadline with --algo %s: bounded time works with the dense single-buffer design (auto or single)", c.algo)
	case c.tailRatio != 0 && (c.tailRatio < 1 || c.tailRatio > 100 || c.tailMedian <= 0):
		return fmt.Errorf("--tail-ratio %v --tail-median %v: want a ratio in 1..100 and a positive median", c.tailRatio, c.tailMedian)
	case c.sparse && !(c.density > 0 && c.density <= 1):
		return fmt.Errorf("--density %v: must be in (0, 1]", c.density)
	case c.sparse && !(c.overlap >= 0 && c.overlap <= 1):
		return fmt.Errorf("--overlap %v: must be in [0, 1]", c.overlap)
	case c.sparse && c.op != wire.OpSum && c.op != wire.OpMin && c.op != wire.OpMax:
		return fmt.Errorf("--op %v with --sparse: must be sum, min or max", c.op)
	case c.sparse && (c.algo == "tree" || c.reproducible):
		return fmt.Errorf("--algo %s with --sparse: sparse jobs use auto, single, multiB or ring", c.algo)
	case c.count > math.MaxUint32 && c.sparse:
		return fmt.Errorf("--count %d with --sparse: indices are 32-bit", c.count)
	case c.algo == "ring" && c.ranks == 0 && len(c.peers) != c.world:
		return fmt.Errorf("--algo ring --rank %d --world %d: give --peers with %d addresses (every rank's, by rank), or use --ranks N", c.rank, c.world, c.world)
	case len(c.peers) > 0 && (c.algo != "ring" || c.ranks != 0):
		return fmt.Errorf("--peers: only with --algo ring and --rank R --world N")
	}
	if n := len(c.leaves()); n > 1 {
		world := max(c.ranks, c.world)
		if n > world {
			return fmt.Errorf("--switch with %d leaf switches and %d ranks: every leaf needs at least one rank", n, world)
		}
		if c.deadline != 0 {
			return fmt.Errorf("--switch with %d leaf switches: bounded time (--deadline) needs one switch", n)
		}
		if _, err := c.leafCounts(world); err != nil {
			return err
		}
	}
	if _, _, err := parseAlgo(c.algo); err != nil {
		return err
	}
	return nil
}

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
	return 0, 0, fmt.Errorf("--algo %q: want auto, single, multi2, multi4 (multiB, B in 2..%d), tree or ring", s, proto.MaxBuffers)
}

// measure runs warmup + iters calls on every local rank and summarises.
func measure(ctx context.Context, c arConfig) (*arResult, error) {
	local, world := c.localRanks()
	nbytes := c.count * c.dtype.Size()
	bufs := make([][]byte, len(local))
	for i := range bufs {
		bufs[i] = make([]byte, nbytes)
	}
	res := &arResult{Ranks: world, Bytes: int64(nbytes), DType: c.dtype.String(), Op: c.op.String(), Iters: c.iters, Verified: c.verify}
	var call func(ctx context.Context, it int) error
	var closeAll func()
	var sessions []*hostlib.Session
	// With an injected tail, a call's time is the longest any rank waited
	// from its own (delayed) start: what a straggler costs the others.
	waited := make([]time.Duration, len(local))
	switch {
	case c.algo == "ring" && c.ranks == 0:
		res.Algo = "ring"
		ring, err := hostlib.NewRing(ctx, hostlib.RingConfig{Rank: c.rank, Peers: c.peers, DialTimeout: c.timeout})
		if err != nil {
			return nil, err
		}
		call = func(ctx context.Context, it int) error {
			c.straggle(c.rank, it)
			return ring.AllReduce(ctx, bufs[0], c.dtype, c.op)
		}
		closeAll = func() { ring.Close() }
	case c.algo == "ring":
		res.Algo = "ring"
		call = func(ctx context.Context, it int) error { return hostlib.RunLocalRing(ctx, bufs, c.dtype, c.op, nil) }
		closeAll = func() {}
	default:
		var err error
		if sessions, err = joinAll(ctx, c, local, world); err != nil {
			return nil, err
		}
		closeAll = func() {
			for _, s := range sessions {
				st := s.Stats()
				res.Retransmits += int64(st.Retransmits)
				res.TxBytes += int64(st.BytesSent / uint64(c.warmup+c.iters))
				res.RxBytes += int64(st.BytesReceived / uint64(c.warmup+c.iters))
				s.Close()
			}
		}
		res.Algo = algoName(sessions[0].Algo(), sessions[0].Buffers())
		res.PacketBytes = sessions[0].PacketElems() * c.dtype.Size()
		call = func(ctx context.Context, it int) error {
			g, gctx := errgroup.WithContext(ctx)
			for i, s := range sessions {
				g.Go(func() error {
					c.straggle(local[i], it)
					start := time.Now()
					err := s.AllReduceBytes(gctx, bufs[i])
					waited[i] = time.Since(start)
					return err
				})
			}
			return g.Wait()
		}
	}
	var times []float64
	dropped := 0
	for it := 0; it < c.warmup+c.iters; it++ {
		if c.verify {
			for i, r := range local {
				fillPattern(c.dtype, c.op, r, it, bufs[i])
			}
		}
		cctx, cancel := context.WithTimeout(ctx, c.timeout)
		start := time.Now()
		err := call(cctx, it)
		el := time.Since(start)
		if c.tailRatio > 0 && len(sessions) > 0 {
			el = slices.Max(waited)
		}
		cancel()
		if err != nil {
			closeAll()
			return nil, err
		}
		if it >= c.warmup {
			times = append(times, el.Seconds())
		}
		partial := 0
		for i, r := range local {
			var contrib []uint16
			if c.deadline > 0 {
				contrib = sessions[i].Contributors()
			}
			if contrib == nil && i > 0 && bytes.Equal(bufs[i], bufs[0]) {
				continue // the same bits as rank local[0]'s, checked (as verifyDenseAll)
			}
			n, missed, err := c.verifyCall(world, it, bufs[i], contrib, sessionPE(sessions, i))
			if it >= c.warmup {
				partial += n
				dropped += missed
			}
			if err != nil {
				closeAll()
				return nil, fmt.Errorf("verify: rank %d, call %d: %w", r, it, err)
			}
		}
		if it >= c.warmup {
			res.PartialBlocks += int64(partial)
		}
	}
	if c.deadline > 0 {
		res.DeadlineMS = float64(c.deadline) / float64(time.Millisecond)
		res.PartialBlocks /= int64(c.iters)
		res.DroppedFraction = float64(dropped) / float64(c.iters*len(local)*world*blockCountOf(sessions, c.count))
	}
	res.TailRatio = c.tailRatio
	closeAll()
	res.summarise(times)
	return res, nil
}

// joinAll joins the local ranks concurrently (each join waits for all).
func joinAll(ctx context.Context, c arConfig, local []int, world int) ([]*hostlib.Session, error) {
	algo, b, _ := parseAlgo(c.algo)
	sessions := make([]*hostlib.Session, len(local))
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	for i, r := range local {
		g.Go(func() error {
			sw, lr, lw := c.place(r, world)
			s, err := hostlib.Join(gctx, hostlib.Options{
				Switch: sw, Job: c.job, Token: c.token, Rank: lr, World: lw, DType: c.dtype, Op: c.op,
				Elements: c.count, Algo: algo, Buffers: b, Reproducible: c.reproducible, Timeout: c.timeout,
				Sparse: c.sparse, Storage: c.storage, BlockElems: c.blockElems, DisableOffload: c.noOffload, BlockDeadline: c.deadline,
			})
			mu.Lock()
			sessions[i] = s
			mu.Unlock()
			return err
		})
	}
	if err := g.Wait(); err != nil {
		for _, s := range sessions {
			if s != nil {
				s.Close()
			}
		}
		return nil, err
	}
	return sessions, nil
}

// leaves lists the entries of --switch: one switch, or a tree's switches
// that take hosts, each HOST:PORT with an optional =N.
func (c *arConfig) leaves() []string { return strings.Split(c.sw, ",") }

// leafCounts is the =N of every --switch entry, the ranks each serves, or
// nil when no entry has one (equal shares). Entries must all have it or
// none, and the counts must add up to world.
func (c *arConfig) leafCounts(world int) ([]int, error) {
	l := c.leaves()
	var counts []int
	for _, e := range l {
		_, n, ok := strings.Cut(strings.TrimSpace(e), "=")
		if !ok {
			continue
		}
		v, err := strconv.Atoi(n)
		if err != nil || v < 1 {
			return nil, fmt.Errorf("--switch entry %q: =N must be a rank count >= 1", e)
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
		return nil, fmt.Errorf("--switch %s: give =N on every entry or on none", c.sw)
	case sum != world:
		return nil, fmt.Errorf("--switch %s: the =N counts add up to %d ranks, want %d (--ranks or --world)", c.sw, sum, world)
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
func (c *arConfig) place(r, world int) (sw string, rank, localWorld int) {
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
	i := r * len(l) / world
	for i*world/len(l) > r { // integer division: find the leaf whose block holds r
		i--
	}
	for (i+1)*world/len(l) <= r {
		i++
	}
	lo, hi := i*world/len(l), (i+1)*world/len(l)
	return addr(i), r - lo, hi - lo
}

func algoName(a wire.Algo, b int) string {
	if a == wire.AlgoMulti {
		return fmt.Sprintf("multi%d", b)
	}
	return a.String()
}

// patternValue is rank r's element i in call it: small integers (and ±1
// with a rare 2 for products), so every design's float result is exact and
// the check can be element-exact.
func patternValue(op wire.Op, r, i, it int) int64 {
	h := uint64(i)*0x9E3779B97F4A7C15 ^ uint64(r)*0xBF58476D1CE4E5B9 ^ uint64(it)*0x94D049BB133111EB
	h ^= h >> 31
	if op == wire.OpProd {
		switch h % 16 {
		case 0:
			return -1
		case 1:
			return 2
		}
		return 1
	}
	return int64(h%61) - 30
}

func fillPattern(dt wire.DType, op wire.Op, rank, it int, buf []byte) {
	sz := dt.Size()
	for i := 0; i*sz < len(buf); i++ {
		putValue(dt, buf[i*sz:], patternValue(op, rank, i, it))
	}
}

// verifyPattern checks buf against the plain reference of every rank's
// pattern, a chunk of elements at a time.
func verifyPattern(dt wire.DType, op wire.Op, world, it int, buf []byte) error {
	return verifyPatternFrom(dt, op, world, it, buf, 0)
}

// verifyPatternFrom is verifyPattern for buf holding the elements from
// first on.
func verifyPatternFrom(dt wire.DType, op wire.Op, world, it int, buf []byte, first int) error {
	sz := dt.Size()
	const chunk = 4096
	inputs := make([][]byte, world)
	for lo := 0; lo*sz < len(buf); lo += chunk {
		n := min(chunk, len(buf)/sz-lo)
		for r := range inputs {
			if inputs[r] == nil {
				inputs[r] = make([]byte, chunk*sz)
			}
			inputs[r] = inputs[r][:n*sz]
			for i := 0; i < n; i++ {
				putValue(dt, inputs[r][i*sz:], patternValue(op, r, first+lo+i, it))
			}
		}
		if err := elem.Check(dt, op, inputs, buf[lo*sz:(lo+n)*sz]); err != nil {
			return fmt.Errorf("at element offset %d: %w", first+lo, err)
		}
	}
	return nil
}

// verifyCall checks one call's result on one rank. Without a deadline the
// whole vector is checked (with --verify). In bounded time, contrib gives
// each block's contributors: complete blocks are checked, partial ones
// (fewer contributions by design) are counted, with the contributions
// they miss.
func (c *arConfig) verifyCall(world, it int, buf []byte, contrib []uint16, pe int) (partial, missed int, err error) {
	if contrib == nil {
		if c.verify {
			err = verifyPattern(c.dtype, c.op, world, it, buf)
		}
		return 0, 0, err
	}
	sz := c.dtype.Size()
	for b, n := range contrib {
		if int(n) < world {
			partial++
			missed += world - int(n)
			continue
		}
		if c.verify {
			lo, hi := b*pe, min((b+1)*pe, c.count)
			if err := verifyPatternFrom(c.dtype, c.op, world, it, buf[lo*sz:hi*sz], lo); err != nil {
				return partial, missed, fmt.Errorf("block %d: %w", b, err)
			}
		}
	}
	return partial, missed, nil
}

// sessionPE is session i's elements per block, 0 without sessions.
func sessionPE(sessions []*hostlib.Session, i int) int {
	if i < len(sessions) {
		return sessions[i].PacketElems()
	}
	return 0
}

// blockCountOf is the blocks per call of the sessions' job.
func blockCountOf(sessions []*hostlib.Session, count int) int {
	if len(sessions) > 0 {
		return sessions[0].Blocks()
	}
	return max(1, count)
}

// straggle waits, before rank's call it, a delay drawn (deterministically
// for the rank and call) from a lognormal with median tailMedian and
// p99/p50 = tailRatio: the injected tail of a bounded-time evaluation.
func (c *arConfig) straggle(rank, it int) {
	if c.tailRatio == 0 {
		return
	}
	rng := rand.New(rand.NewPCG(uint64(rank)+1, uint64(it)))
	sigma := math.Log(c.tailRatio) / 2.326 // the 99th percentile of N(0,1)
	time.Sleep(time.Duration(float64(c.tailMedian) * math.Exp(sigma*rng.NormFloat64())))
}
