package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// The demo runs five sizes, each with the automatic design (the paper's
// choice for the size) and the reproducible tree, a row each with its
// sums verified; a demo out of range is refused with the field and the
// range.
func TestDemo(t *testing.T) {
	var b bytes.Buffer
	if err := (Demo{Ranks: 2, Iters: 1}).Run(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, l := range strings.Split(b.String(), "\n") {
		if f := strings.Fields(l); len(f) > 2 && strings.HasSuffix(f[0], "iB") {
			rows = append(rows, strings.Join([]string{f[0], f[1], f[len(f)-1]}, " "))
		}
	}
	want := []string{"4KiB tree yes", "4KiB tree yes", "192KiB multi2 yes", "192KiB tree yes", "384KiB multi4 yes", "384KiB tree yes",
		"1MiB single yes", "1MiB tree yes", "4MiB single yes", "4MiB tree yes"}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows (size, design, verified):\n%s\nwant\n%s\n\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"), b.String())
	}
	for _, tc := range []struct {
		d    Demo
		want string
	}{
		{Demo{Ranks: 0, Iters: 1}, "Demo.Ranks = 0: must be in 1..1024"},
		{Demo{Ranks: MaxRanks + 1, Iters: 1}, "Demo.Ranks = 1025: must be in 1..1024"},
		{Demo{Ranks: 2, Iters: 0}, "Demo.Iters = 0: must be at least 1"},
	} {
		if err := tc.d.Run(context.Background(), &b); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: %v, want %q", tc.d, err, tc.want)
		}
	}
}
