package models

import (
	"slices"
	"strconv"
	"testing"

	"github.com/flare-net/flare/proto"
	"github.com/flare-net/flare/wire"
)

func TestDesignNames(t *testing.T) {
	var names []string
	for _, d := range Designs() {
		names = append(names, d.String())
		got, err := ParseDesign(d.String())
		if err != nil || got != d {
			t.Errorf("ParseDesign(%q) = %v, %v", d, got, err)
		}
	}
	if want := []string{"single", "multi2", "multi4", "tree"}; !slices.Equal(names, want) {
		t.Errorf("Designs() = %v, want %v", names, want)
	}
	for _, b := range []int{2, 16, proto.MaxBuffers} {
		name := "multi" + strconv.Itoa(b)
		if d, err := ParseDesign(name); err != nil || d != (Design{Algo: wire.AlgoMulti, Buffers: b}) {
			t.Errorf("%s: %v, %v", name, d, err)
		}
	}
	if d, err := ParseDesign("multi"); err != nil || d.String() != "multi" {
		t.Errorf("multi: %v, %v", d, err)
	}
	for _, bad := range []string{"", "multi1", "multi65", "multix", "double"} {
		if _, err := ParseDesign(bad); err == nil {
			t.Errorf("ParseDesign(%q) accepted", bad)
		}
	}
	ds, err := ParseDesigns("single, tree")
	if err != nil || len(ds) != 2 || ds[1] != Tree {
		t.Errorf("ParseDesigns: %v, %v", ds, err)
	}
}

func TestDesignResolve(t *testing.T) {
	p := mustPreset(t, PresetFlare)
	p.Buffers = 8
	if d := (Design{Algo: wire.AlgoMulti}).resolve(p); d.Buffers != 8 {
		t.Errorf("bare multi resolved to B=%d, want Params.Buffers = 8", d.Buffers)
	}
	if d := (Design{Algo: wire.AlgoTree, Buffers: 4}).resolve(p); d != Tree {
		t.Errorf("a tree with buffers resolved to %+v, want the plain tree", d)
	}
	p.Bytes = 300 << 10
	if r := Evaluate(p, Auto); r.Algo != "multi4" {
		t.Errorf("auto at 300 KiB evaluated %s, want the paper's multi4", r.Algo)
	}
}
