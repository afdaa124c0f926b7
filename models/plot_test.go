package models

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"

	"github.com/flare-net/flare/wire"
)

var figures = flag.Bool("figures", false, "regenerate the model's figures in ../docs/figures")

// figureDTypes are the element types of the Figure 11 (right) analogue.
var figureDTypes = []wire.DType{wire.Int32, wire.Int16, wire.Int8, wire.Float32, wire.BFloat16}

// writeFigures draws the figures docs/MODEL.md shows into dir.
func writeFigures(t *testing.T, dir, ext string) []string {
	t.Helper()
	var files []string
	for _, preset := range Presets() {
		p := mustPreset(t, preset)
		f := filepath.Join(dir, preset+ext)
		if err := Plot(f, Sweep(p, Designs(), 4<<10, 4<<20)); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	p := mustPreset(t, PresetFlare)
	var rows []Row
	var labels []string
	for _, d := range figureDTypes {
		q := p
		q.DType, q.CyclesPerPacket = d, 0
		rows = append(rows, Evaluate(q, ChoosePaper(q.Bytes, false)))
		labels = append(labels, d.String())
	}
	f := filepath.Join(dir, "flare-dtypes"+ext)
	if err := PlotDTypes(f, rows, labels); err != nil {
		t.Fatal(err)
	}
	return append(files, f)
}

// TestFigures draws the figures; with -figures it rewrites docs/figures
// (go test ./models -run TestFigures -figures).
func TestFigures(t *testing.T) {
	if *figures {
		writeFigures(t, "../docs/figures", ".svg")
		return
	}
	dir := t.TempDir()
	for _, ext := range []string{".svg", ".png"} {
		for _, f := range writeFigures(t, dir, ext) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			switch ext {
			case ".svg":
				if !bytes.Contains(b[:min(len(b), 200)], []byte("<svg")) || !bytes.Contains(b, []byte("SHARP")) && !strings.Contains(f, "dtypes") {
					t.Errorf("%s: not an SVG with the reference lines", f)
				}
			case ".png":
				if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
					t.Errorf("%s: not a PNG", f)
				}
			}
		}
	}
}

func TestPlotErrors(t *testing.T) {
	dir := t.TempDir()
	if err := Plot(filepath.Join(dir, "x.svg"), nil); err == nil {
		t.Error("Plot accepted no rows")
	}
	rows := Sweep(mustPreset(t, PresetPsPIN), Designs(), 4<<10, 8<<10)
	if err := Plot(filepath.Join(dir, "x.pdf"), rows); err == nil || !strings.Contains(err.Error(), ".svg or .png") {
		t.Errorf("Plot to .pdf: %v", err)
	}
	if err := PlotDTypes(filepath.Join(dir, "x.svg"), nil, nil); err == nil {
		t.Error("PlotDTypes accepted no rows")
	}
}

// The size axis marks every power of two in range, labelled at powers of
// four; the memory axis the same, from the power of two at or below the
// least memory to the one at or above the most.
func TestTicks(t *testing.T) {
	label := func(ts []plot.Tick) (s []string) {
		for _, t := range ts {
			s = append(s, FormatBytes(t.Value)+"="+t.Label)
		}
		return s
	}
	got := strings.Join(label(sizeTicks{}.Ticks(4<<10, 4<<20)), " ")
	if want := "4KiB=4KiB 8KiB= 16KiB=16KiB 32KiB= 64KiB=64KiB 128KiB= 256KiB=256KiB 512KiB= 1MiB=1MiB 2MiB= 4MiB=4MiB"; got != want {
		t.Errorf("size ticks %s, want %s", got, want)
	}
	got = strings.Join(label(byteTicks(3000, 70000)), " ")
	if want := "2KiB= 4KiB=4KiB 8KiB= 16KiB=16KiB 32KiB= 64KiB=64KiB 128KiB="; got != want {
		t.Errorf("byte ticks %s, want %s", got, want)
	}
}

// A sweep's figure names every design once in each panel's legend, both
// reference lines and both panels, and labels the memory axis in bytes;
// the dtype figure names every bar and its reference. An upper-case
// extension is taken.
func TestPlotNamesEverything(t *testing.T) {
	dir := t.TempDir()
	rows := Sweep(mustPreset(t, PresetFlare), Designs(), 4<<10, 1<<20)
	f := filepath.Join(dir, "sweep.SVG")
	if err := Plot(f, rows); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"SwitchML 1.6 Tbit/s", "SHARP 3.2 Tbit/s", ">Bandwidth<", ">Working memory (Little"}
	lo, hi := math.Inf(1), 0.0
	for _, r := range rows {
		want = append(want, ">"+r.Algo+"<")
		lo, hi = math.Min(lo, r.MemoryBytes), math.Max(hi, r.MemoryBytes)
	}
	for _, tk := range byteTicks(lo, hi) {
		if tk.Label != "" && tk.Value >= lo && tk.Value <= hi && tk.Value > 1<<20 { // on the axis, not a size tick
			want = append(want, ">"+tk.Label+"<")
		}
	}
	for _, w := range want {
		if !bytes.Contains(b, []byte(w)) {
			t.Errorf("%s lacks %q", f, w)
		}
	}
	for _, d := range Designs() { // once in each panel's legend
		if n := bytes.Count(b, []byte(">"+d.String()+"<")); n != 2 {
			t.Errorf("%s names %s %d times, want twice", f, d, n)
		}
	}

	labels := []string{"int32", "int16", "bfloat16"}
	p := mustPreset(t, PresetFlare)
	f = filepath.Join(dir, "dtypes.svg")
	if err := PlotDTypes(f, []Row{Evaluate(p, ChoosePaper(p.Bytes, false)), Evaluate(p, ChoosePaper(p.Bytes, false)), Evaluate(p, ChoosePaper(p.Bytes, false))}, labels); err != nil {
		t.Fatal(err)
	}
	if b, err = os.ReadFile(f); err != nil {
		t.Fatal(err)
	}
	for _, w := range append(labels, "SwitchML (int32 only)") {
		if !bytes.Contains(b, []byte(">"+w+"<")) {
			t.Errorf("%s lacks %q", f, w)
		}
	}
}
