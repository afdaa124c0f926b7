//go:build !unix

package bench

import "time"

// ProcessCPU reports that the process CPU time cannot be read here;
// calibrate then predicts from the one-CPU cost.
func ProcessCPU() (time.Duration, bool) { return 0, false }

// processTimes reports that the process CPU time cannot be read here: the
// rows' server CPU stays 0.
func processTimes() (cpuTimes, bool) { return cpuTimes{}, false }
