package models

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Reference bandwidths the paper compares with (§6, Figure 11).
const (
	SwitchMLGbps = 1600 // SwitchML on Tofino, integers only
	SHARPGbps    = 3200 // SHARP, 32 ports × 100 Gbit/s
)

// Plot draws rows (a Sweep) as one figure with two panels sharing the size
// axis, one line per design: the bandwidth in Gbit/s with the SwitchML
// (1.6 Tbit/s) and SHARP (3.2 Tbit/s) reference lines (the analogue of the
// paper's Figure 11, left), and the Little's-law working memory 𝓡 in bytes
// on a log scale (Figure 10's memory panel). The format follows file's
// extension: .svg or .png.
func Plot(file string, rows []Row) error {
	if len(rows) == 0 {
		return fmt.Errorf("models: Plot %s: no rows", file)
	}
	var names []string
	series := map[string]plotter.XYs{}
	for _, r := range rows {
		if _, ok := series[r.Algo]; !ok {
			names = append(names, r.Algo)
		}
		series[r.Algo] = append(series[r.Algo], plotter.XY{X: float64(r.Bytes), Y: r.Gbps})
	}
	bwMax := math.Max(SHARPGbps, maxGbps(rows))
	bw := newSizePlot("Bandwidth", "Gbit/s into the switch")
	bw.Y.Min, bw.Y.Max = 0, bwMax*1.1
	// Small sizes are slow and large ones fast, so the bottom right is
	// free; a switch far below the references (one PsPIN unit) gets room
	// above its lines instead.
	bw.Legend.Top, bw.Legend.Left = false, false
	if dataMax := maxGbps(rows); dataMax < SHARPGbps/2 {
		bw.Y.Max = SHARPGbps * 1.5
		bw.Legend.Top, bw.Legend.Left = true, true
	}
	mem := newSizePlot("Working memory (Little's law)", "bytes")
	mem.Y.Scale = plot.LogScale{}
	lo, hi := math.Inf(1), 0.0
	for i, name := range names {
		pts := series[name]
		var mpts plotter.XYs
		for _, r := range rows {
			if r.Algo == name && r.MemoryBytes > 0 {
				mpts = append(mpts, plotter.XY{X: float64(r.Bytes), Y: r.MemoryBytes})
				lo, hi = math.Min(lo, r.MemoryBytes), math.Max(hi, r.MemoryBytes)
			}
		}
		if err := addLine(bw, name, pts, i); err != nil {
			return err
		}
		if err := addLine(mem, name, mpts, i); err != nil {
			return err
		}
	}
	if err := addReferences(bw, []float64{SwitchMLGbps, SHARPGbps},
		[]string{"SwitchML 1.6 Tbit/s", "SHARP 3.2 Tbit/s"}); err != nil {
		return err
	}
	if hi > 0 {
		mem.Y.Tick.Marker = byteTicks(lo, hi)
	}
	return savePanels(file, bw, mem)
}

// PlotDTypes draws the elements aggregated per second of each row as bars
// labelled by row (typically one design at 1 MiB for each dtype: the
// paper's Figure 11, right), with SwitchML's fixed 50·10⁹ int32 elements/s
// (1.6 Tbit/s of 32-bit elements; it cannot pack narrower types) as a
// reference. labels name the bars; nil uses the rows' Algo.
func PlotDTypes(file string, rows []Row, labels []string) error {
	if len(rows) == 0 {
		return fmt.Errorf("models: PlotDTypes %s: no rows", file)
	}
	p := plot.New()
	p.Title.Text = "Elements aggregated per second"
	p.Y.Label.Text = "10^9 elements/s"
	vals := make(plotter.Values, len(rows))
	names := make([]string, len(rows))
	for i, r := range rows {
		vals[i] = r.ElementsPerS / 1e9
		names[i] = r.Algo
		if i < len(labels) {
			names[i] = labels[i]
		}
	}
	bars, err := plotter.NewBarChart(vals, vg.Points(24))
	if err != nil {
		return err
	}
	bars.Color = plotutil.Color(0)
	p.Add(bars)
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.5, float64(len(rows))+1 // free room on the right for the label
	if err := addReferences(p, []float64{SwitchMLGbps / 32}, []string{"SwitchML (int32 only)"}); err != nil {
		return err
	}
	p.Y.Min = 0
	return savePanels(file, p)
}

