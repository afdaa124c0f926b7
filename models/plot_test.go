package models

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
