package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/internal/bench"
	"github.com/flare-net/flare/internal/units"
	"github.com/flare-net/flare/wire"
)

func runAllReduce(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("allreduce", "Allreduce through a Flare switch (or the host ring baseline) and report the speed.\nWith --ranks N, N ranks run in this process; with --rank R --world N, this process is one rank.",
		"  flare allreduce --switch 127.0.0.1:7470 --ranks 8 --bytes 16MiB --verify\n"+
			"  export FLARE_TOKEN=$(flare token)                                       # one process per host: one token for all\n"+
			"  flare allreduce --rank 0 --world 4 --bytes 1MiB --dtype int32 --json\n"+
			"  flare allreduce --ranks 8 --bytes 1MiB --algo ring                     # host ring baseline\n"+
			"  flare allreduce --algo ring --rank 0 --world 2 --peers 127.0.0.1:9001,127.0.0.1:9002\n"+
			"  flare allreduce --switch 10.0.1.1:7470,10.0.2.1:7470 --rank 5 --world 8   # tree: rank 5 is local rank 1 of leaf 1\n", stdout)
	var c bench.Config
	a := addAllReduceFlags(fs, &c)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *a.cpuProfile != "" {
		stop, err := startCPUProfile(*a.cpuProfile)
		if err != nil {
			return flagError("--cpuprofile", err)
		}
		defer stop()
	}
	if err := a.resolve(fs, &c); err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return withFlags(err, configFlags)
	}
	if err := resolveToken(&c, *a.token, fs.Changed("token"), os.Getenv(tokenEnv)); err != nil {
		return err
	}
	res, err := bench.Run(ctx, c)
	if err != nil {
		return withFlags(err, configFlags)
	}
	if *a.asJSON {
		return json.NewEncoder(stdout).Encode(res)
	}
	fmt.Fprintf(stdout, "%d ranks  %s of %s %s  algo %s  median %.3f ms  p99 %.3f ms  algbw %.3f GB/s  retransmits %d  verified %v\n",
		res.Ranks, units.FormatSize(res.Bytes), res.DType, res.Op, res.Algo, res.MedianS*1e3, res.P99S*1e3, res.AlgbwGBps, res.Retransmits, res.Verified)
	return nil
}

// allReduceFlags are the flags of `flare allreduce` that are not a
// bench.Config field as they are typed.
type allReduceFlags struct {
	job                   *uint32
	token, bytes, storage *string
	elementFlags
	asJSON     *bool
	cpuProfile *string
}

// addAllReduceFlags registers the flags, the Config's fields in c.
func addAllReduceFlags(fs *pflag.FlagSet, c *bench.Config) *allReduceFlags {
	var a allReduceFlags
	fs.StringVar(&c.Switch, "switch", "127.0.0.1:7470", "switch data address HOST:PORT; in a tree of switches, the leaf switches' addresses\nHOST:PORT,HOST:PORT,...: ranks are spread over them in equal contiguous blocks\n(leaf i holds ranks i*N/L .. (i+1)*N/L-1), each joining its leaf as a local rank;\nHOST:PORT=K,... gives each switch K ranks instead (a switch with --local-hosts K among them)")
	a.job = fs.Uint32("job", 1, "job id")
	a.token = fs.String("token", "", "job token, the secret every rank of the job shares (decimal, or 0x-hex);\nwith --ranks a random one when not given; with --rank give it here or in "+tokenEnv+" (flare token prints one)")
	fs.IntVar(&c.Ranks, "ranks", 0, "run this many ranks in this process")
	fs.IntVar(&c.Rank, "rank", -1, "this process's rank (with --world)")
	fs.IntVar(&c.World, "world", 0, "world size (with --rank)")
	a.bytes = fs.String("bytes", "", "vector size per rank: 1000, 64KiB, 16MiB (or --count)")
	fs.IntVar(&c.Count, "count", 0, "vector length in elements")
	a.elementFlags = addElementFlags(fs)
	fs.StringVar(&c.Algo, "algo", "auto", "auto, single, multi2, multi4, tree or ring (the host ring baseline)")
	fs.IntVar(&c.Iters, "iters", 10, "measured allreduce calls")
	fs.IntVar(&c.Warmup, "warmup", 2, "unmeasured calls first")
	fs.BoolVar(&c.Verify, "verify", false, "fill a deterministic pattern and check every element (exit 1 on a mismatch)")
	fs.DurationVar(&c.Timeout, "timeout", 30*time.Second, "limit of one allreduce call")
	fs.BoolVar(&c.Reproducible, "reproducible", false, "ask for bit-reproducible float sums (tree)")
	fs.StringSliceVar(&c.Peers, "peers", nil, "with --algo ring and --rank: every rank's TCP listen address HOST:PORT, by rank")
	fs.BoolVar(&c.Sparse, "sparse", false, "sparse allreduce of (index, value) pairs; --bytes is the dense vector's size")
	fs.Float64Var(&c.Density, "density", 0.01, "sparse: fraction of non-zero elements per rank, in (0, 1]")
	fs.Float64Var(&c.Overlap, "overlap", 0.5, "sparse: fraction of a rank's indices drawn from a set all ranks share, in [0, 1]")
	a.storage = fs.String("storage", "hash", "sparse: the switch's storage, hash (spills collisions) or array")
	fs.IntVar(&c.BlockElems, "block-elems", 0, "sparse: indices per block (0 = the switch's choice)")
	fs.BoolVar(&c.NoOffload, "no-offload", false, "do not use UDP GSO/GRO (every datagram crosses the kernel alone)")
	fs.DurationVar(&c.BusyPoll, "busy-poll", 0, busyPollUsage+"\n(default "+conn.DefaultBusyPoll.String()+" with --rank, 0 with --ranks: ranks in one process take the CPUs from each other)")
	fs.BoolVar(&c.Multicast, "multicast", false, "ask the switch for the results on the job's multicast group (IPv4; a switch started with --multicast)")
	fs.DurationVar(&c.Deadline, "deadline", 0, "bounded time: the switch releases each block's partial sum this long after its first packet (e.g. 5ms)")
	fs.DurationVar(&c.TailMedian, "tail-median", 2*time.Millisecond, "with --tail-ratio: median of the injected delay before each call")
	fs.Float64Var(&c.TailRatio, "tail-ratio", 0, "inject a lognormal delay before each rank's call with this p99/p50 (e.g. 1.5 or 3; 0 = none);\ntimes are then the longest any rank waited from its own delayed start")
	a.asJSON = fs.Bool("json", false, "print one JSON object per configuration")
	a.cpuProfile = fs.String("cpuprofile", "", "write a CPU profile of this process to FILE (for go tool pprof)")
	return &a
}