func maxGbps(rows []Row) float64 {
	m := 0.0
	for _, r := range rows {
		m = math.Max(m, r.Gbps)
	}
	return m
}

// addReferences draws dashed horizontal lines across the whole x range,
// each labelled at its right end, above the line.
func addReferences(p *plot.Plot, ys []float64, names []string) error {
	xlo, xhi := p.X.Min, p.X.Max
	var lbl plotter.XYLabels
	for i, y := range ys {
		l, err := plotter.NewLine(plotter.XYs{{X: xlo, Y: y}, {X: xhi, Y: y}})
		if err != nil {
			return err
		}
		l.LineStyle.Color = color.Gray{Y: 96}
		l.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		lbl.XYs = append(lbl.XYs, plotter.XY{X: xhi, Y: y})
		lbl.Labels = append(lbl.Labels, names[i])
	}
	labels, err := plotter.NewLabels(lbl)
	if err != nil {
		return err
	}
	for i := range labels.TextStyle {
		labels.TextStyle[i].XAlign = text.XRight
		labels.TextStyle[i].YAlign = text.YBottom
		labels.TextStyle[i].Color = color.Gray{Y: 64}
	}
	labels.Offset = vg.Point{X: -vg.Points(2), Y: vg.Points(2)}
	p.Add(labels)
	return nil
}

// newSizePlot is a panel over message size (log2 axis, KiB/MiB ticks).
func newSizePlot(title, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "bytes per host"
	p.Y.Label.Text = ylabel
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = sizeTicks{}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	return p
}

func addLine(p *plot.Plot, name string, pts plotter.XYs, i int) error {
	if len(pts) == 0 {
		return nil
	}
	l, s, err := plotter.NewLinePoints(pts)
	if err != nil {
		return err
	}
	l.LineStyle.Color = plotutil.Color(i)
	l.LineStyle.Width = vg.Points(1.5)
	s.Color = plotutil.Color(i)
	s.Shape = plotutil.Shape(i)
	p.Add(l, s)
	p.Legend.Add(name, l, s)
	return nil
}

// sizeTicks labels powers of four from 1 KiB, with unlabelled powers of two
// between them.
type sizeTicks struct{}

// Ticks implements plot.Ticker.
func (sizeTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for e := 0; e < 50; e++ {
		v := math.Ldexp(1, e)
		if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
			continue
		}
		t := plot.Tick{Value: v}
		if e%2 == 0 {
			t.Label = FormatBytes(v)
		}
		ts = append(ts, t)
	}
	return ts
}

// byteTicks labels powers of four between lo and hi (padded to the
// enclosing powers of two) in bytes.
func byteTicks(lo, hi float64) plot.ConstantTicks {
	var ts plot.ConstantTicks
	for e := int(math.Floor(math.Log2(lo))); float64(e) <= math.Ceil(math.Log2(hi)); e++ {
		t := plot.Tick{Value: math.Ldexp(1, e)}
		if e%2 == 0 {
			t.Label = FormatBytes(t.Value)
		}
		ts = append(ts, t)
	}
	return ts
}

// savePanels stacks the plots vertically, 16 cm wide and 9 cm per panel,
// and writes them in the format of file's extension.
func savePanels(file string, plots ...*plot.Plot) error {
	w, h := 16*vg.Centimeter, vg.Length(len(plots))*9*vg.Centimeter
	var c interface {
		vg.CanvasSizer
		io.WriterTo
	}
	switch ext := strings.ToLower(filepath.Ext(file)); ext {
	case ".svg":
		c = vgsvg.New(w, h)
	case ".png":
		c = vgimg.PngCanvas{Canvas: vgimg.New(w, h)}
	default:
		return fmt.Errorf("models: plot %s: unsupported extension %q (use .svg or .png)", file, ext)
	}
	grid := make([][]*plot.Plot, len(plots))
	for i, p := range plots {
		grid[i] = []*plot.Plot{p}
	}
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadTop: vg.Points(4), PadBottom: vg.Points(4),
		PadLeft: vg.Points(4), PadRight: vg.Points(8), PadY: vg.Points(12)}
	canvases := plot.Align(grid, tiles, draw.New(c))
	for i, p := range plots {
		p.Draw(canvases[i][0])
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("models: write %s: %w", file, err)
	}
	return f.Close()
}
