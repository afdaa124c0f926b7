package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"
	"time"

	swtch "github.com/flare-net/flare/switch"
	"github.com/flare-net/flare/wire"
)

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo", "Start a Flare switch on loopback and P hosts in this process, allreduce several sizes\nwith the automatic design and the reproducible tree, verify every element and print the speed.",
		"  flare demo\n  flare demo --ranks 16\n", stdout)
	ranks := fs.Int("ranks", 8, "hosts (1..1024)")
	iters := fs.Int("iters", 3, "measured calls per row")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *ranks < 1 || *ranks > 1024 {
		return fmt.Errorf("--ranks %d: must be in 1..1024", *ranks)
	}
	sw, err := swtch.New(swtch.Config{Listen: "127.0.0.1:0", Admin: "off", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	swCtx, stop := context.WithCancel(ctx)
	swDone := make(chan error, 1)
	go func() { swDone <- sw.Run(swCtx) }()
	defer func() { stop(); <-swDone }()
	select {
	case <-sw.Ready():
	case err := <-swDone:
		return err
	}
	fmt.Fprintf(stdout, "Flare demo: a switch on %s (4 clusters × 8 cores), %d hosts over UDP, float32 sum, every element verified\n\n", sw.Addr(), *ranks)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "size\talgo\tmedian\tp99\talgbw\tpackets/s\tretransmits\tverified\t")
	job := uint32(100)
	for _, size := range []int64{4 << 10, 192 << 10, 384 << 10, 1 << 20, 4 << 20} {
		for _, algo := range []string{"auto", "tree"} {
			job++
			c := arConfig{sw: sw.Addr().String(), job: job, token: randomToken(), ranks: *ranks, count: int(size / 4),
				dtype: wire.Float32, op: wire.OpSum, algo: algo, iters: *iters, warmup: 1, verify: true, timeout: 30 * time.Second}
			res, err := measure(ctx, c)
			if err != nil {
				tw.Flush()
				return fmt.Errorf("%s %s: %w", formatSize(size), algo, err)
			}
			blocks := (size + 1023) / 1024
			pps := float64(blocks*int64(*ranks)*2) / res.MedianS // data in + results out
			fmt.Fprintf(tw, "%s\t%s\t%.2f ms\t%.2f ms\t%.3f GB/s\t%.0f\t%d\tyes\t\n", formatSize(size), res.Algo,
				res.MedianS*1e3, res.P99S*1e3, res.AlgbwGBps, pps, res.Retransmits)
		}
	}
	tw.Flush()
	fmt.Fprintln(stdout, "\npackets/s counts datagrams through the switch (P per block in, P per block out).")
	return nil
}
