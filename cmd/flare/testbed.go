package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/flare-net/flare/internal/jsonl"
	"github.com/flare-net/flare/testbed"
)

func runTestbed(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("testbed", "An emulated cluster on this box: a network namespace per host and per switch, veth links\n"+
		"shaped to --link in each direction (tc tbf on both ends), optional loss per link (nftables);\n"+
		"the switch daemon(s) in their namespaces, one `flare allreduce` process per host in its own,\n"+
		"the host ring baseline over the same links. Prints time, algbw, per-link bytes and\n"+
		"utilisation, the link-bound ideal and the model's prediction for the same links, and whether\n"+
		"a run was CPU-bound. Needs root and iproute2 (nftables for --loss); everything is removed\n"+
		"on exit, error or Ctrl-C.",
		"  flare testbed --hosts 4 --link 200Mbit --bytes 4MiB\n"+
			"  flare testbed --hosts 8 --link 1Gbit --bytes 16MiB --json\n"+
			"  flare testbed --tree 4x4 --link 200Mbit --uplink 200Mbit --paths switch,ring,sparse,host-sparse --densities 0.002,0.01\n"+
			"  flare testbed --hosts 8 --sweep-link 100Mbit..10Gbit --sweep-packets 1KiB,8KiB\n", stdout)
	cfg := testbed.Config{Log: stderr}
	tf := addTestbedFlags(fs, &cfg)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := tf.resolve(fs, &cfg); err != nil {
		return err
	}
	var err error
	if cfg.Exe, err = os.Executable(); err != nil {
		return fmt.Errorf("cannot find this binary for the daemons and hosts: %w", err)
	}
	if *tf.sweep != "" {
		return testbedSweep(ctx, cfg, *tf.sweep, *tf.sweepPackets, *tf.asJSON, stdout)
	}
	rows, err := testbed.Run(ctx, cfg)
	if *tf.asJSON {
		if jerr := jsonl.Write(stdout, rows); jerr != nil {
			return jerr
		}
	} else if len(rows) > 0 {
		testbed.WriteTable(stdout, cfg, rows)
	}
	return withFlags(err, testbedFlags)
}

// testbedArgs are `flare testbed`'s flags that set no field of
// testbed.Config as they are: sizes, rates and lists resolve reads, and
// the sweep's and the output's own.
type testbedArgs struct {
	tree, link, uplink, loss, size, packet, switchArgs, sweep *string
	paths, sweepPackets                                       *[]string
	asJSON                                                    *bool
}

// addTestbedFlags registers the testbed's flags: those that set a field
// of c as they are into c, the others into the testbedArgs it returns.
func addTestbedFlags(fs *pflag.FlagSet, c *testbed.Config) *testbedArgs {
	var tf testbedArgs
	fs.IntVar(&c.Hosts, "hosts", 8, "hosts P on one switch (2..64)")
	tf.tree = fs.String("tree", "", "LEAVESxHOSTS (e.g. 4x4): a root and LEAVES leaf switches, HOSTS hosts per leaf")
	tf.link = fs.String("link", "1Gbit", "every host link's rate, each direction (tc units: 200Mbit, 1Gbit)")
	tf.uplink = fs.String("uplink", "", "with --tree: every leaf-root link's rate (default: --link)")
	tf.loss = fs.String("loss", "0", "fraction of packets dropped on every link, each direction: 0.01 or 1%")
	tf.size = fs.String("bytes", "4MiB", "vector per host")
	tf.packet = fs.String("packet", "1KiB", "the switch's payload per packet (8..8KiB)")
	fs.IntVar(&c.Iters, "iters", 3, "measured calls per path")
	fs.IntVar(&c.Warmup, "warmup", 1, "unmeasured calls first")
	tf.paths = fs.StringSlice("paths", []string{testbed.PathSwitch, testbed.PathRing}, "switch, ring, sparse (in-network, hash), host-sparse")
	fs.Float64SliceVar(&c.Densities, "densities", []float64{0.002, 0.01}, "for the sparse paths: fractions of non-zeros per host")
	fs.Float64Var(&c.Overlap, "overlap", 0.5, "sparse: fraction of a host's indices all hosts share")
	fs.IntVar(&c.Window, "window", 0, "blocks in flight per host the switch grants (0: 1.5 ms of the link's rate, at least 32, at most 10 ms of it)")
	tf.switchArgs = fs.String("switch-args", "", "extra flags for every switch daemon, space-separated (e.g. \"--clusters 2 --cores 4\")")
	fs.DurationVar(&c.Timeout, "timeout", 120*time.Second, "limit of one allreduce call")
	tf.sweep = fs.String("sweep-link", "", "LO..HI (e.g. 100Mbit..10Gbit): the highest link rate at which in-network time stays within 10% of ideal")
	tf.sweepPackets = fs.StringSlice("sweep-packets", []string{"1KiB", "8KiB"}, "with --sweep-link: packet sizes")
	tf.asJSON = fs.Bool("json", false, "print one JSON object per run (flare bench --json's fields, link_bps, ideal_s, cpu_bound)")
	return &tf
}

