// Package schematest checks that a --json row has a fixed schema: every
// field is written whatever its value, so that a reader of the rows (a
// plot script, a table of another tool's results) can rely on the keys.
package schematest

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Fixed fails t unless row, a struct, writes every exported field as a
// JSON key even at its zero value: no field may be omitempty, and the
// zero value must marshal to exactly the fields' keys (those of embedded
// structs included). It returns the keys, sorted.
func Fixed(t testing.TB, row any) []string {
	t.Helper()
	typ := reflect.TypeOf(row)
	want := fields(t, typ)
	b, err := json.Marshal(reflect.Zero(typ).Interface())
	if err != nil {
		t.Fatalf("%s: %v", typ.Name(), err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%s: %v", typ.Name(), err)
	}
	for _, k := range want {
		if _, ok := got[k]; !ok {
			t.Errorf("%s: the zero row has no %q: %s", typ.Name(), k, b)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%s: %d keys, %d fields: %s", typ.Name(), len(got), len(want), b)
	}
	slices.Sort(want)
	return want
}

// fields lists the JSON keys of typ's exported fields, embedded structs
// flattened, and fails t on a field that may be left out (omitempty).
func fields(t testing.TB, typ reflect.Type) []string {
	t.Helper()
	var keys []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			keys = append(keys, fields(t, f.Type)...)
			continue
		}
		if !f.IsExported() || name == "-" {
			continue
		}
		if strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero") {
			t.Errorf("%s.%s is omitted when zero: a row's schema must not depend on its values", typ.Name(), f.Name)
		}
		if name == "" {
			name = f.Name
		}
		keys = append(keys, name)
	}
	return keys
}
