package hostlib

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/flare-net/flare/elem"
)

// encodeLE writes the wire's little-endian encoding whatever the
// machine's byte order (a big-endian host sends through it), and decodeLE
// reads it back: values worked by hand, then each element type against
// encoding/binary.
func TestEncodeDecodeLE(t *testing.T) {
	v := []int32{1, -2, 0x01020304}
	b := make([]byte, 12)
	encodeLE(b, v)
	if want := []byte{1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff, 4, 3, 2, 1}; !bytes.Equal(b, want) {
		t.Errorf("encodeLE: % x; want % x", b, want)
	}
	back := make([]int32, 3)
	decodeLE(back, b)
	if !slices.Equal(back, v) {
		t.Errorf("decodeLE: %v; want %v", back, v)
	}
	h := []elem.BFloat16{elem.BFloat16From(1.5)}
	hb := make([]byte, 2)
	encodeLE(hb, h)
	if hb[0] != 0xc0 || hb[1] != 0x3f {
		t.Errorf("bfloat16 1.5 encodes as % x; want c0 3f", hb)
	}
	encodeLE(hb, []elem.Float16{elem.Float16From(1.5)})
	if hb[0] != 0x00 || hb[1] != 0x3e {
		t.Errorf("float16 1.5 encodes as % x; want 00 3e", hb)
	}
	if nativeLittleEndian && !bytes.Equal(viewBytes(v), b) {
		t.Errorf("viewBytes: % x; want % x", viewBytes(v), b)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	bits := func() uint64 { return rng.Uint64() }
	t.Run("int8", func(t *testing.T) { checkLE(t, func() int8 { return int8(bits()) }) })
	t.Run("int16", func(t *testing.T) { checkLE(t, func() int16 { return int16(bits()) }) })
	t.Run("int32", func(t *testing.T) { checkLE(t, func() int32 { return int32(bits()) }) })
	t.Run("int64", func(t *testing.T) { checkLE(t, func() int64 { return int64(bits()) }) })
	t.Run("float32", func(t *testing.T) { checkLE(t, func() float32 { return float32(rng.NormFloat64()) }) })
	t.Run("float64", func(t *testing.T) { checkLE(t, rng.NormFloat64) })
	t.Run("bfloat16", func(t *testing.T) { checkLE(t, func() elem.BFloat16 { return elem.BFloat16(bits()) }) })
	t.Run("float16", func(t *testing.T) { checkLE(t, func() elem.Float16 { return elem.Float16(bits()) }) })
}

// checkLE encodes 37 elements from gen, compares with encoding/binary's
// little-endian bytes, and decodes them back.
func checkLE[T Element](t *testing.T, gen func() T) {
	src := make([]T, 37)
	for i := range src {
		src[i] = gen()
	}
	var want bytes.Buffer
	if err := binary.Write(&want, binary.LittleEndian, src); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, want.Len())
	encodeLE(got, src)
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("encodeLE: % x, want % x", got[:16], want.Bytes()[:16])
	}
	back := make([]T, len(src))
	decodeLE(back, got)
	if !slices.Equal(back, src) && !bytes.Equal(viewBytes(back), viewBytes(src)) { // NaNs compare by their bits
		t.Fatalf("decodeLE(encodeLE(x)) differs from x")
	}
}
