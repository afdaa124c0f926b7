package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/flare-net/flare/internal/jsonl"
	"github.com/flare-net/flare/models"
	"github.com/flare-net/flare/wire"
)

// modelCommands are the subcommands of `flare model`: the analytic model
// of docs/MODEL.md (package models) as a tool.
func modelCommands() map[string]command {
	return map[string]command{
		"choose":      {"the design for a message size: the paper's rule or the model's best within a budget", runModelChoose},
		"sweep":       {"tau, bandwidth, latency and memory of each design over sizes (table, csv, json, plot)", runModelSweep},
		"size":        {"the Little's-law working memory of one job", runModelSize},
		"collectives": {"host allreduce algorithms vs in-network aggregation (the Figure 15 analogue)", runModelCollectives},
		"sparse":      {"sparse hash and array storage against density", runModelSparse},
		"calibrate":   {"measure this machine's handler time and predict the in-process packets/s", runModelCalibrate},
	}
}

func runModel(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmds := modelCommands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		modelUsage(stdout, cmds)
		return nil
	}
	c, ok := cmds[args[0]]
	if !ok {
		if s := closest(args[0], sortedKeys(cmds)); s != "" {
			return fmt.Errorf("model: unknown subcommand %q; did you mean %q? (see 'flare model --help')", args[0], s)
		}
		modelUsage(stderr, cmds)
		return fmt.Errorf("model: unknown subcommand %q (see 'flare model --help')", args[0])
	}
	return c.run(ctx, args[1:], stdout, stderr)
}

func modelUsage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, "usage: flare model <subcommand> [flags]\n\n"+
		"The analytic model of a PsPIN-style switch running Flare's handlers (docs/MODEL.md).\n\nsubcommands:")
	for _, name := range sortedKeys(cmds) {
		fmt.Fprintf(w, "  %-12s %s\n", name, cmds[name].summary)
	}
	fmt.Fprint(w, "\nRun 'flare model <subcommand> --help' for its flags.\n\nexamples:\n"+
		"  flare model choose --bytes 300KiB                # multi4, the paper's rule\n"+
		"  flare model sweep --preset flare --plot flare.svg\n"+
		"  flare model size --bytes 1MiB --hosts 64 --algo tree\n"+
		"  flare model calibrate\n")
}

// paramFlags are the model parameters every model subcommand and `flare
// sim` take: a preset and the fields worth changing from the command line.
type paramFlags struct {
	fs       *pflag.FlagSet
	preset   string
	hosts    int
	dtype    string
	clusters int
	subset   int
	window   int
	hostGbps float64
	copies   bool
	reading  string
	treeM    string
}

// addParamFlags registers the parameter flags; copies is --copies's default
// and --tree-m's is paper.
func addParamFlags(fs *pflag.FlagSet, copies bool) *paramFlags {
	return addParamFlagsTreeM(fs, copies, treeMPaper)
}

// The values of --tree-m: the tree's M as the paper's (P−1)/log2 P or from
// the staggered arrival order (models.Params.TreeArrivalOrder).
const (
	treeMPaper = "paper"
	treeMOrder = "order"
)

