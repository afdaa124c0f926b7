// Package buildinfo reads the commit a binary was built from out of the
// build information Go embeds in it (what `go version -m` prints), for
// `flare version` and libflare's flare_version alike.
package buildinfo

import "runtime/debug"

// Commit is the commit bi was built from: its first 12 hex digits, and
// "-dirty" where the tree had uncommitted changes; "" where the build
// recorded none (no build information, a build outside a checkout, or
// -buildvcs=false).
func Commit(bi *debug.BuildInfo) string {
	if bi == nil {
		return ""
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return ""
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}
