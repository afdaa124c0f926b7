//go:build !unix

package main

import "time"

// processCPU reports that the process CPU time cannot be read here;
// calibrate then predicts from the one-CPU cost.
func processCPU() (time.Duration, bool) { return 0, false }
