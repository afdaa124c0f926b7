package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"text/tabwriter"

	"golang.org/x/sync/errgroup"

	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/internal/units"
	"github.com/flare-net/flare/models"
	"github.com/flare-net/flare/sim"
	"github.com/flare-net/flare/wire"
)

func runSim(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlags("sim", "Run allreduces in virtual time: the real handlers and the hpu scheduler on PsPIN's cycle\n"+
		"costs, for each design and each size --from, 2x, ... --to, on the switch of --preset. Hosts\n"+
		"send 1KiB packets, staggered, at their line rate with exponential gaps (--arrivals), and run\n"+
		"--rounds allreduces of each size back to back (by default enough for one block per core). A --seed gives one\n"+
		"result. json prints one object per row with the field names of 'flare model sweep --format\n"+
		"json'. --compare prints the model next to the run: bandwidth and memory with their relative\n"+
		"error, and whether the designs rank the same by bandwidth at each size (docs/MODEL.md).",
		"  flare sim                                   # flare preset, 4 designs x 4KiB..4MiB, table\n"+
			"  flare sim --compare                         # model vs simulation\n"+
			"  flare sim --preset pspin --algos tree --from 64KiB --to 1MiB --format json\n"+
			"  flare sim --subset 1 --compare --copies=false\n", stdout)
	sf := addSweepFlags(fs, true, treeMOrder)
	seed := fs.Uint64("seed", 1, "seed of the inputs and the arrival times")
	compare := fs.Bool("compare", false, "print the model (with --copies, as the simulator charges them, and --tree-m order,\n"+
		"as the simulated hosts stagger) next to each run")
	arrivals := fs.String("arrivals", "switch", "switch: one stream of packets with exponential gaps at the switch, the hosts\n"+
		"taking turns (the paper's method, docs/MODEL.md); hosts: every host with its own exponential gaps")
	overflow := fs.Bool("overflow", false, "let a packet whose home cluster is full run on the least-loaded cluster (PsPIN's default\n"+
		"scheduler); off, a block's packets run only on its S cores, as Flare schedules them (§5)")
	rounds := fs.Int("rounds", 0, "allreduces of each size run back to back, pipelined; 0 = enough for one block per core\n"+
		"(4KiB on the flare preset: 128), the steady state the model describes; 1 = one allreduce alone")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *rounds < 0 {
		return flagError("--rounds", fmt.Errorf("%d: must be >= 0 (0 = one block per core)", *rounds))
	}
	p, ds, sizes, err := sf.resolve()
	if err != nil {
		return err
	}
	from, to, format := sf.from, sf.to, sf.format
	if sizes[len(sizes)-1] > maxSimBytes {
		return flagError("--to", fmt.Errorf("%s: the simulator runs at most %s per host", *to, units.FormatSize(maxSimBytes)))
	}
	if es := int64(p.DType.Size()); sizes[0]%es != 0 {
		return flagError("--from", fmt.Errorf("%s: must be a multiple of the %s size (%d)", *from, p.DType, es))
	}
	o := simOptions{seed: *seed, rounds: *rounds, overflow: *overflow}
	switch *arrivals {
	case "switch":
		o.arrivals = sim.ArrivalsSwitch
	case "hosts":
		o.arrivals = sim.ArrivalsHosts
	default:
		return flagError("--arrivals", fmt.Errorf("%q: must be switch or hosts", *arrivals))
	}
	if o.rounds > 1 && sizes[0]%int64(p.PacketBytes) != 0 {
		return flagError("--rounds", fmt.Errorf("%d with --from %s: back-to-back rounds need sizes of whole %d-byte packets", o.rounds, *from, p.PacketBytes))
	}
	rows, err := simSweep(ctx, p, ds, sizes, o)
	if err != nil {
		return err
	}
	if *compare {
		return writeComparison(stdout, p, compareRows(p, rows), *format)
	}
	return writeSimRows(stdout, p, rows, *format)
}

// maxSimBytes bounds a simulated vector: the simulator holds every host's
// input in memory.
const maxSimBytes = 64 << 20

// simOptions are the simulator's own choices, beside the switch and the
// job that models.Params describes.
type simOptions struct {
	seed     uint64
	arrivals sim.Arrivals
	rounds   int  // 0: sim.SteadyRounds
	overflow bool // hpu.Config.Overflow
}

