package schematest

import (
	"encoding/csv"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// CSVColumns fails t unless text, CSV with a header and one record of
// row, names each column by a JSON field of row and holds that field's
// value in it: a number by value, anything else as JSON writes it (a
// string without its quotes). It returns the number of columns and of
// row's JSON fields, for the caller to hold CSV to all of them or a part.
func CSVColumns(t testing.TB, text string, row any) (columns, fields int) {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(text)).ReadAll()
	if err != nil || len(recs) != 2 {
		t.Fatalf("csv: %d records, %v; want a header and one row:\n%s", len(recs), err, text)
	}
	b, err := json.Marshal(row)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	for i, name := range recs[0] {
		got, w := recs[1][i], want[name]
		switch w := w.(type) {
		case nil:
			t.Errorf("column %s: no JSON field of that name", name)
		case float64:
			if f, err := strconv.ParseFloat(got, 64); err != nil || f != w {
				t.Errorf("column %s = %q, want %v", name, got, w)
			}
		default:
			if j, _ := json.Marshal(w); got != strings.Trim(string(j), `"`) {
				t.Errorf("column %s = %q, want %v", name, got, w)
			}
		}
	}
	return len(recs[0]), len(want)
}
