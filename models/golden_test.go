package models

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in ../testdata/models")

// goldenDir holds the model's golden tables, at the repository's testdata.
const goldenDir = "../testdata/models"

// checkGolden compares got with the golden file name byte for byte, or
// rewrites it with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join(goldenDir, name)
	if *update {
		if err := os.MkdirAll(goldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./models -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the model's output; if the change is intended, run go test ./models -update and review the diff.\n--- got ---\n%s", path, got)
	}
}

// sweepTable is a preset's golden table: every design, 4 KiB to 4 MiB.
func sweepTable(t *testing.T, preset string) []byte {
	t.Helper()
	p, err := Preset(preset)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# models: preset %q, dense designs, sizes 4KiB..4MiB (go test ./models -update rewrites this file)\n", preset)
	fmt.Fprintf(&b, "# %s\n", Describe(p))
	if err := WriteTable(&b, Sweep(p, Designs(), 4<<10, 4<<20)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestGoldenSweeps(t *testing.T) {
	for _, preset := range Presets() {
		t.Run(preset, func(t *testing.T) {
			checkGolden(t, preset+".golden", sweepTable(t, preset))
		})
	}
}

// chooserTable compares the paper's rule with the model's choice at
// several memory budgets, and with copies counted.
func chooserTable(t *testing.T, preset string) []byte {
	t.Helper()
	p, err := Preset(preset)
	if err != nil {
		t.Fatal(err)
	}
	copies := p
	copies.CountCopies = true
	l1 := int64(p.Clusters) * int64(p.L1Bytes)
	budgets := []int64{0, l1 / 4, l1 / 64}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# models: preset %q, ChoosePaper vs ChooseModel (budget = working memory of the job; switch L1 = %s)\n", preset, FormatBytes(float64(l1)))
	fmt.Fprintf(&b, "%-8s %-8s %-12s %-12s %-12s %-16s\n", "size", "paper", "model", "model("+FormatBytes(float64(budgets[1]))+")",
		"model("+FormatBytes(float64(budgets[2]))+")", "model(copies)")
	for z := int64(4 << 10); z <= 4<<20; z *= 2 {
		fmt.Fprintf(&b, "%-8s %-8s %-12s %-12s %-12s %-16s\n", FormatBytes(float64(z)), ChoosePaper(z, false),
			ChooseModel(p, z, budgets[0]), ChooseModel(p, z, budgets[1]), ChooseModel(p, z, budgets[2]),
			ChooseModel(copies, z, 0))
	}
	return b.Bytes()
}

func TestGoldenChooser(t *testing.T) {
	for _, preset := range Presets() {
		t.Run(preset, func(t *testing.T) {
			checkGolden(t, "chooser-"+preset+".golden", chooserTable(t, preset))
		})
	}
}

func TestGoldenSparse(t *testing.T) {
	for _, preset := range Presets() {
		t.Run(preset, func(t *testing.T) {
			p, err := Preset(preset)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			fmt.Fprintf(&b, "# models: preset %q, sparse storage against density, %d pairs per host per block\n", preset, p.SparsePairsPerBlock)
			fmt.Fprintf(&b, "# %s\n", Describe(p))
			if err := WriteSparseTable(&b, SparseSweep(p, []string{StorageHash, StorageArray}, SparseDensities())); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, "sparse-"+preset+".golden", b.Bytes())
		})
	}
}

func TestGoldenFigure15(t *testing.T) {
	var b bytes.Buffer
	for _, overlap := range []float64{0, 0.5, 1} {
		c := Figure15Params()
		c.Topology = ""
		c.Overlap = overlap
		fmt.Fprintf(&b, "# models: Figure 15 analogue: %d hosts, %s per host, %g Gbit/s links, %g ns per link, %d-port switches, sparse density %g, index overlap %g\n",
			c.Hosts, FormatBytes(float64(c.Bytes)), c.LinkGbps, c.LinkLatencyNs, c.SwitchPorts, c.Density, c.Overlap)
		rows := Collectives(c)
		if err := WriteCollectiveTable(&b, rows); err != nil {
			t.Fatal(err)
		}
		get := func(alg string) CollectiveRow { return findCollective(t, rows, TopoFatTree, alg) }
		for _, cmp := range [][2]string{{AlgInNetworkDense, AlgRing}, {AlgInNetworkSparse, AlgHostSparse}, {AlgInNetworkSparse, AlgInNetworkDense}} {
			a, o := get(cmp[0]), get(cmp[1])
			fmt.Fprintf(&b, "fattree: %s vs %s: %.2fx faster, %.2fx less traffic\n", cmp[0], cmp[1], o.TimeS/a.TimeS, o.WireBytes/a.WireBytes)
		}
	}
	checkGolden(t, "figure15.golden", b.Bytes())
}