// simConfig is one simulated run on the switch p describes, so that the
// run and models.Evaluate(p, d) see the same switch and arrivals.
func simConfig(p models.Params, d models.Design, bytes int64, o simOptions) sim.Config {
	rounds := o.rounds
	if rounds == 0 {
		rounds = sim.SteadyRounds(p.Cores(), int(bytes), p.PacketBytes)
	}
	return sim.Config{
		HPU: hpu.Config{
			Clusters: p.Clusters, CoresPerCluster: p.CoresPerCluster, SubsetS: p.SubsetS,
			QueueDepth: p.QueueDepth, L1Bytes: p.L1Bytes, BufferBytes: p.PacketBytes, Overflow: o.overflow,
		},
		Hosts: p.Hosts, Bytes: int(bytes), DType: p.DType, Algo: d.Algo, Buffers: d.Buffers, Seed: o.seed,
		// The model's δ is the inter-arrival at the switch, all hosts
		// together; the simulator's is each host's.
		MeanInterArrival: p.Delta() * float64(p.Hosts),
		Window:           p.Window, PacketBytes: p.PacketBytes, Arrivals: o.arrivals, Rounds: rounds,
	}
}

// simSweep simulates every design at every size, GOMAXPROCS runs at a
// time, and returns the results size by size in the order of ds.
func simSweep(ctx context.Context, p models.Params, ds []models.Design, sizes []int64, o simOptions) ([]sim.Result, error) {
	out := make([]sim.Result, len(sizes)*len(ds))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, z := range sizes {
		for j, d := range ds {
			if d.Algo == wire.AlgoMulti && d.Buffers == 0 {
				d.Buffers = p.Buffers
			}
			g.Go(func() error {
				if err := gctx.Err(); err != nil {
					return err
				}
				r, err := sim.Run(simConfig(p, d, z, o))
				if err != nil {
					return err
				}
				out[i*len(ds)+j] = r
				return nil
			})
		}
	}
	return out, g.Wait()
}

// writeSimRows prints simulated runs as a table, CSV (columns named by
// the JSON fields) or JSON lines.
func writeSimRows(w io.Writer, p models.Params, rows []sim.Result, format string) error {
	switch format {
	case "json":
		return writeJSONLines(w, rows)
	case "csv":
		cw := csv.NewWriter(w)
		cw.Write([]string{"algo", "bytes", "hosts", "dtype", "blocks", "rounds", "window", "stagger_blocks", "inter_arrival_cycles", "tau_cycles",
			"lock_wait_cycles", "bandwidth_pkts_per_cycle", "bandwidth_gbps", "latency_cycles", "memory_buffers",
			"memory_bytes", "memory_buffers_max", "queue_occupancy", "queue_occupancy_max", "ingress_wait_cycles",
			"packets", "cycles", "contended_lock_acquisitions"})
		g := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
		i := strconv.Itoa
		for _, r := range rows {
			cw.Write([]string{r.Algo, i(r.Bytes), i(r.Hosts), r.DType, i(r.Blocks), i(r.Rounds), i(r.Window), i(r.StaggerBlocks), g(r.MeanInterArrival),
				g(r.TauCycles), g(r.LockWaitCycles), g(r.BandwidthPktsPerCycle), g(r.BandwidthGbps), g(r.LatencyCycles),
				g(r.MemoryBuffers), g(r.MemoryBytes), i(r.MemoryBuffersMax), g(r.QueueOccupancy),
				strconv.FormatInt(r.QueueOccupancyMax, 10), g(r.IngressWaitCycles), strconv.FormatInt(r.Packets, 10),
				strconv.FormatInt(r.Cycles, 10), strconv.FormatInt(r.ContendedAcquisitions, 10)})
		}
		cw.Flush()
		return cw.Error()
	}
	fmt.Fprintf(w, "# simulated: K=%d cores (%d clusters x %d), S=%d, Q=%d per cluster, %s L1 per cluster; P=%d hosts at %g Gbit/s, %s\n",
		p.Cores(), p.Clusters, p.CoresPerCluster, p.SubsetS, p.QueueDepth, models.FormatBytes(float64(p.L1Bytes)),
		p.Hosts, p.HostGbps, p.DType)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "design\tsize\trounds\twindow\ttau\tlock wait\tGbit/s\tlatency\tbuffers\tmax\tmemory\toccupancy\tmax\tcycles\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.0f\t%.1f\t%d\t%s\t%.2f\t%d\t%d\t\n",
			r.Algo, models.FormatBytes(float64(r.Bytes)), r.Rounds, r.Window, r.TauCycles, r.LockWaitCycles, r.BandwidthGbps,
			r.LatencyCycles, r.MemoryBuffers, r.MemoryBuffersMax, models.FormatBytes(r.MemoryBytes),
			r.QueueOccupancy, r.QueueOccupancyMax, r.Cycles)
	}
	return tw.Flush()
}
