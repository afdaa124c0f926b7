//go:build !unix

package swtch_test

// processCPU is -1 where the process's CPU time is not read: the
// benchmarks then report no cpu-ns/pkt.
func processCPU() int64 { return -1 }
