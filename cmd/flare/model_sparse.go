package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/flare-net/flare/internal/jsonl"
	"github.com/flare-net/flare/models"
)

func runModelSparse(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlags("model sparse", "The sparse model (the paper's section 7) for hash and array storage against density: cycles\n"+
		"per pair and per packet, flush cost, tau and bandwidth, memory per block and for one block per\n"+
		"core, whether that fits the switch's L1, and the hash table's spill traffic.",
		"  flare model sparse\n"+
			"  flare model sparse --storage array --density 0.01,0.05 --hosts 8 --preset pspin\n", stdout)
	pf := addParamFlags(fs, false)
	storages := fs.StringSlice("storage", []string{models.StorageHash, models.StorageArray}, "hash, array, or both")
	densities := fs.String("density", "", "densities, comma-separated, in (0, 1] (default: 0.1% to 20%)")
	format := fs.String("format", "table", "table or json")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkFormat(*format, "table", "json"); err != nil {
		return err
	}
	for _, s := range *storages {
		if s != models.StorageHash && s != models.StorageArray {
			return flagError("--storage", fmt.Errorf("%q: want hash or array", s))
		}
	}
	ds := models.SparseDensities()
	if *densities != "" {
		ds = nil
		for f := range strings.SplitSeq(*densities, ",") {
			d, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil || !(d > 0 && d <= 1) {
				return flagError("--density", fmt.Errorf("%q: want a fraction in (0, 1], such as 0.01", f))
			}
			ds = append(ds, d)
		}
	}
	p, err := pf.params()
	if err != nil {
		return err
	}
	rows := models.SparseSweep(p, *storages, ds)
	for _, r := range rows {
		if r.Err != "" {
			return fmt.Errorf("model sparse: %s", r.Err)
		}
	}
	if *format == "json" {
		return jsonl.Write(stdout, rows)
	}
	fmt.Fprintf(stdout, "# %s; %d pairs per host per block\n", models.Describe(p), p.SparsePairsPerBlock)
	return models.WriteSparseTable(stdout, rows)
}
