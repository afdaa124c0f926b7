package hostlib

import (
	"crypto/rand"
	"encoding/binary"
)

// NewToken draws a fresh job token (Options.Token) from the system's
// random source: the job's secret, which every member must be given and
// nobody else should be able to guess. It is never 0.
func NewToken() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail: Go ends the program if the system's source does
	return binary.LittleEndian.Uint64(b[:]) | 1
}
