package main

import (
	"runtime/debug"

	"github.com/flare-net/flare/internal/buildinfo"
)

// version is the library's version: the commit it was built from, if the
// build recorded one (bi, nil if there is no build information).
func version(bi *debug.BuildInfo) string {
	switch c := buildinfo.Commit(bi); {
	case bi == nil:
		return "flare (unknown)"
	case c == "":
		return "flare (devel)"
	default:
		return "flare " + c
	}
}
