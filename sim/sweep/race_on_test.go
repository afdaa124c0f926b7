//go:build race

package sweep

// raceEnabled skips the long virtual-time sweep under the race detector.
const raceEnabled = true
