package wire

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
	"unicode/utf8"
)

// Fuzz targets for the body decoders and the pairs parser. FuzzDecode
// reaches a body only behind a header that decodes; these feed each decoder
// arbitrary bytes directly. Each compares the decoder with a plain reading
// of the byte layout in docs/PROTOCOL.md (literal offsets, not the
// package's constants, so a wrong constant shows; the sets of codes come
// from their types, which grow), checks that every error
// is a sentinel with a drop reason, that what decodes re-encodes to the
// same bytes, and that Header.Unmarshal's length check on the same payload
// agrees with the body's.

// FuzzJoinBody checks JoinBody.Unmarshal.
func FuzzJoinBody(f *testing.F) {
	addSeeds(f, "FuzzJoinBody")
	f.Fuzz(func(t *testing.T, b []byte) {
		orig := bytes.Clone(b)
		var j JoinBody
		err := j.Unmarshal(b)
		if !bytes.Equal(b, orig) {
			t.Fatal("Unmarshal modified its input")
		}
		var want error
		switch {
		case len(b) != 32:
			want = ErrLength
		case !Algo(b[2]).Valid() || !JoinOptions(b[4]).Known() || !Storage(b[5]).Valid():
			want = ErrBody
		case (b[6]|b[7] != 0) != (JoinOptions(b[4])&OptBounded != 0): // a deadline exactly with OptBounded
			want = ErrBody
		}
		if err != want {
			t.Fatalf("Unmarshal(%x) = %v, want %v", b, err, want)
		}
		checkHeaderAgrees(t, TypeJoin, 0, Float32, b, err)
		if err != nil {
			return
		}
		if j.World != binary.BigEndian.Uint16(b[0:]) || j.DeadlineMillis != binary.BigEndian.Uint16(b[6:]) || j.Elements != binary.BigEndian.Uint64(b[8:]) ||
			j.PacketElems != binary.BigEndian.Uint32(b[16:]) || j.TimeoutMillis != binary.BigEndian.Uint32(b[20:]) ||
			j.BlockElems != binary.BigEndian.Uint32(b[24:]) || j.StreamPackets != binary.BigEndian.Uint32(b[28:]) {
			t.Fatalf("decoded %+v from %x", j, b)
		}
		if out := j.Append(nil); !bytes.Equal(out, b) {
			t.Fatalf("re-encoded\n%x\nwant\n%x", out, b)
		}
	})
}

// FuzzJoinAckBody checks JoinAckBody.Unmarshal.
func FuzzJoinAckBody(f *testing.F) {
	addSeeds(f, "FuzzJoinAckBody")
	f.Fuzz(func(t *testing.T, b []byte) {
		orig := bytes.Clone(b)
		var a JoinAckBody
		err := a.Unmarshal(b)
		if !bytes.Equal(b, orig) {
			t.Fatal("Unmarshal modified its input")
		}
		grouped := len(b) == 28 // the body of a JoinAck with flag group
		var want error
		switch {
		case len(b) != 20 && !grouped:
			want = ErrLength
		case !Algo(b[4]).Valid() || Algo(b[4]) == AlgoAuto || b[6] != 0 || b[7] != 0: // a concrete design, reserved zero
			want = ErrBody
		case grouped && (b[20]>>4 != 0xe || b[24]|b[25] == 0 || b[26]|b[27] != 0): // 224.0.0.0/4, a port, reserved zero
			want = ErrBody
		}
		if err != want {
			t.Fatalf("Unmarshal(%x) = %v, want %v", b, err, want)
		}
		flags := Flags(0)
		if grouped {
			flags = FlagGroup
		}
		checkHeaderAgrees(t, TypeJoinAck, flags, 0, b, err)
		if err != nil {
			return
		}
		var group netip.AddrPort
		if grouped {
			group = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[20:24])), binary.BigEndian.Uint16(b[24:]))
		}
		if a.Window != binary.BigEndian.Uint32(b[0:]) || a.Buffers != b[5] || a.PacketElems != binary.BigEndian.Uint32(b[8:]) ||
			a.Blocks != binary.BigEndian.Uint32(b[12:]) || a.QuotaBuffers != binary.BigEndian.Uint32(b[16:]) || a.Group != group {
			t.Fatalf("decoded %+v from %x", a, b)
		}
		if out := a.Append(nil); !bytes.Equal(out, b) {
			t.Fatalf("re-encoded\n%x\nwant\n%x", out, b)
		}
	})
}

