package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

var update = flag.Bool("update", false, "rewrite testdata/wire/seeds.pcap and the fuzz seed corpora")

// goldenPcap holds every seed packet in an Ethernet/IPv4/UDP frame.
var goldenPcap = filepath.Join("..", "testdata", "wire", "seeds.pcap")

// frame wraps a Flare header and payload in Ethernet/IPv4/UDP to
// DefaultPort, serialized with gopacket's reverse-order layering.
func frame(t testing.TB, h Header, payload []byte) []byte {
	t.Helper()
	eth := &layers.Ethernet{
		SrcMAC:       net.HardwareAddr{0x02, 0, 0, 0, 0, 1},
		DstMAC:       net.HardwareAddr{0x02, 0, 0, 0, 0, 2},
		EthernetType: layers.EthernetTypeIPv4,
	}
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolUDP,
		SrcIP: net.IPv4(10, 0, 0, 1), DstIP: net.IPv4(10, 0, 0, 2)}
	udp := &layers.UDP{SrcPort: 40000, DstPort: layers.UDPPort(DefaultPort)}
	if err := udp.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, eth, ip, udp, &Flare{Header: h}, gopacket.Payload(payload)); err != nil {
		t.Fatalf("SerializeLayers: %v", err)
	}
	return buf.Bytes()
}

func TestGopacketNewPacket(t *testing.T) {
	for _, s := range seedPackets() {
		t.Run(s.name, func(t *testing.T) {
			h := s.h
			h.Count = 12345 // FixLengths must restore it
			pkt := gopacket.NewPacket(frame(t, h, s.payload), layers.LayerTypeEthernet, gopacket.Default)
			if el := pkt.ErrorLayer(); el != nil {
				t.Fatalf("decode error: %v", el.Error())
			}
			l := pkt.Layer(LayerTypeFlare)
			if l == nil {
				t.Fatalf("no Flare layer in %v", pkt)
			}
			f := l.(*Flare)
			if f.Header != s.h {
				t.Errorf("header = %+v, want %+v", f.Header, s.h)
			}
			if !bytes.Equal(f.LayerContents(), s.pkt[:HeaderLen]) || !bytes.Equal(f.LayerPayload(), s.payload) {
				t.Errorf("contents/payload = %x/%x, want %x/%x", f.LayerContents(), f.LayerPayload(), s.pkt[:HeaderLen], s.payload)
			}
			// The payload decodes on as gopacket's Payload layer, the packet's application layer.
			if app := pkt.ApplicationLayer(); len(s.payload) > 0 && (app == nil || !bytes.Equal(app.Payload(), s.payload)) {
				t.Errorf("application layer %v, want the Flare payload %x", app, s.payload)
			}
		})
	}
}

func TestGopacketDecodingLayerParser(t *testing.T) {
	var (
		eth layers.Ethernet
		ip  layers.IPv4
		udp layers.UDP
		fl  Flare
		pl  gopacket.Payload
	)
	parser := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &eth, &ip, &udp, &fl, &pl)
	var decoded []gopacket.LayerType
	for _, s := range seedPackets() {
		t.Run(s.name, func(t *testing.T) {
			if err := parser.DecodeLayers(frame(t, s.h, s.payload), &decoded); err != nil {
				t.Fatalf("DecodeLayers: %v", err)
			}
			want := []gopacket.LayerType{layers.LayerTypeEthernet, layers.LayerTypeIPv4, layers.LayerTypeUDP, LayerTypeFlare}
			if len(s.payload) > 0 {
				want = append(want, gopacket.LayerTypePayload)
			}
			if !slices.Equal(decoded, want) {
				t.Errorf("decoded %v, want %v", decoded, want)
			}
			if fl.Header != s.h || !bytes.Equal(fl.Payload, s.payload) {
				t.Errorf("Flare = %+v %x, want %+v %x", fl.Header, fl.Payload, s.h, s.payload)
			}
		})
	}
}

func TestGopacketBadPacket(t *testing.T) {
	h := testHeader(TypeData, Float32, OpSum, 1)
	h.Version = 9
	pkt := gopacket.NewPacket(frame(t, h, make([]byte, 4)), layers.LayerTypeEthernet, gopacket.Default)
	el := pkt.ErrorLayer()
	if el == nil || !errors.Is(el.Error(), ErrVersion) {
		t.Fatalf("error layer = %v, want ErrVersion", el)
	}

	var f Flare
	var df truncFeedback
	if err := f.DecodeFromBytes(make([]byte, 10), &df); err != ErrShort || !df.truncated {
		t.Errorf("short: err = %v, truncated = %v; want ErrShort, true", err, df.truncated)
	}
}

// truncFeedback records SetTruncated.
type truncFeedback struct{ truncated bool }

func (d *truncFeedback) SetTruncated() { d.truncated = true }

