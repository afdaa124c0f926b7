package jsonl

import (
	"bytes"
	"errors"
	"testing"
)

func TestWrite(t *testing.T) {
	type row struct {
		A int    `json:"a"`
		B string `json:"b"`
	}
	var buf bytes.Buffer
	if err := Write(&buf, []row{{1, "x"}, {0, ""}}); err != nil {
		t.Fatal(err)
	}
	if want := "{\"a\":1,\"b\":\"x\"}\n{\"a\":0,\"b\":\"\"}\n"; buf.String() != want {
		t.Fatalf("got %q, want %q", buf.String(), want)
	}
	buf.Reset()
	if err := Write(&buf, []row(nil)); err != nil || buf.Len() != 0 {
		t.Fatalf("no rows: %v, wrote %q", err, buf.String())
	}
	if err := Write(failWriter{}, []row{{}}); !errors.Is(err, errFail) {
		t.Fatalf("a failing writer: %v, want %v", err, errFail)
	}
	if err := Write(&buf, []any{func() {}}); err == nil {
		t.Fatal("a value JSON cannot encode gave no error")
	}
}

var errFail = errors.New("fail")

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errFail }
