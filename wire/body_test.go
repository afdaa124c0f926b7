package wire

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestJoinBody(t *testing.T) {
	good := JoinBody{World: 65535, Algo: AlgoTree, Buffers: 255, Options: OptReproducible | OptSparse,
		Storage: StorageArray, Elements: 1<<64 - 1, PacketElems: 512, TimeoutMillis: 1}
	b := good.Append(nil)
	if len(b) != JoinBodyLen {
		t.Fatalf("len = %d, want %d", len(b), JoinBodyLen)
	}
	var j JoinBody
	if err := j.Unmarshal(b); err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if j != good {
		t.Errorf("got %+v, want %+v", j, good)
	}
	if err := good.MarshalTo(make([]byte, JoinBodyLen-1)); err != ErrShort {
		t.Errorf("MarshalTo short: err = %v, want ErrShort", err)
	}

	set := func(off int, v ...byte) []byte { c := bytes.Clone(b); copy(c[off:], v); return c }
	bad := []struct {
		name string
		b    []byte
		want error
	}{
		{"short", b[:JoinBodyLen-1], ErrLength},
		{"long", append(bytes.Clone(b), 0), ErrLength},
		{"algo 4", set(joinOffAlgo, 4), ErrBody},
		{"options bit 4", set(joinOffOptions, 16), ErrBody},
		{"bounded without a deadline", set(joinOffOptions, byte(OptBounded)), ErrBody},
		{"storage 3", set(joinOffStorage, 3), ErrBody},
		{"deadline without bounded", set(joinOffDeadline+1, 1), ErrBody},
	}
	for _, tt := range bad {
		if err := new(JoinBody).Unmarshal(tt.b); err != tt.want {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
}

func TestJoinAckBody(t *testing.T) {
	good := JoinAckBody{Window: 1 << 31, Algo: AlgoMulti, Buffers: 4, PacketElems: 256, Blocks: 7, QuotaBuffers: 64}
	b := good.Append(nil)
	if len(b) != JoinAckBodyLen {
		t.Fatalf("len = %d, want %d", len(b), JoinAckBodyLen)
	}
	var a JoinAckBody
	if err := a.Unmarshal(b); err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if a != good {
		t.Errorf("got %+v, want %+v", a, good)
	}
	if err := good.MarshalTo(make([]byte, JoinAckBodyLen-1)); err != ErrShort {
		t.Errorf("MarshalTo short: err = %v, want ErrShort", err)
	}
	set := func(off int, v ...byte) []byte { c := bytes.Clone(b); copy(c[off:], v); return c }
	bad := []struct {
		name string
		b    []byte
		want error
	}{
		{"short", b[:JoinAckBodyLen-1], ErrLength},
		{"algo auto", set(ackOffAlgo, byte(AlgoAuto)), ErrBody},
		{"algo 4", set(ackOffAlgo, 4), ErrBody},
		{"reserved", set(ackOffReserved, 0x80), ErrBody},
	}
	for _, tt := range bad {
		if err := new(JoinAckBody).Unmarshal(tt.b); err != tt.want {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
}

// TestJoinAckGroup: a body with a multicast group round-trips at
// JoinAckBodyLen+JoinAckGroupLen bytes, and a group that is not IPv4
// multicast with a port, or a non-zero reserved byte, is malformed.
func TestJoinAckGroup(t *testing.T) {
	good := JoinAckBody{Window: 16, Algo: AlgoSingle, PacketElems: 256, Blocks: 7, QuotaBuffers: 64,
		Group: netip.MustParseAddrPort("239.255.70.3:7471")}
	b := good.Append(nil)
	if len(b) != JoinAckBodyLen+JoinAckGroupLen || good.Len() != len(b) {
		t.Fatalf("len = %d (Len %d), want %d", len(b), good.Len(), JoinAckBodyLen+JoinAckGroupLen)
	}
	var a JoinAckBody
	if err := a.Unmarshal(b); err != nil || a != good {
		t.Fatalf("Unmarshal = %+v, %v; want %+v", a, err, good)
	}
	if err := a.Unmarshal(b[:JoinAckBodyLen]); err != nil || a.Group.IsValid() {
		t.Errorf("without the group: %+v, %v; want no group", a, err)
	}
	set := func(off int, v ...byte) []byte { c := bytes.Clone(b); copy(c[off:], v); return c }
	for _, tt := range []struct {
		name string
		b    []byte
		want error
	}{
		{"one byte short", b[:len(b)-1], ErrLength},
		{"unicast group", set(ackOffGroup, 10, 0, 0, 1), ErrBody},
		{"port 0", set(ackOffGroupPort, 0, 0), ErrBody},
		{"reserved", set(ackOffGroupRes, 0, 1), ErrBody},
	} {
		if err := new(JoinAckBody).Unmarshal(tt.b); err != tt.want {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
	// The whole packet: FlagGroup set, and the header's length check
	// takes the longer body.
	h := Header{Version: Version, Type: TypeJoinAck, Job: 3, Token: 9}
	pkt := AppendJoinAck(nil, &h, &good)
	var hh Header
	payload, err := hh.Unmarshal(pkt)
	if err != nil || hh.Flags&FlagGroup == 0 || len(payload) != good.Len() {
		t.Fatalf("packet: flags %v, payload %d bytes, err %v", hh.Flags, len(payload), err)
	}
	noGroup := good
	noGroup.Group = netip.AddrPort{}
	if pkt := AppendJoinAck(nil, &hh, &noGroup); pkt[OffFlags+1]&byte(FlagGroup) != 0 || len(pkt) != HeaderLen+JoinAckBodyLen {
		t.Errorf("an ack without a group keeps FlagGroup or its length: % x", pkt)
	}
	if _, err := hh.Unmarshal(pkt[:HeaderLen+JoinAckBodyLen]); err != ErrLength {
		t.Errorf("FlagGroup with a short body: err = %v, want ErrLength", err)
	}
}

func TestErrorBody(t *testing.T) {
	good := ErrorBody{Code: CodeJobMismatch, Text: []byte("world 8 ≠ 4")}
	b := good.Append(nil)
	var e ErrorBody
	if err := e.Unmarshal(b); err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if e.Code != good.Code || e.Message() != "world 8 ≠ 4" {
		t.Errorf("got %v, want %v", e.String(), good.String())
	}
	if got, want := e.String(), "job-mismatch: world 8 ≠ 4"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if &e.Text[0] != &b[ErrorBodyMinLen] {
		t.Error("Text does not alias the packet")
	}
	m := make([]byte, good.Len())
	if err := good.MarshalTo(m); err != nil || !bytes.Equal(m, b) {
		t.Errorf("MarshalTo = %x, %v; want %x", m, err, b)
	}
	if err := good.MarshalTo(m[:len(m)-1]); err != ErrShort {
		t.Errorf("MarshalTo short: err = %v, want ErrShort", err)
	}
	long := ErrorBody{Code: CodeInternal, Text: make([]byte, MaxErrorText+1)}
	if err := long.MarshalTo(make([]byte, MaxErrorBodyLen+1)); err != ErrBody {
		t.Errorf("MarshalTo text too long: err = %v, want ErrBody", err)
	}

	enc := func(code uint16, text string) []byte {
		return appendErrorBody(nil, ErrorCode(code), text)
	}
	bad := []struct {
		name string
		b    []byte
		want error
	}{
		{"3 bytes", b[:3], ErrLength},
		{"text cut", b[:len(b)-1], ErrLength},
		{"trailing byte", append(bytes.Clone(b), 0), ErrLength},
		{"code 0", enc(0, "x"), ErrBody},
		{"code 11", enc(11, "x"), ErrBody},
		{"not utf-8", enc(uint16(CodeInternal), "a\xffb"), ErrBody},
		{"text too long", append([]byte{0, 8, 4, 1}, make([]byte, MaxErrorText+1)...), ErrBody},
	}
	for _, tt := range bad {
		if err := new(ErrorBody).Unmarshal(tt.b); err != tt.want {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
}

func TestAppendErrorAlwaysDecodes(t *testing.T) {
	req := testHeader(TypeData, Float32, OpSum, 4)
	tests := []struct {
		name, text, want string
	}{
		{"plain", "unknown job 7", "unknown job 7"},
		{"invalid utf-8", "a\xffb", "a\uFFFDb"},
		{"cut at a rune", strings.Repeat("€", 400), strings.Repeat("€", MaxErrorText/3)},
		{"exactly max", strings.Repeat("x", MaxErrorText), strings.Repeat("x", MaxErrorText)},
	}
	appends := []struct {
		typ    Type
		append func([]byte, *Header, ErrorCode, string) []byte
	}{{TypeError, AppendError}, {TypeAbort, AppendAbort}}
	for _, tt := range tests {
		for _, a := range appends {
			t.Run(a.typ.String()+"/"+tt.name, func(t *testing.T) {
				pkt := a.append(nil, &req, CodeUnknownJob, tt.text)
				var h Header
				payload, err := h.Unmarshal(pkt)
				if err != nil {
					t.Fatalf("Unmarshal: %v", err)
				}
				if h.Type != a.typ || h.Count != 0 || h.Job != req.Job || h.Token != req.Token {
					t.Errorf("header = %+v", h)
				}
				var e ErrorBody
				if err := e.Unmarshal(payload); err != nil {
					t.Fatalf("ErrorBody.Unmarshal: %v", err)
				}
				if e.Code != CodeUnknownJob || e.Message() != tt.want {
					t.Errorf("got %v %q, want %q", e.Code, e.Message(), tt.want)
				}
			})
		}
	}
}

func TestTruncateUTF8(t *testing.T) {
	s := "aé€😀" // 1 + 2 + 3 + 4 bytes
	for limit := 0; limit <= len(s)+1; limit++ {
		got := truncateUTF8(s, limit)
		if !utf8.ValidString(got) || len(got) > limit || !strings.HasPrefix(s, got) {
			t.Errorf("truncateUTF8(%q, %d) = %q", s, limit, got)
		}
		if next := truncateUTF8(s, limit+1); len(next) < len(got) {
			t.Errorf("truncateUTF8 not monotonic at %d", limit)
		}
	}
	if got := truncateUTF8(s, 6); got != "aé€" {
		t.Errorf("truncateUTF8(%q, 6) = %q, want %q", s, got, "aé€")
	}
}

func TestAppendHelpersSetTypeAndCount(t *testing.T) {
	h := testHeader(TypeData, Float32, OpSum, 99)
	join := AppendJoin(nil, &h, &JoinBody{World: 2, Elements: 10})
	ack := AppendJoinAck(nil, &h, &JoinAckBody{Window: 1, Algo: AlgoSingle})
	for _, tt := range []struct {
		pkt  []byte
		want Type
	}{{join, TypeJoin}, {ack, TypeJoinAck}} {
		var got Header
		if _, err := got.Unmarshal(tt.pkt); err != nil {
			t.Fatalf("%v: %v", tt.want, err)
		}
		if got.Type != tt.want || got.Count != 0 {
			t.Errorf("type %v count %d, want %v count 0", got.Type, got.Count, tt.want)
		}
	}
	if h.Type != TypeData || h.Count != 99 {
		t.Error("helpers modified the caller's header")
	}
}

func TestBodyZeroAllocs(t *testing.T) {
	var j JoinBody
	jb := (&JoinBody{World: 4, Elements: 1}).Append(nil)
	if n := testing.AllocsPerRun(100, func() { _ = j.Unmarshal(jb) }); n != 0 {
		t.Errorf("JoinBody.Unmarshal: %v allocs, want 0", n)
	}
	var e ErrorBody
	eb := (&ErrorBody{Code: CodeTimeout, Text: []byte("allreduce 3 timed out")}).Append(nil)
	if n := testing.AllocsPerRun(100, func() { _ = e.Unmarshal(eb) }); n != 0 {
		t.Errorf("ErrorBody.Unmarshal: %v allocs, want 0", n)
	}
}
