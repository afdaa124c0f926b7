package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/flare-net/flare/internal/buildinfo"
)

func runVersion(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("version", "Print the module version, the commit it was built from and the Go version.", "  flare version\n", stdout)
	if err := parse(fs, args); err != nil {
		return err
	}
	bi, _ := debug.ReadBuildInfo()
	fmt.Fprintln(stdout, versionString(bi))
	return nil
}

// versionString is the binary's version from the build information Go
// embeds in it (bi, nil if none): the module version (the tag, or a
// pseudo-version derived from the commit when built in a checkout with
// -buildvcs, "(devel)" without VCS information) and the commit, marked
// dirty when the tree had changes.
func versionString(bi *debug.BuildInfo) string {
	version, commit := "(devel)", "unknown"
	if bi != nil && bi.Main.Version != "" {
		version = bi.Main.Version
	}
	if c := buildinfo.Commit(bi); c != "" {
		commit = c
	}
	return fmt.Sprintf("flare %s (commit %s, %s %s/%s)", version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
