package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/spf13/pflag"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/internal/bench"
)

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench", "Allreduce through the switch, the host ring baseline and two UDP relays (the ceilings:\n"+
		"the same datagrams through the kernel with no aggregation), for every P and size given, in\n"+
		"one run, and print the times with their ratios. The echo relay answers each packet to its\n"+
		"sender at once; the fan-out relay has the switch's pattern: it counts a block's P arrivals\n"+
		"and sends the last to all P, so hosts wait for the slowest rank, as in every allreduce.\n"+
		"The switch and the relays run in this process unless --switch names a daemon; each rank is\n"+
		"a process of its own unless --procs=false.",
		"  flare bench                                    # P = 8, 1 MiB and 16 MiB float32\n"+
			"  flare bench --ranks 2,8 --bytes 64KiB,1MiB --json\n"+
			"  flare bench --switch 10.0.0.1:7470 --paths switch,ring\n"+
			"  flare bench --paths switch,fanout --procs=false  # the switch against its own pattern's ceiling\n"+
			"  flare bench --packet 1KiB,8KiB --peers bin/peers.jsonl  # beside Open MPI and Gloo, measured apart\n"+
			"  flare bench --rounds 3 --peer 'gloo-ring=bin/peers-gloo-ring --ranks {ranks} --bytes {bytes} --iters {iters}'  # in turn (make bench-peers)\n"+
			"  flare bench --tree 4x4 --bytes 1MiB --sparse --densities 0.01   # Figure 15 analogue on a tree of switches\n"+
			"  flare bench --paths switch,fanout --procs=false --profile prof   # where each row's CPU and time go (go tool pprof, go tool trace)\n", stdout)
	var s bench.Suite
	b := addBenchFlags(fs, &s)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := b.resolve(fs, &s, stderr); err != nil {
		return err
	}
	if err := withFlags(s.Run(ctx, stdout), suiteFlags, benchConfigFlags); err != nil {
		return err
	}
	if n := s.Peers.Unused(); n > 0 {
		fmt.Fprintf(stderr, "flare bench: %d rows of --peers %s are for a P, size, dtype or op this run did not measure; left out\n", n, *b.peers)
	}
	return nil
}

// benchFlags are the flags of `flare bench` that are not a bench.Suite
// field as they are typed.
type benchFlags struct {
	sizes *[]string
	elementFlags
	procs   *bool
	tree    *string
	packets *[]string
	peers   *string
	peer    *[]string
}

// addBenchFlags registers the flags, the Suite's fields in s.
func addBenchFlags(fs *pflag.FlagSet, s *bench.Suite) *benchFlags {
	var b benchFlags
	fs.IntSliceVar(&s.Ranks, "ranks", []int{8}, "world sizes P, comma-separated (1..1024)")
	b.sizes = fs.StringSlice("bytes", []string{"1MiB", "16MiB"}, "vector sizes per rank, comma-separated")
	fs.StringSliceVar(&s.Paths, "paths", []string{"switch", "ring", "relay", "fanout"}, "what to measure: switch, switch-mc (the switch with its results on a multicast group), ring, relay (echo), fanout,\n"+
		"fanout-mc (the fan-out relay sending to a multicast group: switch-mc's ceiling)")
	b.packets = fs.StringSlice("packet", []string{"1KiB"}, "payload bytes per packet, comma-separated (8..8KiB): the switch and the relays run once per size")
	b.peers = fs.String("peers", "", "a file of --json rows from host-based libraries measured apart (make bench-peers: mpi-tcp,\n"+
		"gloo-ring) to print in the same table, with ratios, beside the rows of the same P and size")
	b.peer = fs.StringArray("peer", nil, "NAME=COMMAND: a host-based library's benchmark to run in turn with the rows of every P, size and round\n"+
		"(sh -c COMMAND, {ranks} {bytes} {iters} {warmup} replaced; it prints one --json row of path NAME), so that its\n"+
		"time and the switch's come from the same spell of a shared machine; repeatable (make bench-peers: mpi-tcp, gloo-ring)")
	fs.StringVar(&s.Switch, "switch", "", "a running switch daemon HOST:PORT (default: one embedded in this process)")
	b.elementFlags = addElementFlags(fs)
	fs.StringVar(&s.Algo, "algo", "auto", "the switch's design: auto, single, multi2, multi4 or tree")
	fs.IntVar(&s.Iters, "iters", 5, "measured calls per row")
	fs.IntVar(&s.Warmup, "warmup", 1, "unmeasured calls first")
	fs.IntVar(&s.Rounds, "rounds", 1, "measure each P and size's rows this many times in turn (--warmup and --iters calls each), each row's\n"+
		"median the median of its rounds': on a shared machine the ratios then compare the same spells (1..100)")
	fs.BoolVar(&s.Verify, "verify", true, "check every element of the switch and ring results")
	fs.DurationVar(&s.Timeout, "timeout", 60*time.Second, "limit of one allreduce call")
	b.procs = fs.Bool("procs", true, "run each rank as its own process (false: all ranks in this process)")
	fs.DurationVar(&s.BusyPoll, "busy-poll", 0, busyPollUsage+": the embedded switch's, the relays' and the ranks'\n"+
		"(default "+conn.DefaultBusyPoll.String()+" with a process per rank, 0 with --procs=false: goroutines that poll take the CPUs from the ranks')")
	fs.BoolVar(&s.JSON, "json", false, "print one JSON object per row")
	fs.BoolVar(&s.Sparse, "sparse", false, "compare sparse in-network (hash, array), dense in-network and the host sparse baseline")
	fs.Float64SliceVar(&s.Densities, "densities", []float64{0.001, 0.01, 0.1, 0.2}, "with --sparse: fractions of non-zeros per rank")
	fs.Float64Var(&s.Overlap, "overlap", 0.5, "with --sparse: fraction of a rank's indices drawn from a set all ranks share")
	fs.StringVar(&s.Profile, "profile", "", "DIR: write each row's CPU profile and execution trace over its measured calls in this process to DIR\n"+
		"(p8-16MiB-switch-1KiB-r1.cpu.pprof and .trace): the embedded switch's or the relay's, and with --procs=false the ranks' too,\n"+
		"their work between calls labelled phase=between (go tool pprof -tagignore phase=between; docs/PERFORMANCE.md)")
	b.tree = fs.String("tree", "", "LEAVESxHOSTS (e.g. 4x4): a root and LEAVES leaf switches in this process, HOSTS ranks per leaf\n"+
		"(ranks in this process too); in-network dense through the tree vs the host ring, with --sparse also in-network\n"+
		"sparse vs host sparse, with the bytes on every link next to what flare model collectives predicts for the same tree")
	return &b
}