// FuzzErrorBody checks ErrorBody.Unmarshal, and that the text it returns
// aliases the input (decoding does not allocate) without reaching past it.
func FuzzErrorBody(f *testing.F) {
	addSeeds(f, "FuzzErrorBody")
	f.Fuzz(func(t *testing.T, b []byte) {
		orig := bytes.Clone(b)
		var e ErrorBody
		err := e.Unmarshal(b)
		if !bytes.Equal(b, orig) {
			t.Fatal("Unmarshal modified its input")
		}
		var want error
		if len(b) < 4 {
			want = ErrLength
		} else {
			code, n := binary.BigEndian.Uint16(b[0:]), int(binary.BigEndian.Uint16(b[2:]))
			switch {
			case n > 1024:
				want = ErrBody
			case len(b) != 4+n:
				want = ErrLength
			case !ErrorCode(code).Valid() || !utf8.Valid(b[4:]):
				want = ErrBody
			}
		}
		if err != want {
			t.Fatalf("Unmarshal(%x) = %v, want %v", b, err, want)
		}
		// The header checks the lengths only: a bad code or bad UTF-8 is
		// the body decoder's to find.
		hdrWant := want
		if want == ErrBody && len(b) >= 4 && binary.BigEndian.Uint16(b[2:]) <= 1024 {
			hdrWant = nil
		}
		checkHeaderAgrees(t, TypeError, 0, 0, b, hdrWant)
		checkHeaderAgrees(t, TypeAbort, 0, 0, b, hdrWant)
		if err != nil {
			return
		}
		if e.Code != ErrorCode(binary.BigEndian.Uint16(b)) || !bytes.Equal(e.Text, b[4:]) || cap(e.Text) != len(e.Text) {
			t.Fatalf("decoded code %v text %q (cap %d) from %x", e.Code, e.Text, cap(e.Text), b)
		}
		if len(e.Text) > 0 && &e.Text[0] != &b[4] {
			t.Fatal("Text does not alias the input")
		}
		if out := e.Append(nil); !bytes.Equal(out, b) {
			t.Fatalf("re-encoded\n%x\nwant\n%x", out, b)
		}
		m := make([]byte, e.Len())
		if err := e.MarshalTo(m); err != nil || !bytes.Equal(m, b) {
			t.Fatalf("MarshalTo = %x, %v; want %x", m, err, b)
		}
		// The whole Error packet the switch would build from it decodes
		// to the same body.
		h := Header{Job: 7, Token: 9}
		pkt := AppendError(nil, &h, e.Code, e.Message())
		var g Header
		if payload, err := g.Unmarshal(pkt); err != nil || !bytes.Equal(payload, b) {
			t.Fatalf("AppendError packet: payload %x, err %v; want %x", payload, err, b)
		}
	})
}

