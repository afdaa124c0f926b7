package buildinfo

import (
	"runtime/debug"
	"testing"
)

// The commit's first 12 digits, marked dirty only where the tree was;
// nothing where the build recorded no commit.
func TestCommit(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	set := func(kv ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{}
		for i := 0; i < len(kv); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return bi
	}
	for _, tc := range []struct {
		bi   *debug.BuildInfo
		want string
	}{
		{nil, ""},
		{set(), ""},
		{set("vcs.modified", "true"), ""},
		{set("-compiler", "gc", "vcs.revision", rev), "0123456789ab"},
		{set("vcs.revision", rev, "vcs.modified", "false"), "0123456789ab"},
		{set("vcs.modified", "true", "vcs.revision", rev), "0123456789ab-dirty"},
		{set("vcs.revision", "abc123", "vcs.modified", "true"), "abc123-dirty"},
	} {
		var settings []debug.BuildSetting
		if tc.bi != nil {
			settings = tc.bi.Settings
		}
		if got := Commit(tc.bi); got != tc.want {
			t.Errorf("Commit(%v) = %q, want %q", settings, got, tc.want)
		}
	}
}
