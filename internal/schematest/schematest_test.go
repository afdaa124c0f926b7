package schematest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

type inner struct {
	C int `json:"c"`
}

type good struct {
	A int `json:"a"`
	inner
	B string
	//lint:ignore U1000 an unexported field, which Fixed must leave out
	skipped int `json:"-"`
	Hidden  int `json:"-"`
}

type omits struct {
	A int `json:"a,omitempty"`
	B int `json:"b"`
}

func TestFixed(t *testing.T) {
	if got, want := Fixed(t, good{}), []string{"B", "a", "c"}; !slices.Equal(got, want) {
		t.Fatalf("keys %v, want %v", got, want)
	}
	rec := &recorder{TB: t}
	Fixed(rec, omits{})
	if !strings.Contains(rec.errs, "omits.A is omitted when zero") || !strings.Contains(rec.errs, "1 keys, 2 fields") {
		t.Fatalf("an omitempty field was not caught: %q", rec.errs)
	}
}

// recorder keeps what Fixed reports instead of failing the test.
type recorder struct {
	testing.TB
	errs string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Errorf(f string, a ...any) { r.errs += fmt.Sprintf(f, a...) + "\n" }
func (r *recorder) Fatalf(f string, a ...any) { r.Errorf(f, a...) }
