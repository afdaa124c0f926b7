package models

import (
	"math"

	"github.com/flare-net/flare/proto"
	"github.com/flare-net/flare/wire"
)

// ChoosePaper is the Flare paper's rule (§6): "single buffer aggregation if
// the size of the data to be reduced is larger than 512KiB, multi buffers
// with 4 buffers if larger than 256KiB, with 2 buffers if larger than
// 128KiB, and tree aggregation otherwise. When reproducibility of
// floating-point summation is required, Flare always uses tree
// aggregation." It is the switch's own rule (proto.Choose), so the model
// and the daemon agree.
func ChoosePaper(bytes int64, reproducible bool) Design {
	// Every threshold is far below 2³¹, so clamping keeps the choice on
	// machines with a 32-bit int.
	algo, b := proto.Choose(int(min(bytes, math.MaxInt32)), reproducible)
	return Design{Algo: algo, Buffers: b}
}

// ChooseModel evaluates the four designs (Designs) at p with Z = bytes and
// returns the one with the highest bandwidth whose Little's-law working
// memory fits budgetBytes (≤ 0: no budget). Bandwidths within 0.1% count
// as equal, and then the smaller memory wins. If no design fits, it returns
// the one that needs the least memory.
//
// Unlike ChoosePaper it sees the switch's size, the hosts, δ and the
// memory budget; docs/MODEL.md shows where the two differ and why.
func ChooseModel(p Params, bytes int64, budgetBytes int64) Design {
	p.Bytes = bytes
	var (
		best, leanest    Design
		bestRow, leanRow Row
		found            bool
	)
	for i, d := range Designs() {
		r := Evaluate(p, d)
		if i == 0 || r.MemoryBytes < leanRow.MemoryBytes {
			leanest, leanRow = d, r
		}
		if budgetBytes > 0 && r.MemoryBytes > float64(budgetBytes) {
			continue
		}
		switch {
		case !found, r.Bandwidth > bestRow.Bandwidth*(1+1e-3),
			r.Bandwidth >= bestRow.Bandwidth*(1-1e-3) && r.MemoryBytes < bestRow.MemoryBytes:
			best, bestRow, found = d, r, true
		}
	}
	if !found {
		return leanest
	}
	return best
}

// JobMemory is the working memory one job needs with design d at p
// (Little's law, §4): 𝓡 = M·(𝓑/P)·𝓛 buffers rounded up, and at least what
// one block needs at its peak (1 single, B multi, P tree: the bound the
// handlers use, handlers.DenseConfig.MinBuffers), so that the job can make
// progress. bytes = buffers × PacketBytes.
func JobMemory(p Params, d Design) (buffers int, bytes int64) {
	p = p.Resolve()
	d = d.resolve(p)
	r := Evaluate(p, d)
	peak := 1
	switch d.Algo {
	case wire.AlgoMulti:
		peak = d.Buffers
	case wire.AlgoTree:
		peak = p.Hosts
	}
	buffers = max(int(math.Ceil(r.R-1e-9)), peak)
	return buffers, int64(buffers) * int64(p.PacketBytes)
}
