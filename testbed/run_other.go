//go:build !linux

package testbed

import (
	"context"
	"errors"
)

var errLinux = errors.New("testbed: needs Linux (network namespaces, veth pairs, tc qdiscs)")

// Check reports that the emulated cluster needs Linux.
func Check(bool) error { return errLinux }

// Run reports that the emulated cluster needs Linux.
func Run(context.Context, Config) ([]Row, error) { return nil, errLinux }
