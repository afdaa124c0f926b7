//go:build !race

package conn

// Without the race detector nothing is marked (race_on.go).
func raceReleaseIO() {}
func raceAcquireIO() {}
