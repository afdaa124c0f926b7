package wire

// Version is the protocol version every packet carries in its first byte,
// the one this package speaks. Unmarshal drops a packet of another version
// (ErrVersion); a receiver may still recognise a Join of an earlier one
// with UnmarshalOldJoin, to tell its sender why it gets no ack.
//
// Version 2 gave the JoinBody a field for each thing it carries: version 1
// sent a sparse job's block size in PacketElems and, in a child switch's
// sparse join, its longest stream of a block in TimeoutMillis; version 2
// sends them in BlockElems and StreamPackets, appended to the body, which
// grew from JoinBodyLenV1 to JoinBodyLen bytes. Nothing else changed: the
// header and every other payload are laid out as in version 1.
const Version = 2

// Version1 is the first protocol version, whose JoinBody was
// JoinBodyLenV1 bytes (the version-2 body without BlockElems and
// StreamPackets).
const (
	Version1       = 1
	JoinBodyLenV1  = 24
	versionOldJoin = Version1 // the only earlier version UnmarshalOldJoin knows
)

// UnmarshalOldJoin decodes b as a Join of an earlier protocol version
// (version 1, the only one): its header, whose layout has not changed,
// with every field checked as Unmarshal checks it but the version, and a
// payload of that version's JoinBody length. The body is not decoded:
// a receiver that speaks Version cannot serve the join and only refuses
// it, answering with an Error whose header keeps h.Version, which the
// old sender decodes (the Error's layout and the bad-request code are
// the same in both versions). It returns ErrVersion unless b is a Join
// of version 1, and otherwise Unmarshal's errors. It never allocates.
func (h *Header) UnmarshalOldJoin(b []byte) error {
	if len(b) < HeaderLen {
		return ErrShort
	}
	h.decodeFields(b[:HeaderLen])
	if h.Version != versionOldJoin || h.Type != TypeJoin {
		return ErrVersion
	}
	if err := h.checkCodes(); err != nil {
		return err
	}
	if h.Count != 0 || len(b)-HeaderLen != JoinBodyLenV1 {
		return ErrLength
	}
	return nil
}
