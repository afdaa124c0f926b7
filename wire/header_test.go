package wire

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

func TestHeaderRoundTrip(t *testing.T) {
	for _, s := range seedPackets() {
		t.Run(s.name, func(t *testing.T) {
			var h Header
			payload, err := h.Unmarshal(s.pkt)
			if err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if h != s.h {
				t.Errorf("header = %+v, want %+v", h, s.h)
			}
			if !bytes.Equal(payload, s.payload) {
				t.Errorf("payload = %x, want %x", payload, s.payload)
			}
			if cap(payload) != len(payload) {
				t.Errorf("payload cap = %d, want %d (capped)", cap(payload), len(payload))
			}
			if n := h.PayloadLen(); !h.Type.hasErrorBody() && n != len(payload) {
				t.Errorf("PayloadLen = %d, want %d", n, len(payload))
			}
			if got := AppendPacket(nil, &h, payload); !bytes.Equal(got, s.pkt) {
				t.Errorf("re-encoded = %x, want %x", got, s.pkt)
			}
		})
	}
}

func TestMarshalDefaultsVersion(t *testing.T) {
	h := testHeader(TypeLeave, 0, 0, 0)
	h.Version = 0
	b := make([]byte, HeaderLen)
	if err := h.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	if b[OffVersion] != Version {
		t.Errorf("version byte = %d, want %d", b[OffVersion], Version)
	}
	if err := h.MarshalTo(b[:HeaderLen-1]); err != ErrShort {
		t.Errorf("MarshalTo into 31 bytes: err = %v, want ErrShort", err)
	}
}

// TestByteOrder pins the header to big-endian and the offsets to the spec.
func TestByteOrder(t *testing.T) {
	h := Header{Version: Version, Type: TypeData, Flags: 0x0102, Job: 0x03040506,
		Token: 0x0708090a0b0c0d0e, Generation: 0x0f101112, Block: 0x13141516,
		Child: 0x1718, DType: Float32, Op: OpSum, Count: 0x191a1b1c}
	b := make([]byte, HeaderLen)
	if err := h.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	want := []byte{Version, 4, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
		15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 5, 1, 25, 26, 27, 28}
	if !bytes.Equal(b, want) {
		t.Errorf("header bytes\n got %x\nwant %x", b, want)
	}
}

// mutate returns a copy of pkt with f applied.
func mutate(pkt []byte, f func(b []byte) []byte) []byte {
	return f(bytes.Clone(pkt))
}

