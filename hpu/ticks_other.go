//go:build !(linux && amd64)

package hpu

// ticking is whether the cores read a cycle counter; here they do not, and
// every read is the monotonic clock (clock.go).
const ticking = false

func ticks() int64 { return 0 }
