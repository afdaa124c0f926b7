package wire

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/gopacket"
)

// fuzzCorpus is where go test keeps a fuzz target's committed seed corpus.
func fuzzCorpus(target string) string { return filepath.Join("testdata", "fuzz", target) }

// FuzzDecode checks the decoder on arbitrary datagrams: it never panics,
// every error is a sentinel with a drop reason, Header.Unmarshal and
// Flare.DecodeFromBytes agree, and whatever decodes re-encodes to the same
// bytes, bodies included.
func FuzzDecode(f *testing.F) {
	for _, s := range seedPackets() {
		f.Add(s.pkt)
	}
	for _, fr := range readPcap(f, goldenPcap) {
		if len(fr) > udpPayloadOff {
			f.Add(fr[udpPayloadOff:])
		}
	}
	f.Fuzz(checkDecode)
}

// sentinels are the errors a decoder may return; anything else (a wrapped
// or ad hoc error) would reach the drop counters as "other".
var sentinels = []error{ErrShort, ErrVersion, ErrType, ErrFlags, ErrDType, ErrOp, ErrLength, ErrBody}

// udpPayloadOff is where the UDP payload starts in the golden frames:
// Ethernet (14) + IPv4 without options (20) + UDP (8).
const udpPayloadOff = 14 + 20 + 8

func checkDecode(t *testing.T, data []byte) {
	orig := bytes.Clone(data)
	var h Header
	payload, err := h.Unmarshal(data)
	var fl Flare
	if ferr := fl.DecodeFromBytes(data, gopacket.NilDecodeFeedback); ferr != err {
		t.Fatalf("DecodeFromBytes err = %v, Unmarshal err = %v", ferr, err)
	}
	checkOldJoin(t, data, err)
	if !bytes.Equal(data, orig) {
		t.Fatal("decoding modified its input")
	}
	if err != nil {
		if !slices.Contains(sentinels, err) || DropReason(err) == ReasonOther {
			t.Fatalf("error %v is not a sentinel with a drop reason", err)
		}
		return
	}
	// The payload is the rest of the datagram, capped so that appending to
	// it cannot write past it.
	if len(payload) != len(data)-HeaderLen || cap(payload) != len(payload) ||
		(len(payload) > 0 && &payload[0] != &data[HeaderLen]) {
		t.Fatalf("payload of %d bytes (cap %d) is not data[%d:]", len(payload), cap(payload), HeaderLen)
	}
	if fl.Header != h || !bytes.Equal(fl.Payload, payload) || !bytes.Equal(fl.Contents, data[:HeaderLen]) {
		t.Fatalf("Flare layer %+v disagrees with header %+v", fl.Header, h)
	}
	if n := h.PayloadLen(); n != len(payload) && !(n == -1 && h.Type.hasErrorBody()) {
		t.Fatalf("PayloadLen = %d, payload is %d bytes", n, len(payload))
	}
	if out := AppendPacket(nil, &h, payload); !bytes.Equal(out, data) {
		t.Fatalf("re-encoded\n%x\nwant\n%x", out, data)
	}
	checkBody(t, &h, payload, data)
}

// checkOldJoin checks UnmarshalOldJoin on the same datagram: it accepts
// exactly a version-1 Join with a version-1 body, whose header Unmarshal
// would accept at Version with a body of this version, and it returns
// only sentinels.
func checkOldJoin(t *testing.T, data []byte, uerr error) {
	var old Header
	err := old.UnmarshalOldJoin(data)
	if err != nil {
		if !slices.Contains(sentinels, err) {
			t.Fatalf("UnmarshalOldJoin: error %v is not a sentinel", err)
		}
		if uerr == nil && err != ErrVersion {
			t.Fatalf("UnmarshalOldJoin of a current packet = %v, want %v", err, ErrVersion)
		}
		return
	}
	if uerr != ErrVersion || data[OffVersion] != 1 || Type(data[OffType]) != TypeJoin || len(data) != HeaderLen+24 || old.Version != 1 {
		t.Fatalf("UnmarshalOldJoin accepted %x (Unmarshal: %v)", data, uerr)
	}
	now := append(bytes.Clone(data), make([]byte, JoinBodyLen-JoinBodyLenV1)...)
	now[OffVersion] = Version
	var h Header
	if _, err := h.Unmarshal(now); err != nil && err != ErrBody {
		t.Fatalf("UnmarshalOldJoin accepted a header that Unmarshal refuses at version %d: %v", Version, err)
	}
}