func TestUnmarshalErrors(t *testing.T) {
	seeds := map[string][]byte{}
	for _, s := range seedPackets() {
		seeds[s.name] = s.pkt
	}
	data, sparse := seeds["data-float32"], seeds["sparse-float64"]
	set := func(pkt []byte, off int, v ...byte) []byte {
		return mutate(pkt, func(b []byte) []byte { copy(b[off:], v); return b })
	}
	hdr := func(tp Type, d DType, o Op, count uint32, payload []byte) []byte {
		h := testHeader(tp, d, o, count)
		return AppendPacket(nil, &h, payload)
	}
	longText := bytes.Repeat([]byte("x"), MaxErrorText+1)
	tests := []struct {
		name string
		pkt  []byte
		want error
	}{
		{"empty", nil, ErrShort},
		{"31 bytes", data[:HeaderLen-1], ErrShort},
		{"version 0", set(data, OffVersion, 0), ErrVersion},
		{"version 1", set(data, OffVersion, 1), ErrVersion},
		{"version 3", set(data, OffVersion, 3), ErrVersion},
		{"type 0", set(data, OffType, 0), ErrType},
		{"type 10", set(data, OffType, 10), ErrType},
		{"type 255", set(data, OffType, 255), ErrType},
		{"flag bit 5", set(data, OffFlags, 0, 0x20), ErrFlags},
		{"flag bit 15", set(data, OffFlags, 0x80, 0), ErrFlags},
		{"data dtype 0", set(data, OffDType, 0), ErrDType},
		{"data dtype 9", set(data, OffDType, 9), ErrDType},
		{"join dtype 0", set(seeds["join"], OffDType, 0), ErrDType},
		{"leave dtype 200", set(seeds["leave"], OffDType, 200), ErrDType},
		{"data op 0", set(data, OffOp, 0), ErrOp},
		{"data op 8", set(data, OffOp, 8), ErrOp},
		{"sparse op 127", set(sparse, OffOp, 127), ErrOp},
		{"error op 100", set(seeds["error"], OffOp, 100), ErrOp},
		{"data one byte long", append(bytes.Clone(data), 0), ErrLength},
		{"data one byte short", data[:len(data)-1], ErrLength},
		{"data count 0", hdr(TypeData, Float32, OpSum, 0, nil), ErrLength},
		{"data count overflow", hdr(TypeData, Float64, OpSum, ^uint32(0), make([]byte, 8)), ErrLength},
		{"sparse one byte short", sparse[:len(sparse)-1], ErrLength},
		{"sparse dense-sized", hdr(TypeSparse, Float64, OpSum, 2, make([]byte, 16)), ErrLength},
		{"sparse count 0 with pairs", hdr(TypeSparse, Float64, OpSum, 0, make([]byte, 12)), ErrLength},
		{"join count 1", set(seeds["join"], OffCount, 0, 0, 0, 1), ErrLength},
		{"join body short", seeds["join"][:HeaderLen+JoinBodyLen-1], ErrLength},
		{"join with a version-1 body", seeds["join"][:HeaderLen+JoinBodyLenV1], ErrLength},
		{"join-ack body long", append(bytes.Clone(seeds["join-ack"]), 0), ErrLength},
		{"leave with payload", append(bytes.Clone(seeds["leave"]), 0), ErrLength},
		{"error body under 4 bytes", seeds["error"][:HeaderLen+3], ErrLength},
		{"error text length too big for payload", set(seeds["error"], HeaderLen+2, 0, 100), ErrLength},
		{"error text too long", hdr(TypeError, 0, 0, 0, append([]byte{0, 1, 4, 1}, longText...)), ErrBody},
		{"abort body under 4 bytes", seeds["abort"][:HeaderLen+3], ErrLength},
		{"abort text length too big for payload", set(seeds["abort"], HeaderLen+2, 1, 0), ErrLength},
		{"abort text too long", hdr(TypeAbort, 0, 0, 0, append([]byte{0, 6, 4, 1}, longText...)), ErrBody},
		{"abort count 1", set(seeds["abort"], OffCount, 0, 0, 0, 1), ErrLength},
		{"abort dtype 200", set(seeds["abort"], OffDType, 200), ErrDType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h Header
			payload, err := h.Unmarshal(tt.pkt)
			if err != tt.want {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if payload != nil {
				t.Errorf("payload = %x on error, want nil", payload)
			}
		})
	}
}

func TestPayloadLen(t *testing.T) {
	tests := []struct {
		h    Header
		want int
	}{
		{testHeader(TypeData, Float64, OpSum, 128), 1024},
		{testHeader(TypeResult, Int8, OpSum, 3), 3},
		{testHeader(TypeSparse, Int16, OpSum, 10), 60},
		{testHeader(TypeSpill, Int64, OpSum, 0), 0},
		{testHeader(TypeJoin, Int64, OpSum, 0), JoinBodyLen},
		{testHeader(TypeJoinAck, 0, 0, 0), JoinAckBodyLen},
		{testHeader(TypeLeave, 0, 0, 0), 0},
		{testHeader(TypeError, 0, 0, 0), -1},
		{testHeader(TypeAbort, 0, 0, 0), -1},
		{testHeader(Type(0), Float32, OpSum, 1), -1},
		{testHeader(TypeData, DType(0), OpSum, 1), -1},
	}
	for _, tt := range tests {
		if got := tt.h.PayloadLen(); got != tt.want {
			t.Errorf("%v/%v count %d: PayloadLen = %d, want %d", tt.h.Type, tt.h.DType, tt.h.Count, got, tt.want)
		}
	}
	for _, d := range DTypes {
		if got, want := PairSize(d), 4+d.Size(); got != want {
			t.Errorf("PairSize(%v) = %d, want %d", d, got, want)
		}
	}
}