// resolve sets c's fields that the flags give as text.
func (tf *testbedArgs) resolve(fs *pflag.FlagSet, c *testbed.Config) error {
	var err error
	if c.LinkBps, err = testbed.ParseRate(*tf.link); err != nil {
		return flagError("--link", err)
	}
	if *tf.uplink != "" {
		if c.UplinkBps, err = testbed.ParseRate(*tf.uplink); err != nil {
			return flagError("--uplink", err)
		}
	}
	if c.Loss, err = parseFraction(*tf.loss); err != nil {
		return flagError("--loss", err)
	}
	if c.Bytes, err = parseSize(*tf.size); err != nil {
		return flagError("--bytes", err)
	}
	pb, err := parseSize(*tf.packet)
	if err != nil {
		return flagError("--packet", err)
	}
	c.PacketBytes, c.Paths, c.SwitchArgs = int(pb), *tf.paths, strings.Fields(*tf.switchArgs)
	return setTestbedTree(c, *tf.tree, fs.Changed("hosts"), *tf.uplink != "")
}

// setTestbedTree sets the tree's shape from --tree LxH, which --hosts
// cannot join and --uplink needs.
func setTestbedTree(cfg *testbed.Config, tree string, hosts, uplink bool) error {
	if tree == "" {
		if uplink {
			return fmt.Errorf("--uplink: only with --tree")
		}
		return nil
	}
	shape, err := parseTreeShape(tree)
	if err != nil {
		return err
	}
	if hosts {
		return fmt.Errorf("--tree with --hosts: give one")
	}
	cfg.Leaves, cfg.PerLeaf = shape.Leaves, shape.Hosts
	return nil
}

// parseFraction reads 0.01 or 1%.
func parseFraction(s string) (float64, error) {
	t := strings.TrimSpace(s)
	div := 1.0
	if p, ok := strings.CutSuffix(t, "%"); ok {
		t, div = p, 100
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: want a fraction such as 0.01 or a percentage such as 1%%", s)
	}
	return v / div, nil
}

// testbedSweep runs the capacity sweep and prints its rows and answer.
func testbedSweep(ctx context.Context, cfg testbed.Config, span string, packets []string, asJSON bool, stdout io.Writer) error {
	lo, hi, ok := strings.Cut(span, "..")
	if !ok {
		return fmt.Errorf("--sweep-link %q: want LO..HI such as 100Mbit..10Gbit", span)
	}
	loR, err := testbed.ParseRate(lo)
	if err != nil {
		return flagError("--sweep-link", err)
	}
	hiR, err := testbed.ParseRate(hi)
	if err != nil {
		return flagError("--sweep-link", err)
	}
	rates, err := testbed.SweepRates(loR, hiR)
	if err != nil {
		return flagError("--sweep-link", err)
	}
	var pbs []int
	for _, p := range packets {
		n, err := parseSize(p)
		if err != nil {
			return flagError("--sweep-packets", err)
		}
		pbs = append(pbs, int(n))
	}
	if !asJSON {
		testbed.WriteSweepHeader(stdout, cfg)
	}
	emit := func(r testbed.SweepRow) {
		if asJSON {
			_ = json.NewEncoder(stdout).Encode(r)
			return
		}
		testbed.WriteSweepRow(stdout, r)
	}
	caps, err := testbed.Sweep(ctx, cfg, rates, pbs, emit)
	for _, c := range caps {
		if asJSON {
			_ = json.NewEncoder(stdout).Encode(c)
			continue
		}
		testbed.WriteCapacity(stdout, c)
	}
	return withFlags(err, testbedFlags)
}
