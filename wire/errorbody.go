package wire

import (
	"encoding/binary"
	"strings"
	"unicode/utf8"
)

// Sizes of an ErrorBody.
const (
	// ErrorBodyMinLen is the fixed part of an ErrorBody (code and text
	// length); the text follows it.
	ErrorBodyMinLen = 4
	// MaxErrorText is the longest text an ErrorBody may carry, in bytes.
	MaxErrorText = 1024
	// MaxErrorBodyLen is the size of an ErrorBody with the longest text.
	MaxErrorBodyLen = ErrorBodyMinLen + MaxErrorText
)

// Byte offsets within an ErrorBody (big-endian, like the header).
const (
	errOffCode    = 0 // 2 bytes
	errOffTextLen = 2 // 2 bytes
	errOffText    = ErrorBodyMinLen
)

// ErrorBody is the payload of an Error (why the switch refused a join or
// failed a job) and of an Abort (why a host gave up on the job), as a code
// for programs and a text for people. Multi-byte
// fields are big-endian:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|              Code             |            TextLen            |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|         Text (TextLen bytes of UTF-8, at most 1024) ...
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// The payload is exactly ErrorBodyMinLen+TextLen bytes.
type ErrorBody struct {
	Code ErrorCode // why
	// Text is a human-readable explanation. After Unmarshal it aliases the
	// packet buffer (decoding does not allocate): copy it, or call
	// Message, before the buffer is reused.
	Text []byte
}

// errorBodyLen checks the length rules of an error body in b: the fixed
// part is there, the text length is at most MaxErrorText, and b holds
// exactly that much text. It returns the text length.
func errorBodyLen(b []byte) (int, error) {
	if len(b) < ErrorBodyMinLen {
		return 0, ErrLength
	}
	n := int(binary.BigEndian.Uint16(b[errOffTextLen:]))
	if n > MaxErrorText {
		return 0, ErrBody
	}
	if len(b) != ErrorBodyMinLen+n {
		return 0, ErrLength
	}
	return n, nil
}

// Unmarshal decodes an ErrorBody from b, the whole payload of an Error. A
// length that does not match the text length gives ErrLength; an unknown
// code, a text longer than MaxErrorText or text that is not UTF-8 gives
// ErrBody. e.Text is a sub-slice of b: Unmarshal never allocates.
func (e *ErrorBody) Unmarshal(b []byte) error {
	n, err := errorBodyLen(b)
	if err != nil {
		return err
	}
	e.Code = ErrorCode(binary.BigEndian.Uint16(b[errOffCode:]))
	end := errOffText + n
	e.Text = b[errOffText:end:end]
	if !e.Code.Valid() || !utf8.Valid(e.Text) {
		return ErrBody
	}
	return nil
}

// Len is the encoded size of e: ErrorBodyMinLen plus the text.
func (e *ErrorBody) Len() int { return ErrorBodyMinLen + len(e.Text) }

// MarshalTo writes the body into b[:e.Len()]. It returns ErrBody if the
// text is longer than MaxErrorText and ErrShort if b is too small; it does
// not check the code or the UTF-8.
func (e *ErrorBody) MarshalTo(b []byte) error {
	if len(e.Text) > MaxErrorText {
		return ErrBody
	}
	if len(b) < e.Len() {
		return ErrShort
	}
	binary.BigEndian.PutUint16(b[errOffCode:], uint16(e.Code))
	binary.BigEndian.PutUint16(b[errOffTextLen:], uint16(len(e.Text)))
	copy(b[errOffText:], e.Text)
	return nil
}

// Append appends the encoded body to dst and returns the extended slice. A
// text longer than MaxErrorText is cut to MaxErrorText bytes (at a UTF-8
// boundary), since an error report must still go out.
func (e *ErrorBody) Append(dst []byte) []byte {
	return appendErrorBody(dst, e.Code, e.Text)
}

// Message returns the text as a string (a copy, safe to keep after the
// packet buffer is reused).
func (e *ErrorBody) Message() string { return string(e.Text) }

// String formats e as "code: text" for logs and user-facing errors.
func (e *ErrorBody) String() string {
	if len(e.Text) == 0 {
		return e.Code.String()
	}
	return e.Code.String() + ": " + string(e.Text)
}

// AppendError appends a whole Error packet: a copy of h with Type TypeError
// and Count 0, then the code and text. Invalid UTF-8 in text is replaced
// and a text longer than MaxErrorText is cut, so the reply always decodes.
// Typically h is the header of the packet being answered.
func AppendError(dst []byte, h *Header, code ErrorCode, text string) []byte {
	return appendErrorPacket(dst, h, TypeError, code, text)
}

// AppendAbort appends a whole Abort packet: a copy of h with Type
// TypeAbort and Count 0, then the cause and the reason, cut and made valid
// UTF-8 as AppendError does. Set h.Job, h.Token, h.Child (the sender's
// rank, or a child switch's index with FlagFromSwitch), h.Block (the rank
// that aborted) and h.Generation (the call that failed).
func AppendAbort(dst []byte, h *Header, code ErrorCode, text string) []byte {
	return appendErrorPacket(dst, h, TypeAbort, code, text)
}

// appendErrorPacket appends a header of type typ and an ErrorBody.
func appendErrorPacket(dst []byte, h *Header, typ Type, code ErrorCode, text string) []byte {
	dst = appendControlHeader(dst, h, typ)
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	return appendErrorBody(dst, code, text)
}

// appendErrorBody appends code, text length and text, cutting the text to
// MaxErrorText bytes.
func appendErrorBody[T string | []byte](dst []byte, code ErrorCode, text T) []byte {
	text = truncateUTF8(text, MaxErrorText)
	dst, tail := grow(dst, ErrorBodyMinLen)
	binary.BigEndian.PutUint16(tail[errOffCode:], uint16(code))
	binary.BigEndian.PutUint16(tail[errOffTextLen:], uint16(len(text)))
	return append(dst, text...)
}

// truncateUTF8 returns the longest prefix of s of at most limit bytes that
// does not end in a partial UTF-8 sequence.
func truncateUTF8[T string | []byte](s T, limit int) T {
	if len(s) <= limit {
		return s
	}
	s = s[:limit]
	// The last rune start is at most UTFMax-1 bytes from the end; drop the
	// rune if the cut left it incomplete.
	for i := len(s) - 1; i >= 0 && i > len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if i+runeLen(s[i]) > len(s) {
				s = s[:i]
			}
			break
		}
	}
	return s
}

// runeLen is the length of the UTF-8 sequence that lead byte b starts (1
// for an invalid lead byte, which decoders treat as one bad byte).
func runeLen(b byte) int {
	switch {
	case b&0xE0 == 0xC0:
		return 2
	case b&0xF0 == 0xE0:
		return 3
	case b&0xF8 == 0xF0:
		return 4
	}
	return 1
}