// addParamFlagsTreeM is addParamFlags with treeM as --tree-m's default.
func addParamFlagsTreeM(fs *pflag.FlagSet, copies bool, treeM string) *paramFlags {
	f := &paramFlags{fs: fs}
	fs.StringVar(&f.preset, "preset", models.PresetFlare,
		"flare (the paper's switch: 64 clusters x 8 cores, 64 hosts) or pspin (one PsPIN unit: 4 x 8 cores, 8 hosts)")
	fs.IntVar(&f.hosts, "hosts", 0, "hosts P (default: the preset's)")
	fs.StringVar(&f.dtype, "dtype", "int32", "element type: int8, int16, int32, int64, float32, float64, bfloat16 or float16")
	fs.IntVar(&f.clusters, "clusters", 0, "clusters of the switch (default: the preset's)")
	fs.IntVar(&f.subset, "subset", 0, "S, the cores of a cluster that may run the packets of one block (default: all)")
	fs.IntVar(&f.window, "window", 0, "blocks in flight per host, the stagger group (default: the whole vector)")
	fs.Float64Var(&f.hostGbps, "host-gbps", 0, "each host's line rate in Gbit/s, which sets the inter-arrival (default: 100)")
	fs.BoolVar(&f.copies, "copies", copies, "charge the handlers' DMA copies in the model (the paper's model takes them as free)")
	fs.StringVar(&f.reading, "reading", "service", "single-buffer contention formula: service (L(n+1)/2) or waiting-only (the printed L(n-1)/2)")
	fs.StringVar(&f.treeM, "tree-m", treeM, "the tree's buffers per block M: paper ((P-1)/log2 P) or order (from the order in\n"+
		"which staggered hosts deliver a block's leaves to its S cores, as 'flare sim --compare' uses; docs/MODEL.md)")
	return f
}

// params builds and validates the model parameters the flags ask for.
func (f *paramFlags) params() (models.Params, error) {
	p, err := models.Preset(f.preset)
	if err != nil {
		return p, flagError("--preset", err)
	}
	changed := f.fs.Changed
	if changed("hosts") {
		p.Hosts, p.InterArrival = f.hosts, 0 // δ is all hosts together: derive it again
	}
	if changed("dtype") {
		if p.DType, err = wire.ParseDType(f.dtype); err != nil {
			return p, flagError("--dtype", err)
		}
		p.CyclesPerPacket = 0 // L follows the type
	}
	if changed("clusters") {
		p.Clusters = f.clusters
	}
	if changed("subset") {
		p.SubsetS = f.subset
	}
	if changed("window") {
		p.Window = f.window
	}
	if changed("host-gbps") {
		p.HostGbps, p.InterArrival = f.hostGbps, 0
	}
	p.CountCopies = f.copies
	if p.Reading, err = models.ParseReading(f.reading); err != nil {
		return p, flagError("--reading", err)
	}
	switch f.treeM {
	case treeMPaper:
		p.TreeArrivalOrder = false
	case treeMOrder:
		p.TreeArrivalOrder = true
	default:
		return p, flagError("--tree-m", fmt.Errorf("%q: want paper or order", f.treeM))
	}
	if err := p.Validate(); err != nil {
		return p, paramError(err)
	}
	return p, nil
}

// paramFlag names the flag that sets a models.Params field, so that a
// Validate error names what the user typed.
var paramFlag = map[string]string{
	"Hosts": "--hosts", "Clusters": "--clusters", "SubsetS": "--subset", "Window": "--window",
	"HostGbps": "--host-gbps", "InterArrival": "--host-gbps", "DType": "--dtype", "PacketBytes": "--dtype",
	"Bytes": "--bytes",
}

// paramError prefixes a models.Params or models.CollectiveParams
// validation error ("models: Params.Hosts = 1: ...") with the flag that set
// the field.
func paramError(err error) error {
	_, rest, ok := strings.Cut(err.Error(), "Params.")
	if !ok {
		return err
	}
	field, _, _ := strings.Cut(rest, " ")
	if f, ok := paramFlag[field]; ok {
		return flagError(f, err)
	}
	if f, ok := collectiveFlag[field]; ok {
		return flagError(f, err)
	}
	return err
}

// checkFormat reports a --format value that is not one of allowed.
func checkFormat(format string, allowed ...string) error {
	if slices.Contains(allowed, format) {
		return nil
	}
	return flagError("--format", fmt.Errorf("%q: want %s", format, strings.Join(allowed, ", ")))
}

// sizeFlag parses the size given to flag name.
func sizeFlag(name, s string) (int64, error) {
	n, err := parseSize(s)
	if err != nil {
		return 0, flagError("--"+name, err)
	}
	if n < 1 || n > models.MaxBytes {
		return 0, flagError("--"+name, fmt.Errorf("%s: must be in 1B..1TiB", s))
	}
	return n, nil
}

