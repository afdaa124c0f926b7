package prefetch

import (
	"bytes"
	"testing"
)

// TestWriteChangesNothing runs the hint over slices of every length and
// offset up to a few lines, empty and nil ones too: a hint must neither
// fault nor change a byte, whatever the alignment.
func TestWriteChangesNothing(t *testing.T) {
	buf := make([]byte, 5*Line)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	want := bytes.Clone(buf)
	Write(nil)
	for _, write := range hints {
		for off := range 2 * Line {
			for n := 1; off+n <= len(buf); n += 13 {
				write(buf[off : off+n])
			}
		}
	}
	if !bytes.Equal(buf, want) {
		t.Fatal("Write changed the bytes it was given")
	}
	if n := testing.AllocsPerRun(100, func() { Write(buf) }); n != 0 {
		t.Fatalf("Write allocates %v times a call, want 0", n)
	}
}
