package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"text/tabwriter"

	"github.com/flare-net/flare/handlers"
	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/wire"
)

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo", "Run P emulated hosts against a PsPIN-style processing unit in this process, for\nseveral sizes and aggregation designs, verify every element and print the speed.",
		"  flare demo\n  flare demo --hosts 16 --clusters 8\n", stdout)
	hosts := fs.Int("hosts", 8, "emulated hosts (1..1024)")
	clusters := fs.Int("clusters", hpu.DefaultClusters, "processing-unit clusters")
	cores := fs.Int("cores", hpu.DefaultCoresPerCluster, "cores per cluster")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *hosts < 1 || *hosts > 1024 {
		return fmt.Errorf("--hosts %d: must be in 1..1024", *hosts)
	}
	hcfg := hpu.Config{Clusters: *clusters, CoresPerCluster: *cores, L1Bytes: 4 << 20}.WithDefaults()
	if err := hcfg.Validate(); err != nil {
		return fmt.Errorf("--clusters/--cores: %w", err)
	}
	fmt.Fprintf(stdout, "Flare in-process demo: %d hosts, %d clusters × %d cores, float32 sum, every result verified\n\n",
		*hosts, hcfg.Clusters, hcfg.CoresPerCluster)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "size\talgo\tpackets\ttime\tpackets/s\tτ (cycles)\tverified\t")
	r := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int64{4 << 10, 192 << 10, 384 << 10, 1 << 20} {
		n := int(size / 4)
		inputs := make([][]byte, *hosts)
		for i := range inputs {
			inputs[i] = make([]byte, size)
			for j := 0; j < n; j++ {
				// Small integers: exact in float32 whatever the order.
				v := float32(r.IntN(2001) - 1000)
				putFloat32(inputs[i][4*j:], v)
			}
		}
		for _, algo := range []wire.Algo{wire.AlgoAuto, wire.AlgoTree} {
			res, err := handlers.RunHarness(ctx, handlers.HarnessConfig{
				HPU: hcfg, Hosts: *hosts, DType: wire.Float32, Op: wire.OpSum, Algo: algo, Elements: n, Window: 64,
			}, inputs)
			if err != nil {
				return err
			}
			verified := "yes"
			for _, out := range res.Out {
				if err := handlers.Check(wire.Float32, wire.OpSum, inputs, out); err != nil {
					verified = "NO: " + err.Error()
				}
			}
			name := res.Algo.String()
			if res.Algo == wire.AlgoMulti {
				name = fmt.Sprintf("multi%d", res.Buffers)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.2f ms\t%.0f\t%.0f\t%s\t\n", formatSize(size), name, res.Packets,
				float64(res.Elapsed.Microseconds())/1e3, float64(res.Packets)/res.Elapsed.Seconds(), res.HPU.TauCycles(), verified)
			if verified != "yes" {
				tw.Flush()
				return fmt.Errorf("%s %s: result does not match the reference", formatSize(size), name)
			}
		}
	}
	return tw.Flush()
}
