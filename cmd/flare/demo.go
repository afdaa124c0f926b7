package main

import (
	"context"
	"io"

	"github.com/flare-net/flare/internal/bench"
)

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo", "Start a Flare switch on loopback and P hosts in this process, allreduce several sizes\nwith the automatic design and the reproducible tree, verify every element and print the speed.",
		"  flare demo\n  flare demo --ranks 16\n", stdout)
	var d bench.Demo
	fs.IntVar(&d.Ranks, "ranks", 8, "hosts (1..1024)")
	fs.IntVar(&d.Iters, "iters", 3, "measured calls per row")
	if err := parse(fs, args); err != nil {
		return err
	}
	return withFlags(d.Run(ctx, stdout), demoFlags)
}
