package bench

import "github.com/flare-net/flare/internal/xcpu"

// lineTime is how long a cache line takes to move between the first two
// CPUs the process may run on, in ns (xcpu.LineTransfer): 0 where it has
// one CPU, or the measurement failed. A few milliseconds of two CPUs,
// taken between measured calls.
func lineTime() float64 {
	d, err := xcpu.LineTransfer()
	if err != nil {
		return 0
	}
	return float64(d.Nanoseconds())
}
