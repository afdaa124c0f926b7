package wire

import "errors"

// Sentinel errors returned by the decoders. They are plain values, so
// returning one never allocates; callers test them with errors.Is and count
// the dropped packet under DropReason(err).
var (
	// ErrShort means a datagram is shorter than HeaderLen, or a buffer handed
	// to a MarshalTo is too small for what it must hold.
	ErrShort = errors.New("wire: packet or buffer too short")
	// ErrVersion means the version byte is not Version.
	ErrVersion = errors.New("wire: unsupported protocol version")
	// ErrType means the type byte is not a known Type.
	ErrType = errors.New("wire: unknown packet type")
	// ErrFlags means a flag bit outside the defined set is set.
	ErrFlags = errors.New("wire: unknown flag bits")
	// ErrDType means the dtype byte is not a known DType where one is required
	// (or is neither zero nor known where it is optional).
	ErrDType = errors.New("wire: unknown dtype")
	// ErrOp means the op byte is not a valid Op where one is required
	// (or is neither zero nor valid where it is optional).
	ErrOp = errors.New("wire: unknown op")
	// ErrLength means the payload length does not match what the type, count
	// and dtype (or the error body's text length) say it must be.
	ErrLength = errors.New("wire: payload length does not match the header")
	// ErrBody means a join, join-ack or error body holds a value outside its
	// allowed set (unknown code, non-zero reserved bytes, text too long or not
	// UTF-8).
	ErrBody = errors.New("wire: malformed body")
)

// Drop reason labels, one per sentinel error plus ReasonOther. They are
// stable: metrics and dashboards key on them.
const (
	ReasonShort   = "short"
	ReasonVersion = "version"
	ReasonType    = "type"
	ReasonFlags   = "flags"
	ReasonDType   = "dtype"
	ReasonOp      = "op"
	ReasonLength  = "length"
	ReasonBody    = "body"
	ReasonOther   = "other"
)

// DropReasons lists every label DropReason can return, so a metrics
// collector can pre-create one counter per reason (a bounded label set).
var DropReasons = []string{
	ReasonShort, ReasonVersion, ReasonType, ReasonFlags, ReasonDType,
	ReasonOp, ReasonLength, ReasonBody, ReasonOther,
}

// DropReason maps a decode error to its short, stable metrics label
// ("short", "version", ...). Errors that are none of this package's
// sentinels, wrapped or not, map to "other"; nil maps to "other" too,
// since a packet that decoded is not dropped for a wire reason.
func DropReason(err error) string {
	switch {
	case err == nil:
		return ReasonOther
	case errors.Is(err, ErrShort):
		return ReasonShort
	case errors.Is(err, ErrVersion):
		return ReasonVersion
	case errors.Is(err, ErrType):
		return ReasonType
	case errors.Is(err, ErrFlags):
		return ReasonFlags
	case errors.Is(err, ErrDType):
		return ReasonDType
	case errors.Is(err, ErrOp):
		return ReasonOp
	case errors.Is(err, ErrLength):
		return ReasonLength
	case errors.Is(err, ErrBody):
		return ReasonBody
	}
	return ReasonOther
}
