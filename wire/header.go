package wire

import (
	"encoding/binary"
	"math"
	"slices"
)

// HeaderLen is the size of the Flare header in bytes; the payload starts
// right after it.
const HeaderLen = 32

// Byte offsets of the header fields. Every multi-byte header field is
// big-endian (network byte order).
const (
	OffVersion    = 0  // 1 byte: Version
	OffType       = 1  // 1 byte: Type
	OffFlags      = 2  // 2 bytes: Flags
	OffJob        = 4  // 4 bytes: job id
	OffToken      = 8  // 8 bytes: per-job secret
	OffGeneration = 16 // 4 bytes: allreduce call number within the job
	OffBlock      = 20 // 4 bytes: block id within the vector
	OffChild      = 24 // 2 bytes: sender's child index (0 in results)
	OffDType      = 26 // 1 byte: DType
	OffOp         = 27 // 1 byte: Op
	OffCount      = 28 // 4 bytes: elements (dense) or pairs (sparse)
)

// IndexLen is the size of the little-endian uint32 element index that
// starts every pair of a Sparse or Spill payload.
const IndexLen = 4

// Header is the fixed 32-byte header that starts every Flare packet.
// Multi-byte fields are big-endian on the wire:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|    Version    |      Type     |             Flags             |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                              Job                              |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                                                               |
//	+                             Token                             +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                           Generation                          |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                             Block                             |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|             Child             |     DType     |       Op      |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                             Count                             |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                     payload (type-specific) ...
//
// The payload is what Type says: dense elements (Data, Result), index/value
// pairs (Sparse, Spill), a JoinBody, a JoinAckBody, an ErrorBody (Error,
// Abort), or nothing (Leave). docs/PROTOCOL.md describes each byte.
type Header struct {
	Version    uint8  // protocol version; MarshalTo writes Version when zero
	Type       Type   // packet type
	Flags      Flags  // FlagLast, FlagRetransmit, FlagPartial, FlagFromSwitch, FlagGroup
	Job        uint32 // job id, chosen by the hosts
	Token      uint64 // per-job secret; the switch drops packets with a wrong one
	Generation uint32 // allreduce call number, so successive calls never mix
	Block      uint32 // block id within the vector
	Child      uint16 // sender's rank among the switch's children (Join: the rank; Result: 0)
	DType      DType  // element type
	Op         Op     // reduction operator
	Count      uint32 // elements (Data, Result) or pairs (Sparse, Spill); 0 otherwise
}

// Unmarshal decodes and validates the header at the start of b and checks
// that the rest of b is exactly the payload its type calls for. It returns
// that payload as a sub-slice of b (capped, so appending to it cannot write
// into b's spare capacity). It never allocates and never panics; on error
// the fields of h are unspecified and the error is one of the sentinels
// (ErrShort, ErrVersion, ErrType, ErrFlags, ErrDType, ErrOp, ErrLength,
// ErrBody).
//
// For Join and JoinAck only the body's length is checked here; decode the
// payload with JoinBody.Unmarshal or JoinAckBody.Unmarshal for its fields.
// For Error and Abort the text length is checked against the payload here.
func (h *Header) Unmarshal(b []byte) (payload []byte, err error) {
	if len(b) < HeaderLen {
		return nil, ErrShort
	}
	h.decodeFields(b[:HeaderLen])
	if h.Version != Version {
		return nil, ErrVersion
	}
	if err := h.checkCodes(); err != nil {
		return nil, err
	}
	payload = b[HeaderLen:len(b):len(b)]
	if err := h.checkPayload(payload); err != nil {
		return nil, err
	}
	return payload, nil
}

// decodeFields reads the 32 header bytes of hdr into h, checking nothing.
// The layout is the same in every protocol version.
func (h *Header) decodeFields(hdr []byte) {
	hdr = hdr[:HeaderLen]
	h.Version = hdr[OffVersion]
	h.Type = Type(hdr[OffType])
	h.Flags = Flags(binary.BigEndian.Uint16(hdr[OffFlags:]))
	h.Job = binary.BigEndian.Uint32(hdr[OffJob:])
	h.Token = binary.BigEndian.Uint64(hdr[OffToken:])
	h.Generation = binary.BigEndian.Uint32(hdr[OffGeneration:])
	h.Block = binary.BigEndian.Uint32(hdr[OffBlock:])
	h.Child = binary.BigEndian.Uint16(hdr[OffChild:])
	h.DType = DType(hdr[OffDType])
	h.Op = Op(hdr[OffOp])
	h.Count = binary.BigEndian.Uint32(hdr[OffCount:])
}

// checkCodes validates the one-byte and flag fields after the version, in
// header order.
func (h *Header) checkCodes() error {
	if !h.Type.Valid() {
		return ErrType
	}
	if !h.Flags.Known() {
		return ErrFlags
	}
	// Packets that carry or set up a reduction need a real dtype and op;
	// the control replies may leave them zero.
	required := h.Type.needsDTypeOp()
	if (required || h.DType != 0) && !h.DType.Valid() {
		return ErrDType
	}
	if (required || h.Op != 0) && !h.Op.Valid() {
		return ErrOp
	}
	return nil
}

