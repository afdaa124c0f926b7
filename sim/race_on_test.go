//go:build race

package sim

// raceEnabled skips the long virtual-time sweep under the race detector.
const raceEnabled = true
