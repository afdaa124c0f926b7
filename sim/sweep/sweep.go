// Package sweep is `flare sim`'s engine: the simulator (package sim) run
// for each design at each size on the switch a models.Params describes,
// the rows printed as a table, CSV or JSON lines, and the analytic model
// set beside each run (Compare), with the relative errors and whether
// the designs rank alike by bandwidth (docs/MODEL.md, "Model vs
// simulation"). Package sim stays free of the model; this package joins
// the two.
//
//	rows, err := sweep.Run(ctx, p, ds, sizes, sweep.Options{Seed: 1})
//	cmp := sweep.Compare(p, rows)
package sweep

import (
	"context"
	"runtime"

	"golang.org/x/sync/errgroup"

	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/models"
	"github.com/flare-net/flare/sim"
	"github.com/flare-net/flare/wire"
)

// MaxBytes bounds a simulated vector: the simulator holds every host's
// input in memory.
const MaxBytes = 64 << 20

// Options are the simulator's own choices, beside the switch and the
// job that models.Params describes.
type Options struct {
	Seed     uint64
	Arrivals sim.Arrivals
	Rounds   int  // 0: sim.SteadyRounds
	Overflow bool // hpu.Config.Overflow
}

// Config is one simulated run on the switch p describes, so that the run
// and models.Evaluate(p, d) see the same switch and arrivals.
func Config(p models.Params, d models.Design, bytes int64, o Options) sim.Config {
	rounds := o.Rounds
	if rounds == 0 {
		rounds = sim.SteadyRounds(p.Cores(), int(bytes), p.PacketBytes)
	}
	return sim.Config{
		HPU: hpu.Config{
			Clusters: p.Clusters, CoresPerCluster: p.CoresPerCluster, SubsetS: p.SubsetS,
			QueueDepth: p.QueueDepth, L1Bytes: p.L1Bytes, BufferBytes: p.PacketBytes, Overflow: o.Overflow,
		},
		Hosts: p.Hosts, Bytes: int(bytes), DType: p.DType, Algo: d.Algo, Buffers: d.Buffers, Seed: o.Seed,
		// The model's δ is the inter-arrival at the switch, all hosts
		// together; the simulator's is each host's.
		MeanInterArrival: p.Delta() * float64(p.Hosts),
		Window:           p.Window, PacketBytes: p.PacketBytes, Arrivals: o.Arrivals, Rounds: rounds,
	}
}

// Run simulates every design at every size, GOMAXPROCS runs at a time,
// and returns the results size by size in the order of ds.
func Run(ctx context.Context, p models.Params, ds []models.Design, sizes []int64, o Options) ([]sim.Result, error) {
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
				r, err := sim.Run(Config(p, d, z, o))
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
