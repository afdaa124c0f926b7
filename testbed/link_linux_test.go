package testbed

import "testing"

// The token bucket never caps the rate: the burst holds a millisecond of
// it and several frames, the queue more than a socket's send buffer.
func TestTBFParams(t *testing.T) {
	for _, rate := range []float64{1e6, 100e6, 1e9, 10e9, 100e9} {
		burst, limit := tbfParams(rate, 9000)
		if burst < 4*9014 || float64(burst) < rate/8/1000 || limit < 4<<20 || limit < burst {
			t.Errorf("rate %s: burst %d, limit %d", FormatRate(rate), burst, limit)
		}
	}
}
