//go:build !linux

package xcpu

import "errors"

var errUnsupported = errors.New("xcpu: pinning threads to CPUs is supported on Linux only")

func twoCPUs() (a, b int, err error) { return 0, 0, errUnsupported }

func pin(cpu int) error { return errUnsupported }
