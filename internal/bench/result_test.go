package bench

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

// jsonFields lists the JSON names of t's fields, embedded structs
// flattened, and fails on a field that may be left out (omitempty).
func jsonFields(t *testing.T, typ reflect.Type) []string {
	t.Helper()
	var names []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Anonymous {
			names = append(names, jsonFields(t, f.Type)...)
			continue
		}
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if strings.Contains(opts, "omitempty") {
			t.Errorf("%s.%s is omitted when zero: a row's schema must not depend on its values", typ.Name(), f.Name)
		}
		names = append(names, name)
	}
	return names
}

// Every --json row has a fixed schema: its zero value marshals every
// field, and every row carries the bus bandwidth beside the algorithm
// bandwidth.
func TestRowsHaveFixedSchema(t *testing.T) {
	for _, row := range []any{Result{}, Row{}, SparseRow{}, TreeRow{}} {
		typ := reflect.TypeOf(row)
		want := jsonFields(t, typ)
		b, err := json.Marshal(row)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		for _, k := range want {
			if _, ok := got[k]; !ok {
				t.Errorf("%s: the zero row has no %q: %s", typ.Name(), k, b)
			}
		}
		if len(got) != len(want) {
			t.Errorf("%s: %d keys, %d fields: %s", typ.Name(), len(got), len(want), b)
		}
		for _, k := range []string{"algbw_GBps", "busbw_GBps"} {
			if _, ok := got[k]; !ok {
				t.Errorf("%s has no %s", typ.Name(), k)
			}
		}
	}
}

// The bus bandwidth is nccl-tests' for an allreduce: algbw × 2(P−1)/P,
// derived with the algorithm bandwidth from the median.
func TestBusbw(t *testing.T) {
	for _, tc := range []struct {
		algbw float64
		p     int
		want  float64
	}{{10, 8, 17.5}, {10, 2, 10}, {3, 1, 0}, {3, 0, 0}, {1, 1024, 2 * 1023.0 / 1024}} {
		if got := Busbw(tc.algbw, tc.p); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Busbw(%v, %d) = %v, want %v", tc.algbw, tc.p, got, tc.want)
		}
	}
	r := Result{Ranks: 4, Bytes: 1 << 20}
	r.summarise([]float64{0.004, 0.001, 0.002})
	if r.MedianS != 0.002 || math.Abs(r.AlgbwGBps-float64(1<<20)/0.002/1e9) > 1e-12 || math.Abs(r.BusbwGBps-1.5*r.AlgbwGBps) > 1e-12 {
		t.Errorf("summarise: median %v, algbw %v, busbw %v", r.MedianS, r.AlgbwGBps, r.BusbwGBps)
	}
}
