//go:build amd64 && !purego

package prefetch

// hints are both loops, whichever the CPU running the test would use.
var hints = []func([]byte){writeW, writeT0}
