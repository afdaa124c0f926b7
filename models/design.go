package models

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/flare-net/flare/proto"
	"github.com/flare-net/flare/wire"
)

// Design is one dense aggregation design of the Flare paper (§6): single
// buffer, multi-buffer with B buffers, or tree. AlgoAuto stands for the
// paper's choice (ChoosePaper) and is resolved by Evaluate.
type Design struct {
	Algo    wire.Algo
	Buffers int // B for AlgoMulti; 0 takes Params.Buffers
}

// The designs of Figure 10.
var (
	Single = Design{Algo: wire.AlgoSingle}
	Multi2 = Design{Algo: wire.AlgoMulti, Buffers: 2}
	Multi4 = Design{Algo: wire.AlgoMulti, Buffers: 4}
	Tree   = Design{Algo: wire.AlgoTree}
	Auto   = Design{Algo: wire.AlgoAuto}
)

// Designs returns single, multi2, multi4 and tree, the four designs the
// paper's Figure 10 compares, in that order.
func Designs() []Design { return []Design{Single, Multi2, Multi4, Tree} }

// String returns "single", "multi<B>" ("multi2", "multi4"), "tree" or
// "auto"; a multi design with Buffers 0 prints as "multi".
func (d Design) String() string {
	switch d.Algo {
	case wire.AlgoMulti:
		if d.Buffers == 0 {
			return "multi"
		}
		return "multi" + strconv.Itoa(d.Buffers)
	case wire.AlgoSingle, wire.AlgoTree, wire.AlgoAuto:
		return d.Algo.String()
	}
	return fmt.Sprintf("design(%d)", uint8(d.Algo))
}

// ParseDesign parses a name as printed by String: "single", "tree",
// "auto", "multi<B>" with B in 2..64, or "multi" (B from Params.Buffers).
func ParseDesign(s string) (Design, error) {
	switch s {
	case "single":
		return Single, nil
	case "tree":
		return Tree, nil
	case "auto":
		return Auto, nil
	case "multi":
		return Design{Algo: wire.AlgoMulti}, nil
	}
	if rest, ok := strings.CutPrefix(s, "multi"); ok {
		b, err := strconv.Atoi(rest)
		if err == nil && b >= 2 && b <= proto.MaxBuffers {
			return Design{Algo: wire.AlgoMulti, Buffers: b}, nil
		}
		return Design{}, fmt.Errorf("models: design %q: the buffer count must be in 2..%d (multi2, multi4, ...)", s, proto.MaxBuffers)
	}
	return Design{}, fmt.Errorf("models: unknown design %q (allowed: single, multi2, multi4, multi<B>, tree, auto)", s)
}

// ParseDesigns parses a comma-separated list ("single,multi4,tree").
func ParseDesigns(s string) ([]Design, error) {
	var ds []Design
	for f := range strings.SplitSeq(s, ",") {
		d, err := ParseDesign(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		ds = append(ds, d)
	}
	return ds, nil
}

// resolve returns d with AlgoAuto replaced by the paper's choice for p and
// a multi design's B filled in from p.
func (d Design) resolve(p Params) Design {
	if d.Algo == wire.AlgoAuto {
		d = ChoosePaper(p.Bytes, false)
	}
	if d.Algo == wire.AlgoMulti && d.Buffers == 0 {
		d.Buffers = p.Buffers
	}
	if d.Algo != wire.AlgoMulti {
		d.Buffers = 0
	}
	return d
}