func TestDropReason(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{ErrShort, "short"}, {ErrVersion, "version"}, {ErrType, "type"},
		{ErrFlags, "flags"}, {ErrDType, "dtype"}, {ErrOp, "op"},
		{ErrLength, "length"}, {ErrBody, "body"},
		{fmt.Errorf("job 7: %w", ErrOp), "op"},
		{errors.New("boom"), "other"}, {nil, "other"},
	}
	for _, tt := range tests {
		if got := DropReason(tt.err); got != tt.want {
			t.Errorf("DropReason(%v) = %q, want %q", tt.err, got, tt.want)
		}
		// A caller's wrapping keeps the reason: every sentinel is matched
		// with errors.Is, not compared.
		if wrapped := fmt.Errorf("from 10.0.0.1: %w", tt.err); tt.err != nil && DropReason(wrapped) != tt.want {
			t.Errorf("DropReason(%v) = %q, want %q", wrapped, DropReason(wrapped), tt.want)
		}
	}
	seen := map[string]bool{}
	for _, r := range DropReasons {
		if seen[r] {
			t.Errorf("DropReasons lists %q twice", r)
		}
		seen[r] = true
	}
	for _, tt := range tests {
		if !seen[tt.want] {
			t.Errorf("DropReasons lacks %q", tt.want)
		}
	}
	if len(DropReasons) != 9 {
		t.Errorf("len(DropReasons) = %d, want 9", len(DropReasons))
	}
}

// packet1K is a full-size data packet: 256 float32 elements, 1 KiB payload.
func packet1K() []byte {
	h := testHeader(TypeData, Float32, OpSum, 256)
	return AppendPacket(nil, &h, make([]byte, 1024))
}

func TestZeroAllocs(t *testing.T) {
	pkt := packet1K()
	var h Header
	var payload []byte
	if n := testing.AllocsPerRun(100, func() { payload, _ = h.Unmarshal(pkt) }); n != 0 {
		t.Errorf("Header.Unmarshal: %v allocs, want 0", n)
	}
	buf := make([]byte, 0, 2048)
	if n := testing.AllocsPerRun(100, func() { _ = h.MarshalTo(buf[:HeaderLen]) }); n != 0 {
		t.Errorf("Header.MarshalTo: %v allocs, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { buf = AppendPacket(buf[:0], &h, payload) }); n != 0 {
		t.Errorf("AppendPacket: %v allocs, want 0", n)
	}
	// The bad-packet path must be as cheap as the good one.
	bad := bytes.Clone(pkt)
	bad[OffType] = 99
	if n := testing.AllocsPerRun(100, func() { _, _ = h.Unmarshal(bad) }); n != 0 {
		t.Errorf("Header.Unmarshal (bad): %v allocs, want 0", n)
	}
}

func BenchmarkUnmarshal(b *testing.B) {
	pkt := packet1K()
	b.SetBytes(int64(len(pkt)))
	b.ReportAllocs()
	var h Header
	n := 0
	for b.Loop() {
		if _, err := h.Unmarshal(pkt); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "pkts/s")
}

func BenchmarkMarshal(b *testing.B) {
	h := testHeader(TypeData, Float32, OpSum, 256)
	buf := make([]byte, HeaderLen)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if err := h.MarshalTo(buf); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "pkts/s")
}

func BenchmarkAppendPacket(b *testing.B) {
	h := testHeader(TypeData, Float32, OpSum, 256)
	payload := make([]byte, 1024)
	buf := make([]byte, 0, 2048)
	b.SetBytes(int64(HeaderLen + len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendPacket(buf[:0], &h, payload)
	}
}
