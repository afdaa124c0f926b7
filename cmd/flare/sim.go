package main

import (
	"context"
	"fmt"
	"io"

	"github.com/flare-net/flare/internal/units"
	"github.com/flare-net/flare/sim"
	"github.com/flare-net/flare/sim/sweep"
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
	if sizes[len(sizes)-1] > sweep.MaxBytes {
		return flagError("--to", fmt.Errorf("%s: the simulator runs at most %s per host", *to, units.FormatSize(sweep.MaxBytes)))
	}
	if es := int64(p.DType.Size()); sizes[0]%es != 0 {
		return flagError("--from", fmt.Errorf("%s: must be a multiple of the %s size (%d)", *from, p.DType, es))
	}
	o := sweep.Options{Seed: *seed, Rounds: *rounds, Overflow: *overflow}
	switch *arrivals {
	case "switch":
		o.Arrivals = sim.ArrivalsSwitch
	case "hosts":
		o.Arrivals = sim.ArrivalsHosts
	default:
		return flagError("--arrivals", fmt.Errorf("%q: must be switch or hosts", *arrivals))
	}
	if o.Rounds > 1 && sizes[0]%int64(p.PacketBytes) != 0 {
		return flagError("--rounds", fmt.Errorf("%d with --from %s: back-to-back rounds need sizes of whole %d-byte packets", o.Rounds, *from, p.PacketBytes))
	}
	rows, err := sweep.Run(ctx, p, ds, sizes, o)
	if err != nil {
		return err
	}
	if !*compare {
		return sweep.WriteRows(stdout, p, rows, *format)
	}
	cmp, err := sweep.Compare(p, rows)
	if err != nil {
		return err
	}
	return sweep.WriteComparison(stdout, p, cmp, *format)
}
