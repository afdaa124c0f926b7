package models

import (
	"strings"
	"testing"
)

// A job's size is the model's evaluation and JobMemory's reservation of
// each design: at least one block's peak, and 𝓡 rounded up.
func TestJobSizes(t *testing.T) {
	p, err := Preset(PresetPsPIN)
	if err != nil {
		t.Fatal(err)
	}
	p.Bytes = 256 << 10
	ds, err := ParseDesigns("single,multi4,tree")
	if err != nil {
		t.Fatal(err)
	}
	rows := JobSizes(p, ds)
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3", len(rows))
	}
	for i, r := range rows {
		m := Evaluate(p, ds[i])
		if r.Algo != m.Algo || r.M != m.M || r.R != m.R || r.BandwidthGbps != m.Gbps || r.LatencyCycles != m.Latency || r.Bytes != p.Bytes || r.Hosts != p.Hosts {
			t.Errorf("%s: %+v, model %+v", r.Algo, r, m)
		}
		peak := map[string]int{"single": 1, "multi4": 4, "tree": p.Hosts}[r.Algo]
		if float64(r.Buffers) < r.R-1e-9 || r.Buffers < peak || r.MemoryBytes != int64(r.Buffers)*int64(p.PacketBytes) {
			t.Errorf("%s: %d buffers (%d bytes) for R = %.2f and a peak of %d", r.Algo, r.Buffers, r.MemoryBytes, r.R, peak)
		}
	}
	var out strings.Builder
	if err := WriteJobSizeTable(&out, p, rows); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 || lines[0] != "# "+Describe(p) || !strings.Contains(lines[4], "tree") || !strings.Contains(lines[2], "256KiB") {
		t.Errorf("table:\n%s", out.String())
	}
}

// Sizes double from from up to and including to, as Sweep walks them.
func TestSizes(t *testing.T) {
	for _, c := range []struct {
		from, to int64
		want     []int64
	}{
		{4096, 16384, []int64{4096, 8192, 16384}},
		{4096, 12000, []int64{4096, 8192}},
		{4096, 4096, []int64{4096}},
		{4096, 1000, nil},
		{0, 1000, nil},
	} {
		got := Sizes(c.from, c.to)
		if len(got) != len(c.want) {
			t.Errorf("Sizes(%d, %d) = %v, want %v", c.from, c.to, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("Sizes(%d, %d) = %v, want %v", c.from, c.to, got, c.want)
				break
			}
		}
	}
}
