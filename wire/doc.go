// Package wire is the Flare packet format: the 32-byte header every packet
// starts with, the payloads of each packet type (dense elements, sparse
// index/value pairs, join, join-ack and error bodies), the dtype, op, flag,
// algorithm and error codes, and a gopacket layer (LayerTypeFlare, on UDP
// port DefaultPort) for captures and tools.
//
// The byte layout is specified in docs/PROTOCOL.md. In short: header fields
// are big-endian (network byte order); payload elements and sparse indices
// are little-endian, the byte order of the hosts and of the switch's cores,
// so handlers aggregate them in place.
//
// Decoding is the switch's input boundary. Every length and count is checked
// against the datagram before use, nothing panics on any input, and the
// decoders never allocate: a bad packet yields one of the sentinel errors
// (ErrShort, ErrVersion, ...) and the receiver counts it under
// DropReason(err) and moves on. The usual receive loop:
//
//	var h wire.Header
//	for _, pkt := range batch {
//		payload, err := h.Unmarshal(pkt)
//		if err != nil {
//			drops[wire.DropReason(err)]++
//			continue
//		}
//		switch h.Type {
//		case wire.TypeData:
//			// payload holds h.Count little-endian elements of h.DType.
//		case wire.TypeJoin:
//			var j wire.JoinBody
//			if err := j.Unmarshal(payload); err != nil {
//				drops[wire.DropReason(err)]++
//				continue
//			}
//			// admit, then reply with wire.AppendJoinAck or wire.AppendError.
//		}
//	}
//
// Encoding writes into caller-owned buffers: Header.MarshalTo, AppendPacket
// and the Append* helpers do not allocate when the buffer has room.
package wire