func TestSerializeToFixLengths(t *testing.T) {
	tests := []struct {
		name    string
		h       Header
		payload int
		count   uint32
		err     error
	}{
		{"dense", testHeader(TypeData, Float64, OpSum, 0), 24, 3, nil},
		{"pairs", testHeader(TypeSpill, Int16, OpSum, 0), 18, 3, nil},
		{"leave", testHeader(TypeLeave, 0, 0, 7), 0, 0, nil},
		{"partial element", testHeader(TypeData, Float32, OpSum, 0), 5, 0, ErrLength},
		{"unknown dtype", testHeader(TypeSparse, 0, OpSum, 0), 8, 0, ErrDType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := Flare{Header: tt.h}
			buf := gopacket.NewSerializeBuffer()
			err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true}, &f, gopacket.Payload(make([]byte, tt.payload)))
			if err != tt.err {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if err == nil && f.Count != tt.count {
				t.Errorf("Count = %d, want %d", f.Count, tt.count)
			}
		})
	}
	// Without FixLengths the count is written as given.
	f := Flare{Header: testHeader(TypeData, Float32, OpSum, 77)}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{}, &f); err != nil {
		t.Fatal(err)
	}
	var h Header
	if _, err := h.Unmarshal(buf.Bytes()); err != ErrLength || h.Count != 77 {
		t.Errorf("count = %d, err = %v; want 77, ErrLength", h.Count, err)
	}
}

func TestDecodeFromBytesZeroAllocs(t *testing.T) {
	pkt := packet1K()
	var f Flare
	n := testing.AllocsPerRun(100, func() {
		if err := f.DecodeFromBytes(pkt, gopacket.NilDecodeFeedback); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("Flare.DecodeFromBytes: %v allocs, want 0", n)
	}
}

// TestGoldenPcap checks testdata/wire/seeds.pcap, a capture of every seed
// packet in Ethernet/IPv4/UDP frames, which tcpdump and Wireshark open and
// which seeds FuzzDecode.
// Regenerate with go test ./wire -run Golden -update.
func TestGoldenPcap(t *testing.T) {
	seeds := seedPackets()
	if *update {
		writePcap(t, seeds)
	}
	frames := readPcap(t, goldenPcap)
	if len(frames) != len(seeds) {
		t.Fatalf("%s holds %d frames, want %d (run with -update)", goldenPcap, len(frames), len(seeds))
	}
	for i, s := range seeds {
		if want := frame(t, s.h, s.payload); !bytes.Equal(frames[i], want) {
			t.Errorf("frame %d (%s) differs from a fresh encoding (run with -update)", i, s.name)
		}
	}
}

// The classic pcap format, written and read here by hand (pcapgo would pull
// golang.org/x/net into the module for a test): a 24-byte file header, then
// per frame a 16-byte record header and the frame. All little-endian.
const (
	pcapMagic        = 0xa1b2c3d4 // microsecond timestamps
	pcapFileHdrLen   = 24
	pcapRecordHdrLen = 16
	pcapSnapLen      = 65535
	pcapLinkEthernet = 1
)

func writePcap(t *testing.T, seeds []seed) {
	t.Helper()
	le := binary.LittleEndian
	b := le.AppendUint32(nil, pcapMagic)
	b = le.AppendUint16(b, 2) // version 2.4
	b = le.AppendUint16(b, 4)
	b = le.AppendUint32(b, 0) // this zone
	b = le.AppendUint32(b, 0) // sigfigs
	b = le.AppendUint32(b, pcapSnapLen)
	b = le.AppendUint32(b, pcapLinkEthernet)
	for i, s := range seeds {
		data := frame(t, s.h, s.payload)
		b = le.AppendUint32(b, 1700000000)     // seconds
		b = le.AppendUint32(b, uint32(i*1000)) // microseconds
		b = le.AppendUint32(b, uint32(len(data)))
		b = le.AppendUint32(b, uint32(len(data)))
		b = append(b, data...)
	}
	if err := os.MkdirAll(filepath.Dir(goldenPcap), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(goldenPcap, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// readPcap returns the frames of a little-endian classic pcap file.
func readPcap(t testing.TB, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	if len(b) < pcapFileHdrLen || le.Uint32(b) != pcapMagic || le.Uint32(b[20:]) != pcapLinkEthernet {
		t.Fatalf("%s: not a little-endian Ethernet pcap", path)
	}
	var frames [][]byte
	for b = b[pcapFileHdrLen:]; len(b) > 0; {
		if len(b) < pcapRecordHdrLen {
			t.Fatalf("%s: truncated record header", path)
		}
		n := int(le.Uint32(b[8:]))
		b = b[pcapRecordHdrLen:]
		if n > len(b) {
			t.Fatalf("%s: truncated frame", path)
		}
		frames = append(frames, b[:n])
		b = b[n:]
	}
	return frames
}

// BenchmarkDecodeFromBytes is the switch's per-packet decode.
func BenchmarkDecodeFromBytes(b *testing.B) {
	pkt := packet1K()
	var f Flare
	b.SetBytes(int64(len(pkt)))
	b.ReportAllocs()
	for b.Loop() {
		if err := f.DecodeFromBytes(pkt, gopacket.NilDecodeFeedback); err != nil {
			b.Fatal(err)
		}
	}
}
