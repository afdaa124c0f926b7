//go:build !amd64 || purego

package prefetch

// write does nothing where there is no prefetch instruction here.
func write([]byte) {}