// checkBody decodes the body of control packets and checks that it, and the
// whole packet built by the matching Append helper, re-encode exactly.
func checkBody(t *testing.T, h *Header, payload, data []byte) {
	var body, pkt []byte
	var err error
	switch h.Type {
	case TypeJoin:
		var j JoinBody
		if err = j.Unmarshal(payload); err == nil {
			body, pkt = j.Append(nil), AppendJoin(nil, h, &j)
		}
	case TypeJoinAck:
		var a JoinAckBody
		if err = a.Unmarshal(payload); err == nil {
			body, pkt = a.Append(nil), AppendJoinAck(nil, h, &a)
		}
	case TypeError:
		var e ErrorBody
		if err = e.Unmarshal(payload); err == nil {
			body, pkt = e.Append(nil), AppendError(nil, h, e.Code, e.Message())
		}
	case TypeAbort:
		var e ErrorBody
		if err = e.Unmarshal(payload); err == nil {
			body, pkt = e.Append(nil), AppendAbort(nil, h, e.Code, e.Message())
		}
	default:
		return
	}
	if err != nil {
		if err != ErrBody && err != ErrLength {
			t.Fatalf("%v body: unexpected error %v", h.Type, err)
		}
		return
	}
	if !bytes.Equal(body, payload) {
		t.Fatalf("%v body re-encoded\n%x\nwant\n%x", h.Type, body, payload)
	}
	if !bytes.Equal(pkt, data) {
		t.Fatalf("%v packet re-encoded\n%x\nwant\n%x", h.Type, pkt, data)
	}
}

// seedFile is one file of a fuzz target's committed seed corpus: the
// target's arguments, in order.
type seedFile struct {
	target, name string
	args         []any
}

// fuzzSeeds lists the committed corpus of every fuzz target in the package:
// every seed packet for FuzzDecode, and the bodies and pair payloads of the
// seed packets, valid and broken, for the body and pairs targets.
func fuzzSeeds() []seedFile {
	var out []seedFile
	add := func(target, name string, args ...any) { out = append(out, seedFile{target, name, args}) }
	set := func(b []byte, off int, v ...byte) []byte { c := bytes.Clone(b); copy(c[off:], v); return c }
	var join []byte
	for _, s := range seedPackets() {
		add("FuzzDecode", s.name, s.pkt)
		switch s.h.Type {
		case TypeJoin:
			add("FuzzJoinBody", s.name, s.payload)
			join = s.payload
		case TypeJoinAck:
			add("FuzzJoinAckBody", s.name, s.payload)
			add("FuzzJoinAckBody", s.name+"-algo-auto", set(s.payload, ackOffAlgo, byte(AlgoAuto)))
		case TypeError, TypeAbort:
			add("FuzzErrorBody", s.name, s.payload)
		case TypeSparse, TypeSpill:
			add("FuzzPairs", s.name, s.payload, byte(s.h.DType), s.h.Count)
		}
	}
	add("FuzzJoinBody", "deadline-without-bounded", set(join, joinOffDeadline+1, 1))
	add("FuzzJoinBody", "storage-3", set(join, joinOffStorage, 3))
	bounded := JoinBody{World: 4, Algo: AlgoSingle, Options: OptBounded, DeadlineMillis: 5, Elements: 1000}
	add("FuzzJoinBody", "bounded", bounded.Append(nil))
	add("FuzzJoinBody", "short", join[:JoinBodyLen-1])
	add("FuzzJoinBody", "version-1-length", join[:JoinBodyLenV1])
	add("FuzzDecode", "join-version-1", v1Join())
	add("FuzzErrorBody", "not-utf8", appendErrorBody(nil, CodeInternal, "a\xffb"))
	add("FuzzErrorBody", "code-0", appendErrorBody(nil, 0, "x"))
	add("FuzzErrorBody", "text-too-long", append([]byte{0, 8, 4, 1}, make([]byte, MaxErrorText+1)...))
	pairs := pairsF64([]uint32{1, 2, 3}, []float64{1, 2, 3})
	add("FuzzPairs", "unknown-dtype", pairs, byte(0), uint32(3))
	add("FuzzPairs", "count-too-large", pairs, byte(Float64), uint32(4))
	add("FuzzPairs", "huge-count", pairs, byte(Int32), uint32(1<<32-1))
	return out
}

// corpusFile encodes args the way go test writes a corpus file.
func corpusFile(args ...any) []byte {
	b := []byte("go test fuzz v1\n")
	for _, a := range args {
		switch v := a.(type) {
		case []byte:
			b = fmt.Appendf(b, "[]byte(%q)\n", v)
		case byte:
			b = fmt.Appendf(b, "byte(%q)\n", v)
		case uint32:
			b = fmt.Appendf(b, "uint32(%d)\n", v)
		default:
			panic(fmt.Sprintf("corpusFile: no encoding for %T", a))
		}
	}
	return b
}

// TestFuzzCorpus keeps the committed seed corpora in step with fuzzSeeds;
// go test also runs every file there through its target. Regenerate with
// go test ./wire -run FuzzCorpus -update.
func TestFuzzCorpus(t *testing.T) {
	for _, s := range fuzzSeeds() {
		dir := fuzzCorpus(s.target)
		path := filepath.Join(dir, s.name)
		want := corpusFile(s.args...)
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale (run with -update)", path)
		}
	}
}
