//go:build !amd64 || purego

package prefetch

var hints = []func([]byte){write}
