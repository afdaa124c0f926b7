//go:build !amd64 || purego

package elem

// vectorKernels leaves the native kernels as they are: without the amd64
// vector loops (sum_amd64.go) the sums are the Go loop.
func vectorKernels(*[dtypeSlots][opSlots]kernelPair) {}
