package hpu

import (
	"bytes"
	"os"
)

// ticks reads the CPU's time-stamp counter (RDTSC).
func ticks() int64

// ticking is whether the cores read the time-stamp counter: where the
// kernel's clock source is "tsc", which it chooses only for a counter that
// is constant and synchronised across CPUs, and which its clock_gettime
// then reads as well (clock.go).
var ticking = kernelClockIsTSC()

func kernelClockIsTSC() bool {
	b, err := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource")
	return err == nil && string(bytes.TrimSpace(b)) == "tsc"
}
