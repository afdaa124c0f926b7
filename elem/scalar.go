package elem

import "github.com/flare-net/flare/wire"

// StoreInt writes v as one little-endian element of the integer dtype dt at
// the front of b, truncated to the dtype's width (two's complement). It is
// the reference's own encoding, sharing no code with the kernels, so inputs
// drawn with it (the simulator's, the tests') do not lean on what they test.
func StoreInt(dt wire.DType, b []byte, v int64) { specStoreInt(dt, b, v) }

// StoreFloat writes v as one little-endian element of the floating-point
// dtype dt at the front of b, rounded to the dtype (nearest even), with the
// reference's own encoding (see StoreInt).
func StoreFloat(dt wire.DType, b []byte, v float64) { specStoreFloat(dt, b, v) }
