package proto

import "github.com/flare-net/flare/wire"

// Thresholds of the paper's algorithm choice (§6): single buffer above
// 512 KiB, four buffers above 256 KiB, two above 128 KiB, tree otherwise.
const (
	SingleAbove = 512 << 10
	Multi4Above = 256 << 10
	Multi2Above = 128 << 10
)

// Choose returns the dense design (and B for multi) the paper picks for a
// message of n bytes; reproducible float sums always get the tree, whose
// pairing is fixed by child index.
func Choose(n int, reproducible bool) (wire.Algo, int) {
	switch {
	case reproducible:
		return wire.AlgoTree, 0
	case n > SingleAbove:
		return wire.AlgoSingle, 0
	case n > Multi4Above:
		return wire.AlgoMulti, 4
	case n > Multi2Above:
		return wire.AlgoMulti, 2
	}
	return wire.AlgoTree, 0
}
