package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flare-net/flare/wire"
)

// The peers' benchmarks (peers/row.h) fill and check flare's own sum
// pattern: a C program built on row.h prints pattern_value over ranks,
// elements and calls, and check_sum's verdict on a sum built from them,
// and both agree with patternValue and sumsExactly.
func TestPeersPatternIsFlares(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler (cc): install gcc to check peers/row.h against patternValue")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "p.c")
	prog := `#include "row.h"
int main(void) {
  for (int it = 0; it < 3; it++)
    for (int r = 0; r < 9; r++)
      for (int i = 0; i < 300; i += 7) printf("%d %d %d %.0f\n", r, i, it, pattern_value(r, i, it));
  float buf[500];
  for (int i = 0; i < 500; i++) {
    buf[i] = 0;
    for (int r = 0; r < 8; r++) buf[i] += pattern_value(r, i, 2);
  }
  printf("ok %ld\n", check_sum(buf, 500, 8, 2));
  buf[321] += 1;
  printf("bad %ld\n", check_sum(buf, 500, 8, 2));
  return 0;
}
`
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "p")
	inc, err := filepath.Abs(filepath.Join("..", "..", "peers"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-O2", "-I", inc, "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for it := range 3 {
		for r := range 9 {
			for i := 0; i < 300; i += 7 {
				fmt.Fprintf(&want, "%d %d %d %d\n", r, i, it, patternValue(wire.OpSum, r, i, it))
			}
		}
	}
	want.WriteString("ok -1\nbad 321\n")
	if got := string(out); got != want.String() {
		t.Fatalf("peers/row.h and patternValue differ:\n%s", firstDiff(got, want.String()))
	}
}

// firstDiff is the first line where a and b differ, with both versions.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < min(len(al), len(bl)); i++ {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d: C %q, Go %q", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("C has %d lines, Go %d", len(al), len(bl))
}
