package main

import (
	"context"
	"fmt"
	"io"
	"time"

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
	algo := fs.String("algo", "auto", "design: auto (the paper's choice by size), single, multi2, multi4 or tree")
	size := fs.String("bytes", "1MiB", "vector per host")
	hosts := fs.Int("hosts", 8, "hosts P")
	dtype := fs.String("dtype", "int32", "element type")
	runs := fs.Int("runs", 5, "rounds, each measuring A, tau, D and the packets/s once; the medians are reported")
	runTime := fs.Duration("run-time", 150*time.Millisecond, "wall time of one run (whole allreduces are repeated to fill it)")
	format := fs.String("format", "table", "table or json")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkFormat(*format, "table", "json"); err != nil {
		return err
	}
	var c bench.CalibrateConfig
	h := &c.Harness
	d, err := models.ParseDesign(*algo)
	if err != nil {
		return flagError("--algo", err)
	}
	h.Algo, h.Buffers = d.Algo, d.Buffers
	if h.DType, err = wire.ParseDType(*dtype); err != nil {
		return flagError("--dtype", err)
	}
	n, err := sizeFlag("bytes", *size)
	if err != nil {
		return err
	}
	if es := int64(h.DType.Size()); n%es != 0 || n > 64<<20 {
		return flagError("--bytes", fmt.Errorf("%s: must be a multiple of the %s size (%d) up to 64MiB", *size, h.DType, es))
	}
	h.Hosts, h.Op, h.Elements, h.Window = *hosts, wire.OpSum, int(n)/h.DType.Size(), 64
	c.Runs, c.RunTime = *runs, *runTime
	cal, err := bench.Calibrate(ctx, c)
	if err != nil {
		return withFlags(err, calibrateFlags)
	}
	if *format == "json" {
		return jsonl.Write(stdout, []bench.Calibration{cal})
	}
	return bench.WriteCalibration(stdout, cal)
}
