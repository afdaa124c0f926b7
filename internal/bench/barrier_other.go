//go:build !linux

package bench

import (
	"io"
	"os"
)

// pipeFile opens inherited descriptor fd (barrier_linux.go).
func pipeFile(fd int, name string) (*os.File, error) { return os.NewFile(uintptr(fd), name), nil }

// pipeRead fills b from f.
func pipeRead(f *os.File, b []byte) error {
	_, err := io.ReadFull(f, b)
	return err
}

// pipeWrite writes b to f.
func pipeWrite(f *os.File, b []byte) error {
	_, err := f.Write(b)
	return err
}