// needsDTypeOp reports whether packets of type t must carry a valid dtype and op.
func (t Type) needsDTypeOp() bool {
	switch t {
	case TypeData, TypeResult, TypeSparse, TypeSpill, TypeJoin:
		return true
	}
	return false
}

// checkPayload checks len(p) against what the type, count and dtype
// require. Codes have been checked already.
func (h *Header) checkPayload(p []byte) error {
	switch h.Type {
	case TypeData, TypeResult:
		if h.Count == 0 {
			return ErrLength
		}
	case TypeSparse, TypeSpill:
		// count 0 is the empty last packet of a sparse block.
	default:
		if h.Count != 0 {
			return ErrLength
		}
	}
	if h.Type.hasErrorBody() {
		_, err := errorBodyLen(p)
		return err
	}
	if uint64(len(p)) != h.payloadLen() {
		return ErrLength
	}
	return nil
}

// hasErrorBody reports whether packets of type t carry an ErrorBody, whose
// length depends on its text: Error and Abort.
func (t Type) hasErrorBody() bool { return t == TypeError || t == TypeAbort }

// payloadLen is the exact payload length for every type but Error and Abort, computed
// in 64 bits so that a large count cannot overflow on 32-bit platforms.
func (h *Header) payloadLen() uint64 {
	switch h.Type {
	case TypeData, TypeResult:
		return uint64(h.Count) * uint64(h.DType.Size())
	case TypeSparse, TypeSpill:
		return uint64(h.Count) * uint64(PairSize(h.DType))
	case TypeJoin:
		return JoinBodyLen
	case TypeJoinAck:
		if h.Flags&FlagGroup != 0 {
			return JoinAckBodyLen + JoinAckGroupLen
		}
		return JoinAckBodyLen
	}
	return 0
}

// PayloadLen returns the payload length h calls for: count × element size
// for Data and Result, count × PairSize for Sparse and Spill, JoinBodyLen,
// JoinAckBodyLen (plus JoinAckGroupLen with FlagGroup), and 0 for Leave. It returns -1 when the length is not
// fixed by the header: for Error and Abort (it depends on the body's text
// length), for an unknown type or dtype, and when the length does not fit
// in an int.
func (h *Header) PayloadLen() int {
	if !h.Type.Valid() || h.Type.hasErrorBody() || (h.Type.needsDTypeOp() && !h.DType.Valid()) {
		return -1
	}
	n := h.payloadLen()
	if n > math.MaxInt {
		return -1
	}
	return int(n)
}

// PairSize is the size in bytes of one (index, value) pair of a Sparse or
// Spill payload: the 4-byte index followed by one element of d. For an
// unknown d it is IndexLen alone; Header.Unmarshal rejects such packets.
func PairSize(d DType) int { return IndexLen + d.Size() }

// MarshalTo writes the 32 header bytes into b[:HeaderLen]. A zero Version
// is written as Version, so callers may leave it unset. It does not check
// the fields (a sender encodes what it means to send); it returns ErrShort
// if b is shorter than HeaderLen, and never allocates.
func (h *Header) MarshalTo(b []byte) error {
	if len(b) < HeaderLen {
		return ErrShort
	}
	hdr := b[:HeaderLen]
	v := h.Version
	if v == 0 {
		v = Version
	}
	hdr[OffVersion] = v
	hdr[OffType] = byte(h.Type)
	binary.BigEndian.PutUint16(hdr[OffFlags:], uint16(h.Flags))
	binary.BigEndian.PutUint32(hdr[OffJob:], h.Job)
	binary.BigEndian.PutUint64(hdr[OffToken:], h.Token)
	binary.BigEndian.PutUint32(hdr[OffGeneration:], h.Generation)
	binary.BigEndian.PutUint32(hdr[OffBlock:], h.Block)
	binary.BigEndian.PutUint16(hdr[OffChild:], h.Child)
	hdr[OffDType] = byte(h.DType)
	hdr[OffOp] = byte(h.Op)
	binary.BigEndian.PutUint32(hdr[OffCount:], h.Count)
	return nil
}

// AppendPacket appends the header h and then payload to dst and returns the
// extended slice. h.Count is written as it is: the caller sets it to match
// the payload. It does not allocate when dst has room for
// HeaderLen+len(payload) more bytes.
func AppendPacket(dst []byte, h *Header, payload []byte) []byte {
	dst = slices.Grow(dst, HeaderLen+len(payload))
	dst, tail := grow(dst, HeaderLen)
	_ = h.MarshalTo(tail) // cannot fail: tail has HeaderLen bytes
	return append(dst, payload...)
}
