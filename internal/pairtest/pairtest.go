// Package pairtest builds sparse vectors, wire pairs of (index, value),
// for the tests of the packages that merge and check them.
package pairtest

import (
	"encoding/binary"

	"github.com/flare-net/flare/wire"
)

// Int32 builds int32 pairs from (index, value) couples in the order given:
// Int32(5, 1, 2, 10) is index 5 holding 1, then index 2 holding 10. An odd
// last argument, an index without a value, is ignored.
func Int32(kv ...int32) []byte {
	var b []byte
	for i := 0; i+1 < len(kv); i += 2 {
		b = wire.AppendPair(b, uint32(kv[i]), binary.LittleEndian.AppendUint32(nil, uint32(kv[i+1])))
	}
	return b
}
