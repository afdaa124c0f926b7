package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/flare-net/flare/internal/jsonl"
	"github.com/flare-net/flare/models"
)

// allDesigns is the --algos default: the four designs of the paper's
// Figure 10.
const allDesigns = "single,multi2,multi4,tree"

func runModelSweep(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlags("model sweep", "Evaluate the analytic model for each design at sizes --from, 2x, 4x, ... --to bytes per host:\n"+
		"service time tau, bandwidth, block latency, input-buffer occupancy and Little's-law working\n"+
		"memory. json prints one object per row with the field names of 'flare sim --format json', so\n"+
		"the two join on algo, bytes and hosts; add --copies --tree-m order for the model 'flare sim\n"+
		"--compare' sets beside each run. --plot draws bandwidth (with the SwitchML and SHARP\n"+
		"lines) and memory against size.",
		"  flare model sweep                                          # flare preset, 4KiB..4MiB, table\n"+
			"  flare model sweep --preset pspin --format csv > pspin.csv\n"+
			"  flare model sweep --algos single,tree --hosts 32 --format json\n"+
			"  flare model sweep --copies --tree-m order --format json   # the model of sim --compare\n"+
			"  flare model sweep --plot flare.svg\n", stdout)
	sf := addSweepFlags(fs, false, treeMPaper)
	plot := fs.String("plot", "", "also draw the sweep into FILE.svg or FILE.png")
	if err := parse(fs, args); err != nil {
		return err
	}
	p, ds, sizes, err := sf.resolve()
	if err != nil {
		return err
	}
	rows := models.Sweep(p, ds, sizes[0], sizes[len(sizes)-1])
	if *plot != "" {
		if err := models.Plot(*plot, rows); err != nil {
			return flagError("--plot", err)
		}
	}
	return writeModelRows(stdout, p, rows, *sf.format)
}

// sweepFlags are the flags model sweep and sim share: the parameters, the
// sizes (doubling from --from to --to), the designs and the format.
type sweepFlags struct {
	pf                      *paramFlags
	from, to, algos, format *string
}

func addSweepFlags(fs *pflag.FlagSet, copies bool, treeM string) *sweepFlags {
	return &sweepFlags{
		pf:     addParamFlagsTreeM(fs, copies, treeM),
		from:   fs.String("from", "4KiB", "smallest size per host"),
		to:     fs.String("to", "4MiB", "largest size per host (sizes double from --from)"),
		algos:  fs.String("algos", allDesigns, "designs, comma-separated: single, multi2, multi4, multi<B>, tree, auto"),
		format: fs.String("format", "table", "table, csv or json"),
	}
}

// resolve checks the flags and returns the parameters, designs and sizes.
func (f *sweepFlags) resolve() (models.Params, []models.Design, []int64, error) {
	if err := checkFormat(*f.format, "table", "csv", "json"); err != nil {
		return models.Params{}, nil, nil, err
	}
	ds, err := models.ParseDesigns(*f.algos)
	if err != nil {
		return models.Params{}, nil, nil, flagError("--algos", err)
	}
	sizes, err := sweepSizes(*f.from, *f.to)
	if err != nil {
		return models.Params{}, nil, nil, err
	}
	p, err := f.pf.params()
	return p, ds, sizes, err
}

// writeModelRows prints model rows as a table (under a line describing
// the parameters), CSV or JSON lines.
func writeModelRows(w io.Writer, p models.Params, rows []models.Row, format string) error {
	switch format {
	case "csv":
		return models.WriteCSV(w, rows)
	case "json":
		return jsonl.Write(w, rows)
	}
	fmt.Fprintf(w, "# %s\n", models.Describe(p))
	return models.WriteTable(w, rows)
}