// resolve sets the Suite's fields that flags give as text, and the flag
// combinations a tree refuses.
func (b *benchFlags) resolve(fs *pflag.FlagSet, s *bench.Suite, stderr io.Writer) error {
	if s.Sparse && !fs.Changed("paths") {
		s.Paths = []string{bench.PathSwitch}
	}
	var err error
	if s.DType, s.Op, err = b.elementFlags.parse(); err != nil {
		return err
	}
	for _, v := range *b.sizes {
		n, err := parseSize(v)
		if err != nil {
			return flagError("--bytes", err)
		}
		s.Sizes = append(s.Sizes, n)
	}
	if *b.tree != "" {
		if s.Tree, err = parseTreeShape(*b.tree); err != nil {
			return err
		}
		for _, f := range []string{"ranks", "switch", "paths", "procs", "packet", "peers", "peer"} {
			if fs.Changed(f) && (f != "procs" || *b.procs) {
				return fmt.Errorf("--tree with --%s: the tree runs its own switches and ranks, in this process", f)
			}
		}
		return nil
	}
	if s.Packets, err = parsePackets(*b.packets); err != nil {
		return err
	}
	if s.Switch != "" && fs.Changed("packet") && slices.ContainsFunc(s.Paths, bench.ThroughSwitch) {
		return fmt.Errorf("--switch with --packet: the daemon's own --packet sets its size (--packet sizes the relays alone with --paths relay,fanout)")
	}
	if *b.peers != "" {
		if s.Peers, err = bench.ReadPeers(*b.peers); err != nil {
			return flagError("--peers", err)
		}
	}
	for _, v := range *b.peer {
		pc, err := bench.ParsePeerCmd(v)
		if err != nil {
			return flagError("--peer", err)
		}
		s.PeerCmds = append(s.PeerCmds, pc)
	}
	if !fs.Changed("busy-poll") && *b.procs {
		s.BusyPoll = conn.DefaultBusyPoll
	}
	if *b.procs {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("--procs: cannot find this binary to start ranks: %w", err)
		}
		s.Procs = &bench.Procs{Exe: exe, Args: allreduceArgs, Stderr: stderr}
	}
	return nil
}

// parsePackets reads --packet: payload sizes per packet, at least one
// (Suite.Validate refuses a size the switch does not take, or one given
// twice).
func parsePackets(list []string) ([]int, error) {
	var packets []int
	for _, s := range list {
		n, err := parseSize(s)
		if err != nil {
			return nil, flagError("--packet", err)
		}
		packets = append(packets, int(n))
	}
	if len(packets) == 0 {
		return nil, fmt.Errorf("--packet: give at least one size")
	}
	return packets, nil
}