// sweepSizes is from, 2·from, 4·from, ... up to to, as models.Sweep walks.
func sweepSizes(fromFlag, toFlag string) ([]int64, error) {
	from, err := sizeFlag("from", fromFlag)
	if err != nil {
		return nil, err
	}
	to, err := sizeFlag("to", toFlag)
	if err != nil {
		return nil, err
	}
	if to < from {
		return nil, flagError("--to", fmt.Errorf("%s is below --from %s", toFlag, fromFlag))
	}
	return models.Sizes(from, to), nil
}

func runModelChoose(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlags("model choose", "Print the dense design for an allreduce of --bytes per host: single, multi2, multi4 or tree.\n"+
		"--policy paper (the default) is the Flare paper's rule (single above 512KiB, multi4 above 256KiB,\n"+
		"multi2 above 128KiB, tree otherwise; tree when reproducible), the rule the switch uses.\n"+
		"--policy model evaluates the designs on the preset's switch and takes the highest bandwidth\n"+
		"whose Little's-law working memory fits --budget (docs/MODEL.md says where the two differ).",
		"  flare model choose --bytes 300KiB                               # multi4\n"+
			"  flare model choose --bytes 4MiB --reproducible                  # tree\n"+
			"  flare model choose --bytes 512KiB --policy model --budget 1MiB  # single\n", stdout)
	pf := addParamFlags(fs, false)
	size := fs.String("bytes", "", "bytes per host (required)")
	repro := fs.Bool("reproducible", false, "reproducible floating-point sums: always tree")
	policy := fs.String("policy", "paper", "paper or model")
	budget := fs.String("budget", "0", "the model policy's memory budget for the job (0: none)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if !fs.Changed("bytes") {
		return usageError(fs, "--bytes is required")
	}
	n, err := sizeFlag("bytes", *size)
	if err != nil {
		return err
	}
	var d models.Design
	switch *policy {
	case "paper":
		if fs.Changed("budget") {
			return flagError("--budget", errors.New("only the model policy takes a budget (add --policy model)"))
		}
		d = models.ChoosePaper(n, *repro)
	case "model":
		b, err := parseSize(*budget)
		if err != nil {
			return flagError("--budget", err)
		}
		p, err := pf.params()
		if err != nil {
			return err
		}
		d = models.Tree
		if !*repro {
			d = models.ChooseModel(p, n, b)
		}
	default:
		return flagError("--policy", fmt.Errorf("%q: want paper or model", *policy))
	}
	_, err = fmt.Fprintln(stdout, d)
	return err
}

func runModelSize(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlags("model size", "The switch memory one allreduce job needs, by Little's law: R = M x (B/P) x L buffers\n"+
		"(M buffers per block, bandwidth B in packets per cycle over P hosts, block latency L),\n"+
		"rounded up and at least one block's peak (1 single, B multi, P tree), in buffers of one\n"+
		"packet. --algo auto is the paper's choice for the size.",
		"  flare model size --bytes 1MiB --hosts 64\n"+
			"  flare model size --bytes 256KiB --hosts 16 --algo single,multi2,multi4,tree --preset pspin\n", stdout)
	pf := addParamFlags(fs, false)
	size := fs.String("bytes", "1MiB", "bytes per host")
	algos := fs.String("algo", "auto", "designs, comma-separated: auto, single, multi2, multi4, multi<B>, tree")
	format := fs.String("format", "table", "table or json")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkFormat(*format, "table", "json"); err != nil {
		return err
	}
	ds, err := models.ParseDesigns(*algos)
	if err != nil {
		return flagError("--algo", err)
	}
	p, err := pf.params()
	if err != nil {
		return err
	}
	if p.Bytes, err = sizeFlag("bytes", *size); err != nil {
		return err
	}
	rows := models.JobSizes(p, ds)
	if *format == "json" {
		return jsonl.Write(stdout, rows)
	}
	return models.WriteJobSizeTable(stdout, p, rows)
}
