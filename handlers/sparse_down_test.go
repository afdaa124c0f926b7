package handlers

import (
	"cmp"
	"encoding/binary"
	"slices"

	"github.com/flare-net/flare/wire"
)

// sparseDown is one packet of the switch's stream as a host receives it.
type sparseDown struct {
	hdr     wire.Header
	payload []byte
}

// sortPairs returns a copy of pairs sorted by index (stable: a host that
// lists an index twice keeps its order).
func sortPairs(pairs []byte, ps int) []byte {
	n := len(pairs) / ps
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	idx := func(i int) uint32 { return binary.LittleEndian.Uint32(pairs[i*ps:]) }
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(idx(a), idx(b)) })
	out := make([]byte, 0, len(pairs))
	for _, i := range order {
		out = append(out, pairs[i*ps:(i+1)*ps]...)
	}
	return out
}
