package wire

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/gopacket"
)

// fuzzCorpus is where go test keeps FuzzDecode's committed seed corpus.
var fuzzCorpus = filepath.Join("testdata", "fuzz", "FuzzDecode")

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
	if !bytes.Equal(data, orig) {
		t.Fatal("decoding modified its input")
	}
	if err != nil {
		if DropReason(err) == ReasonOther {
			t.Fatalf("error %v has no drop reason", err)
		}
		return
	}
	if fl.Header != h || !bytes.Equal(fl.Payload, payload) || !bytes.Equal(fl.Contents, data[:HeaderLen]) {
		t.Fatalf("Flare layer %+v disagrees with header %+v", fl.Header, h)
	}
	if n := h.PayloadLen(); n != len(payload) && !(n == -1 && h.Type == TypeError) {
		t.Fatalf("PayloadLen = %d, payload is %d bytes", n, len(payload))
	}
	if out := AppendPacket(nil, &h, payload); !bytes.Equal(out, data) {
		t.Fatalf("re-encoded\n%x\nwant\n%x", out, data)
	}
	checkBody(t, &h, payload, data)
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

// TestFuzzCorpus keeps the committed seed corpus in step with seedPackets;
// go test also runs every file there through FuzzDecode. Regenerate with
// go test ./wire -run FuzzCorpus -update.
func TestFuzzCorpus(t *testing.T) {
	for _, s := range seedPackets() {
		path := filepath.Join(fuzzCorpus, s.name)
		want := fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", s.pkt)
		if *update {
			if err := os.MkdirAll(fuzzCorpus, 0o755); err != nil {
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
