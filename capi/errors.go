package main

/*
#include "flare.h"
#include "flare_internal.h"

// flare_set_error_go copies a Go string, which cgo passes without copying,
// into the thread's error buffer.
static void flare_set_error_go(_GoString_ s) { flare_set_error(_GoStringPtr(s), _GoStringLen(s)); }
*/
import "C"

import (
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/flare-net/flare/hostlib"
)

// fail sets err's text as the calling thread's last error and returns
// code. The exported functions run on the C caller's thread (cgo locks a
// callback's goroutine to it), so the C side's thread-local buffer is the
// caller's.
func fail(code C.int, err error) C.int {
	C.flare_set_error_go("libflare: " + err.Error())
	return code
}

// failf is fail with a FLARE_EINVAL message.
func failf(format string, args ...any) C.int {
	return fail(C.FLARE_EINVAL, fmt.Errorf(format, args...))
}

// codeOf classifies an error of hostlib. joining says whether it came from
// Join, where a switch's error answer is a refusal; during a call it means
// the switch failed the job. Errors that are neither the switch's, a
// timeout, a close nor the system's are hostlib's checks of the arguments.
func codeOf(err error, joining bool) C.int {
	var (
		se    *hostlib.SwitchError
		op    *net.OpError
		dns   *net.DNSError
		addr  *net.AddrError
		errno syscall.Errno
	)
	switch {
	case errors.Is(err, hostlib.ErrClosed):
		return C.FLARE_ECLOSED
	case errors.Is(err, hostlib.ErrTimeout):
		return C.FLARE_ETIMEOUT
	case errors.Is(err, hostlib.ErrAborted):
		return C.FLARE_EABORTED
	case errors.As(err, &se):
		if joining {
			return C.FLARE_EREFUSED
		}
		return C.FLARE_ESWITCH
	case errors.As(err, &op), errors.As(err, &dns), errors.As(err, &addr), errors.As(err, &errno):
		return C.FLARE_EIO
	}
	return C.FLARE_EINVAL
}

// errNoMemory is a failed malloc of a sparse result.
var errNoMemory = errors.New("sparse allreduce: out of memory for the result (malloc failed)")
