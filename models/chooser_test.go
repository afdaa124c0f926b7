package models

import (
	"math"
	"testing"

	"github.com/flare-net/flare/proto"
	"github.com/flare-net/flare/wire"
)

func TestChoosePaper(t *testing.T) {
	p := mustPreset(t, PresetFlare)
	for _, tc := range []struct {
		kib  int64
		want Design
	}{{100, Tree}, {200, Multi2}, {300, Multi4}, {600, Single}} {
		p.Bytes = tc.kib << 10
		if got := ChoosePaper(p.Bytes, false); got != tc.want {
			t.Errorf("%d KiB: %s, want %s", tc.kib, got, tc.want)
		}
		if got := ChoosePaper(p.Bytes, true); got != Tree {
			t.Errorf("%d KiB reproducible: %s, want tree", tc.kib, got)
		}
		if r := Evaluate(p, Auto); r.Algo != tc.want.String() {
			t.Errorf("%d KiB: auto evaluated %s, want %s", tc.kib, r.Algo, tc.want)
		}
	}
	// "larger than": the thresholds themselves fall to the smaller design.
	for z, want := range map[int64]Design{128 << 10: Tree, 256 << 10: Multi2, 512 << 10: Multi4, 512<<10 + 1: Single} {
		if got := ChoosePaper(z, false); got != want {
			t.Errorf("%d bytes: %s, want %s", z, got, want)
		}
	}
	// The switch's rule and the model's are the same.
	for z := int64(1); z <= 2<<20; z = z*3/2 + 1 {
		algo, b := proto.Choose(int(z), false)
		if got := ChoosePaper(z, false); got.Algo != algo || got.Buffers != b {
			t.Errorf("%d bytes: model %s, switch %v/%d", z, got, algo, b)
		}
	}
}

func TestChooseModel(t *testing.T) {
	for _, preset := range Presets() {
		p := mustPreset(t, preset)
		for z := int64(4 << 10); z <= 4<<20; z *= 4 {
			p.Bytes = z
			rows := map[Design]Row{}
			var best float64
			lean := math.Inf(1)
			for _, d := range Designs() {
				rows[d] = Evaluate(p, d)
				best = math.Max(best, rows[d].Bandwidth)
				lean = math.Min(lean, rows[d].MemoryBytes)
			}
			// No budget: the highest bandwidth.
			if got := rows[ChooseModel(p, z, 0)]; got.Bandwidth < best*(1-1e-3) {
				t.Errorf("%s %d: chose %s at %g pkt/cycle, best is %g", preset, z, got.Algo, got.Bandwidth, best)
			}
			// A budget: the best of what fits.
			budget := int64(64 << 10)
			d := ChooseModel(p, z, budget)
			got := rows[d]
			fits := false
			for _, r := range rows {
				if r.MemoryBytes <= float64(budget) {
					fits = true
					if r.Bandwidth > got.Bandwidth*(1+1e-3) {
						t.Errorf("%s %d: chose %s (%g), but %s fits with %g", preset, z, d, got.Bandwidth, r.Algo, r.Bandwidth)
					}
				}
			}
			if fits && got.MemoryBytes > float64(budget) {
				t.Errorf("%s %d: %s needs %g bytes, over the budget", preset, z, d, got.MemoryBytes)
			}
			if !fits && got.MemoryBytes != lean {
				t.Errorf("%s %d: nothing fits, chose %s (%g bytes), want the leanest (%g)", preset, z, d, got.MemoryBytes, lean)
			}
		}
	}
	// The flare switch without a budget: the tree everywhere (τ = (P−1)L/P
	// is the lowest τ once copies are free); with 1 MiB, the paper's
	// ordering tree → multi → single comes back.
	p := mustPreset(t, PresetFlare)
	for z, want := range map[int64]Design{4 << 10: Tree, 128 << 10: Multi4, 256 << 10: Multi2, 512 << 10: Single} {
		if got := ChooseModel(p, z, 1<<20); got != want {
			t.Errorf("flare, 1 MiB budget, %s: %s, want %s", FormatBytes(float64(z)), got, want)
		}
		if got := ChooseModel(p, z, 0); got != Tree {
			t.Errorf("flare, no budget, %s: %s, want tree", FormatBytes(float64(z)), got)
		}
	}
}

func TestJobMemory(t *testing.T) {
	p := mustPreset(t, PresetFlare)
	for _, d := range append(Designs(), Design{Algo: wire.AlgoMulti, Buffers: 16}) {
		for _, z := range []int64{1 << 10, 64 << 10, 4 << 20} {
			p.Bytes = z
			r := Evaluate(p, d)
			buffers, bytes := JobMemory(p, d)
			peak := map[string]int{"single": 1, "multi2": 2, "multi4": 4, "multi16": 16, "tree": p.Hosts}[r.Algo]
			if want := max(int(math.Ceil(r.R-1e-9)), peak); buffers != want || bytes != int64(want)*1024 {
				t.Errorf("%s %d: JobMemory = %d buffers, %d bytes; want %d (R = %g, peak %d)", d, z, buffers, bytes, want, r.R, peak)
			}
		}
	}
	// Tiny messages are floored at the block's peak need.
	p.Bytes = 1 << 10
	p.Hosts = 2
	if b, _ := JobMemory(p, Multi4); b < 4 {
		t.Errorf("multi4 needs at least 4 buffers, JobMemory says %d", b)
	}
	// A tree's block holds a leaf for every host at once: on the PsPIN
	// switch a 1 KiB block of 64 hosts has R = 50.2 buffers by Little's
	// law, and needs 64.
	q := mustPreset(t, PresetPsPIN)
	q.Hosts, q.Bytes = 64, 1<<10
	if r := Evaluate(q, Tree).R; r >= 64 {
		t.Fatalf("R = %v: this case no longer tests the floor", r)
	}
	if b, _ := JobMemory(q, Tree); b != 64 {
		t.Errorf("tree, 64 hosts, one block: JobMemory = %d buffers, want 64", b)
	}
}

// A design whose memory is exactly the budget fits it: at 4 KiB on the
// flare switch the tree needs 695,648 bytes and is the fastest design.
func TestChooseModelExactBudget(t *testing.T) {
	p := mustPreset(t, PresetFlare)
	p.Bytes = 4 << 10
	m := Evaluate(p, Tree).MemoryBytes
	if m != 695648 {
		t.Fatalf("the tree at 4 KiB needs %v bytes; this test wants a design whose memory is a whole number", m)
	}
	if got := ChooseModel(p, 4<<10, int64(m)); got != Tree {
		t.Errorf("a budget of exactly the tree's %v bytes: chose %s, want tree", m, got)
	}
	if got := ChooseModel(p, 4<<10, int64(m)-1); got == Tree {
		t.Errorf("a budget one byte short of the tree's: chose the tree")
	}
}