// resolve sets the Config's fields that flags give as text.
func (a *allReduceFlags) resolve(fs *pflag.FlagSet, c *bench.Config) error {
	c.Job = *a.job
	var err error
	if c.DType, c.Op, err = a.elementFlags.parse(); err != nil {
		return err
	}
	switch {
	case *a.bytes != "" && c.Count != 0:
		return fmt.Errorf("--bytes and --count: give one")
	case *a.bytes != "":
		n, err := parseSize(*a.bytes)
		if err != nil {
			return flagError("--bytes", err)
		}
		c.Count = int(n) / c.DType.Size()
	case c.Count == 0:
		c.Count = (1 << 20) / c.DType.Size()
	}
	if !fs.Changed("busy-poll") && c.Ranks == 0 {
		c.BusyPoll = conn.DefaultBusyPoll
	}
	switch {
	case c.Ranks != 0 && (fs.Changed("rank") || fs.Changed("world")):
		return fmt.Errorf("--ranks and --rank/--world: give one")
	case !c.Sparse:
	case *a.storage == "hash":
		c.Storage = wire.StorageHash
	case *a.storage == "array":
		c.Storage = wire.StorageArray
	default:
		return fmt.Errorf("--storage %q: want hash or array", *a.storage)
	}
	return nil
}

// allreduceArgs is the command line of one rank process of a `flare
// bench` row: `flare allreduce` for rank c.Rank of c.World, printing its
// result as JSON (bench.Procs).
func allreduceArgs(c bench.Config) []string {
	args := []string{"allreduce", "--switch", c.Switch, "--rank", strconv.Itoa(c.Rank), "--world", strconv.Itoa(c.World),
		"--job", strconv.FormatUint(uint64(c.Job), 10), "--token", strconv.FormatUint(c.Token, 10),
		"--count", strconv.Itoa(c.Count), "--dtype", c.DType.String(), "--op", c.Op.String(), "--algo", c.Algo,
		"--iters", strconv.Itoa(c.Iters), "--warmup", strconv.Itoa(c.Warmup), "--timeout", c.Timeout.String(),
		"--busy-poll", c.BusyPoll.String(), "--json"}
	if c.Verify {
		args = append(args, "--verify")
	}
	if c.Multicast {
		args = append(args, "--multicast")
	}
	if c.Sparse {
		args = append(args, "--sparse", "--density", strconv.FormatFloat(c.Density, 'g', -1, 64),
			"--overlap", strconv.FormatFloat(c.Overlap, 'g', -1, 64))
		if c.Storage != wire.StorageDense {
			args = append(args, "--storage", c.Storage.String())
		}
	}
	if len(c.Peers) > 0 {
		args = append(args, "--peers", strings.Join(c.Peers, ","))
	}
	return args
}

// startCPUProfile profiles this process into path until stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
