package wire

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// v1Join is a Join as protocol version 1 encoded it: the same header with
// version byte 1, and the 24-byte body whose PacketElems carried a sparse
// job's block size (here 4096).
func v1Join() []byte {
	h := testHeader(TypeJoin, Float32, OpSum, 0)
	h.Version = Version1
	body := make([]byte, 24)
	binary.BigEndian.PutUint16(body[0:], 2) // world
	body[4], body[5] = byte(OptSparse), byte(StorageHash)
	binary.BigEndian.PutUint64(body[8:], 1<<20) // elements
	binary.BigEndian.PutUint32(body[16:], 4096) // packet elems: the block size in version 1
	binary.BigEndian.PutUint32(body[20:], 5000) // timeout ms
	return AppendPacket(nil, &h, body)
}

// TestVersion2JoinBody pins the version step: a version-1 join is refused
// by Unmarshal (version), recognised by UnmarshalOldJoin, and a version-2
// body is the version-1 body followed by BlockElems and StreamPackets.
func TestVersion2JoinBody(t *testing.T) {
	if Version != 2 || JoinBodyLen != 32 || JoinBodyLenV1 != 24 {
		t.Fatalf("Version %d, JoinBodyLen %d, JoinBodyLenV1 %d: docs/PROTOCOL.md describes 2, 32, 24", Version, JoinBodyLen, JoinBodyLenV1)
	}
	old := v1Join()
	var h Header
	if _, err := h.Unmarshal(old); err != ErrVersion {
		t.Fatalf("Unmarshal of a version-1 join = %v, want %v", err, ErrVersion)
	}
	if err := h.UnmarshalOldJoin(old); err != nil {
		t.Fatalf("UnmarshalOldJoin of a version-1 join: %v", err)
	}
	want := testHeader(TypeJoin, Float32, OpSum, 0)
	want.Version = Version1
	if h != want {
		t.Fatalf("UnmarshalOldJoin decoded %+v, want %+v", h, want)
	}
	// An Error answering it keeps version 1, so its sender can read it.
	reply := AppendError(nil, &h, CodeBadRequest, "upgrade")
	if reply[OffVersion] != Version1 {
		t.Fatalf("error reply carries version %d, want 1", reply[OffVersion])
	}

	j := JoinBody{World: 2, Options: OptSparse, Storage: StorageHash, Elements: 1 << 20, TimeoutMillis: 5000, BlockElems: 4096, StreamPackets: 9}
	b := j.Append(nil)
	if !bytes.Equal(b[:16], old[HeaderLen:HeaderLen+16]) || binary.BigEndian.Uint32(b[16:]) != 0 ||
		binary.BigEndian.Uint32(b[20:]) != 5000 || binary.BigEndian.Uint32(b[24:]) != 4096 || binary.BigEndian.Uint32(b[28:]) != 9 {
		t.Fatalf("version-2 body %x: want version 1's first 16 bytes, packet elems 0, timeout 5000, block elems 4096, stream packets 9", b)
	}
}

// TestUnmarshalOldJoinRefuses: only a well-formed version-1 Join passes.
func TestUnmarshalOldJoinRefuses(t *testing.T) {
	set := func(b []byte, off int, v ...byte) []byte { c := bytes.Clone(b); copy(c[off:], v); return c }
	old := v1Join()
	seeds := map[string][]byte{}
	for _, s := range seedPackets() {
		seeds[s.name] = s.pkt
	}
	for _, tt := range []struct {
		name string
		pkt  []byte
		want error
	}{
		{"short", old[:HeaderLen-1], ErrShort},
		{"current join", seeds["join"], ErrVersion},
		{"version 0", set(old, OffVersion, 0), ErrVersion},
		{"version 3", set(old, OffVersion, 3), ErrVersion},
		{"version-1 data", set(seeds["data-float32"], OffVersion, 1), ErrVersion},
		{"unknown flag", set(old, OffFlags, 0, 0x20), ErrFlags},
		{"dtype 0", set(old, OffDType, 0), ErrDType},
		{"op 0", set(old, OffOp, 0), ErrOp},
		{"count 1", set(old, OffCount, 0, 0, 0, 1), ErrLength},
		{"body short", old[:len(old)-1], ErrLength},
		{"version-2 body", append(bytes.Clone(old), make([]byte, 8)...), ErrLength},
	} {
		var h Header
		if err := h.UnmarshalOldJoin(tt.pkt); err != tt.want {
			t.Errorf("%s: UnmarshalOldJoin = %v, want %v", tt.name, err, tt.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { var h Header; _ = h.UnmarshalOldJoin(old) }); n != 0 {
		t.Errorf("UnmarshalOldJoin allocates %.0f times", n)
	}
}
