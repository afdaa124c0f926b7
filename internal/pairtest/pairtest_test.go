package pairtest

import (
	"bytes"
	"testing"

	"github.com/flare-net/flare/wire"
)

func TestInt32(t *testing.T) {
	got := Int32(5, 1, 2, -10, 7)
	want := []byte{5, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0xf6, 0xff, 0xff, 0xff}
	if !bytes.Equal(got, want) {
		t.Fatalf("got % x, want % x", got, want)
	}
	p, err := wire.ParsePairs(got, wire.Int32, 2)
	if err != nil || p.Len() != 2 || p.Index(1) != 2 {
		t.Fatalf("the pairs do not parse back: %v", err)
	}
	if Int32() != nil {
		t.Fatal("no couples gave a non-empty vector")
	}
}
