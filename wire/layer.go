package wire

import (
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// LayerTypeFlare is the gopacket layer type of a Flare packet (header and
// payload). The number lies in the range gopacket leaves to applications.
var LayerTypeFlare = gopacket.RegisterLayerType(1470, gopacket.LayerTypeMetadata{
	Name:    "Flare",
	Decoder: gopacket.DecodeFunc(decodeFlare),
})

func init() {
	// UDP datagrams to or from DefaultPort decode as Flare, so pcaps and
	// gopacket.NewPacket on captured frames show the Flare layer.
	layers.RegisterUDPPortLayerType(layers.UDPPort(DefaultPort), LayerTypeFlare)
}

// Flare is the gopacket layer of a Flare packet. Contents is the 32-byte
// header and Payload the type-specific payload, both sub-slices of the
// decoded data. On the packet path use DecodeFromBytes straight on the UDP
// payload (it does not allocate); gopacket.NewPacket is for tools and tests.
type Flare struct {
	layers.BaseLayer
	Header
}

// Compile-time checks of the gopacket interfaces Flare implements.
var (
	_ gopacket.Layer             = (*Flare)(nil)
	_ gopacket.DecodingLayer     = (*Flare)(nil)
	_ gopacket.SerializableLayer = (*Flare)(nil)
)

// LayerType returns LayerTypeFlare.
func (f *Flare) LayerType() gopacket.LayerType { return LayerTypeFlare }

// CanDecode returns LayerTypeFlare.
func (f *Flare) CanDecode() gopacket.LayerClass { return LayerTypeFlare }

// NextLayerType returns gopacket.LayerTypePayload: the payload's meaning
// depends on Type, so it is left to the caller (or the body decoders).
func (f *Flare) NextLayerType() gopacket.LayerType { return gopacket.LayerTypePayload }

// DecodeFromBytes decodes and validates data as one Flare packet (see
// Header.Unmarshal) and points Contents and Payload into data. It never
// allocates; a datagram shorter than the header is also reported to df as
// truncated.
func (f *Flare) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	payload, err := f.Header.Unmarshal(data)
	if err != nil {
		if err == ErrShort {
			df.SetTruncated()
		}
		return err
	}
	f.BaseLayer = layers.BaseLayer{Contents: data[:HeaderLen:HeaderLen], Payload: payload}
	return nil
}

// decodeFlare is the gopacket.Decoder behind LayerTypeFlare.
func decodeFlare(data []byte, p gopacket.PacketBuilder) error {
	f := &Flare{}
	if err := f.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(f)
	return p.NextDecoder(f.NextLayerType())
}

// SerializeTo prepends the header to whatever the buffer already holds (the
// payload, serialized first in gopacket's reverse order). With
// opts.FixLengths it first sets Count from the payload length: elements for
// Data and Result, pairs for Sparse and Spill, 0 for the other types; a
// payload that is not a whole number of elements or pairs gives ErrLength,
// an unknown dtype ErrDType.
func (f *Flare) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	if opts.FixLengths {
		if err := f.fixCount(len(b.Bytes())); err != nil {
			return err
		}
	}
	hdr, err := b.PrependBytes(HeaderLen)
	if err != nil {
		return err
	}
	return f.Header.MarshalTo(hdr)
}

// fixCount sets Count for a payload of n bytes.
func (f *Flare) fixCount(n int) error {
	var unit int
	switch f.Type {
	case TypeData, TypeResult:
		unit = f.DType.Size()
	case TypeSparse, TypeSpill:
		unit = PairSize(f.DType)
	default:
		f.Count = 0
		return nil
	}
	if !f.DType.Valid() {
		return ErrDType
	}
	if n%unit != 0 || uint64(n/unit) > uint64(^uint32(0)) {
		return ErrLength
	}
	f.Count = uint32(n / unit)
	return nil
}
