//go:build !linux

package bench

import (
	"io"
	"os"
)

// pipeFile opens inherited descriptor fd (barrier_linux.go).
func pipeFile(fd int, name string) (*os.File, error) { return os.NewFile(uintptr(fd), name), nil }

// pipe is f (barrier_linux.go).
func pipe(f *os.File) io.ReadWriter { return f }
