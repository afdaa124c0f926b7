// Command capi is libflare, the C interface of Flare's host library: built
// with -buildmode=c-shared (make lib) it is libflare.so, whose functions
// flare.h declares and documents. C programs, and the Python package
// python/flare over ctypes, join jobs on a Flare switch and allreduce their
// buffers through it with the same hostlib code Go programs link.
//
// The split: flare.c holds every public function; each checks that it runs
// in the process that loaded the library (a forked child hangs entering
// Go), clears the thread's last error and calls the Go side here
// (flare_go_*). Sessions live behind integer handles (runtime/cgo.Handle,
// see handles.go); C buffers are read and written only during a call.
package main

// #include "flare.h"
import "C"

import (
	"runtime/debug"
	"sync"
)

// main is never called: a c-shared library needs one, and the library's
// work starts from the C side.
func main() {}

var (
	versionOnce sync.Once
	versionC    *C.char // C memory, kept for the process's life
)

// flare_go_version returns "flare <commit>" from the build information.
//
//export flare_go_version
func flare_go_version() *C.char {
	versionOnce.Do(func() {
		bi, _ := debug.ReadBuildInfo()
		versionC = C.CString(version(bi))
	})
	return versionC
}