// FuzzPairs checks ParsePairs and PairsOf on arbitrary payloads, dtypes and
// counts: they fail exactly when the length is not count (or a whole
// number of) pairs of a known dtype, and the view reads every pair where
// the layout puts it, never past the payload.
func FuzzPairs(f *testing.F) {
	addSeeds(f, "FuzzPairs")
	f.Fuzz(func(t *testing.T, b []byte, dt byte, count uint32) {
		orig := bytes.Clone(b)
		elem := [...]int{1, 2, 4, 8, 4, 8, 2, 2} // int8 .. float16, codes 1..8
		known := dt >= 1 && dt <= 8
		pairSize := 4
		if known {
			pairSize += elem[dt-1]
		}
		var want error
		switch {
		case !known:
			want = ErrDType
		case uint64(len(b)) != uint64(count)*uint64(pairSize):
			want = ErrLength
		}
		p, err := ParsePairs(b, DType(dt), count)
		if err != want {
			t.Fatalf("ParsePairs(%d bytes, %d, %d) = %v, want %v", len(b), dt, count, err, want)
		}
		if err == nil {
			checkPairs(t, p, b, DType(dt), pairSize)
		} else if DropReason(err) == ReasonOther {
			t.Fatalf("error %v has no drop reason", err)
		}
		// The header of a Sparse packet with this payload checks the same.
		h := Header{Type: TypeSparse, DType: DType(dt), Op: OpSum, Count: count}
		var g Header
		if _, herr := g.Unmarshal(AppendPacket(nil, &h, b)); herr != want {
			t.Fatalf("Header.Unmarshal of the Sparse packet = %v, ParsePairs %v", herr, want)
		}

		want = nil
		switch {
		case !known:
			want = ErrDType
		case len(b)%pairSize != 0:
			want = ErrLength
		}
		p, err = PairsOf(b, DType(dt))
		if err != want {
			t.Fatalf("PairsOf(%d bytes, %d) = %v, want %v", len(b), dt, err, want)
		}
		if err == nil {
			checkPairs(t, p, b, DType(dt), pairSize)
		}
		if !bytes.Equal(b, orig) {
			t.Fatal("parsing modified its input")
		}
	})
}

// checkPairs reads every pair of p three ways (All, Index/Value, Pair) and
// compares it with the bytes where the layout puts it, then rebuilds the
// payload with AppendPair and AppendPairs.
func checkPairs(t *testing.T, p Pairs, b []byte, dt DType, pairSize int) {
	t.Helper()
	n := len(b) / pairSize
	if p.Len() != n || !bytes.Equal(p.Bytes(), b) {
		t.Fatalf("Len %d, %d bytes; want %d pairs of %d bytes", p.Len(), len(p.Bytes()), n, pairSize)
	}
	indices := make([]uint32, 0, n)
	var values, one []byte
	i := 0
	for idx, v := range p.All() {
		at := b[i*pairSize : (i+1)*pairSize]
		if idx != binary.LittleEndian.Uint32(at) || idx != p.Index(i) || !bytes.Equal(v, at[4:]) || !bytes.Equal(p.Value(i), v) {
			t.Fatalf("pair %d: (%d, %x), layout has %x", i, idx, v, at)
		}
		if cap(v) != len(v) || cap(p.Pair(i)) != pairSize || !bytes.Equal(p.Pair(i), at) {
			t.Fatalf("pair %d: a view reaches past its pair", i)
		}
		indices = append(indices, idx)
		values = append(values, v...)
		one = AppendPair(one, idx, v)
		i++
	}
	if i != n {
		t.Fatalf("All yielded %d pairs, want %d", i, n)
	}
	if n > 0 && !bytes.Equal(one, b) {
		t.Fatalf("AppendPair rebuilt\n%x\nwant\n%x", one, b)
	}
	all, err := AppendPairs(nil, dt, indices, values)
	if err != nil || !bytes.Equal(all, b) {
		t.Fatalf("AppendPairs rebuilt %x, %v; want %x", all, err, b)
	}
}

// checkHeaderAgrees wraps body in a header of type typ with flags and
// checks that Header.Unmarshal's own length check says want (nil or the
// body's error).
func checkHeaderAgrees(t *testing.T, typ Type, flags Flags, dt DType, body []byte, want error) {
	t.Helper()
	if want != nil && DropReason(want) == ReasonOther {
		t.Fatalf("error %v has no drop reason", want)
	}
	if want == ErrBody && !typ.hasErrorBody() {
		want = nil // only the body decoder reads join and join-ack fields
	}
	h := Header{Type: typ, Flags: flags, DType: dt}
	if dt != 0 {
		h.Op = OpSum
	}
	var g Header
	if _, err := g.Unmarshal(AppendPacket(nil, &h, body)); err != want {
		t.Fatalf("Header.Unmarshal of the %v packet = %v, want %v", typ, err, want)
	}
}

// addSeeds adds the committed seeds of target (fuzzSeeds) to f.
func addSeeds(f *testing.F, target string) {
	for _, s := range fuzzSeeds() {
		if s.target == target {
			f.Add(s.args...)
		}
	}
}
