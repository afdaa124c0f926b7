//go:build race

package handlers

// raceEnabled skips the long virtual-time sweep under the race detector.
const raceEnabled = true
