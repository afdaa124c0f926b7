package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/flare-net/flare/internal/bench"
	"github.com/flare-net/flare/internal/jsonl"
	"github.com/flare-net/flare/models"
	"github.com/flare-net/flare/wire"
)

func runModelCalibrate(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlags("model calibrate", "Measure this machine's real per-packet handler time tau through the real-time processing\n"+
		"unit (the in-process harness on one CPU, tau from the unit's statistics), predict the\n"+
		"harness's packets/s on GOMAXPROCS CPUs, run it and print predicted against measured.\n"+
		"predicted = min(A/D, K/tau): D = tau + h is a packet's CPU time on GOMAXPROCS CPUs (h: the\n"+
		"hosts, the scheduler, and the cost of running on several CPUs), A the CPUs this process gets\n"+
		"(GOMAXPROCS, less what other work takes), K the unit's cores. --runs rounds each measure all\n"+
		"of these and the harness in turn; each figure, and the error, is the median over the rounds.",
		"  flare model calibrate\n"+
			"  flare model calibrate --algo tree --bytes 256KiB --hosts 16 --format json\n", stdout)
	var c bench.CalibrateConfig
	a := addCalibrateFlags(fs, &c)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := a.resolve(&c); err != nil {
		return err
	}
	cal, err := bench.Calibrate(ctx, c)
	if err != nil {
		return withFlags(err, calibrateFlags)
	}
	if *a.format == "json" {
		return jsonl.Write(stdout, []bench.Calibration{cal})
	}
	return bench.WriteCalibration(stdout, cal)
}

// calibrateArgs are flare model calibrate's flags that set no field of
// bench.CalibrateConfig as they are typed.
type calibrateArgs struct{ algo, size, dtype, format *string }

// addCalibrateFlags registers the flags: those that set a field of c as
// they are into c, the others into the calibrateArgs it returns.
func addCalibrateFlags(fs *pflag.FlagSet, c *bench.CalibrateConfig) *calibrateArgs {
	var a calibrateArgs
	a.algo = fs.String("algo", "auto", "design: auto (the paper's choice by size), single, multi2, multi4 or tree")
	a.size = fs.String("bytes", "1MiB", "vector per host")
	fs.IntVar(&c.Harness.Hosts, "hosts", 8, "hosts P")
	a.dtype = fs.String("dtype", "int32", "element type")
	fs.IntVar(&c.Runs, "runs", 5, "rounds, each measuring A, tau, D and the packets/s once; the medians are reported")
	fs.DurationVar(&c.RunTime, "run-time", 150*time.Millisecond, "wall time of one run (whole allreduces are repeated to fill it)")
	a.format = fs.String("format", "table", "table or json")
	return &a
}

// resolve sets c's harness from the flags given as text: its design,
// dtype and elements, and the operator and window every calibration uses.
func (a *calibrateArgs) resolve(c *bench.CalibrateConfig) error {
	if err := checkFormat(*a.format, "table", "json"); err != nil {
		return err
	}
	h := &c.Harness
	d, err := models.ParseDesign(*a.algo)
	if err != nil {
		return flagError("--algo", err)
	}
	h.Algo, h.Buffers = d.Algo, d.Buffers
	if h.DType, err = wire.ParseDType(*a.dtype); err != nil {
		return flagError("--dtype", err)
	}
	n, err := sizeFlag("bytes", *a.size)
	if err != nil {
		return err
	}
	if es := int64(h.DType.Size()); n%es != 0 || n > 64<<20 {
		return flagError("--bytes", fmt.Errorf("%s: must be a multiple of the %s size (%d) up to 64MiB", *a.size, h.DType, es))
	}
	h.Op, h.Elements, h.Window = wire.OpSum, int(n)/h.DType.Size(), 64
	return nil
}
