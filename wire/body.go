package wire

import (
	"encoding/binary"
	"net/netip"
	"slices"
)

// JoinBodyLen is the size of a JoinBody, the whole payload of a Join
// (JoinBodyLenV1 in protocol version 1, see version.go).
const JoinBodyLen = 32

// Byte offsets within a JoinBody (big-endian, like the header).
const (
	joinOffWorld    = 0  // 2 bytes
	joinOffAlgo     = 2  // 1 byte
	joinOffBuffers  = 3  // 1 byte
	joinOffOptions  = 4  // 1 byte
	joinOffStorage  = 5  // 1 byte
	joinOffDeadline = 6  // 2 bytes
	joinOffElements = 8  // 8 bytes
	joinOffPacket   = 16 // 4 bytes
	joinOffTimeout  = 20 // 4 bytes
	joinOffBlock    = 24 // 4 bytes (version 2)
	joinOffStream   = 28 // 4 bytes (version 2)
)

// JoinBody is the payload of a Join: what a host asks of the switch. The
// header of a Join carries the job id and token, the host's rank in Child,
// the job's DType and Op, and Count 0. Multi-byte fields are big-endian:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|             World             |      Algo     |    Buffers    |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|    Options    |    Storage    |         DeadlineMillis        |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                                                               |
//	+                            Elements                           +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                          PacketElems                          |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                         TimeoutMillis                         |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                           BlockElems                          |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                         StreamPackets                         |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Each field carries one thing: PacketElems is a dense job's packet size
// only, BlockElems a sparse job's block size only, StreamPackets only a
// child switch's sparse join (protocol version 1 carried the last two in
// PacketElems and TimeoutMillis; see version.go).
//
// Unmarshal checks the encoding only (known codes, and DeadlineMillis zero
// unless OptBounded is set).
// Whether the request can be served (rank < World, Elements > 0, enough
// memory) is the switch's decision, answered with an Error rather than a
// silent drop.
type JoinBody struct {
	World   uint16      // number of children (hosts or child switches) in the job
	Algo    Algo        // dense design asked for; AlgoAuto lets the switch choose
	Buffers uint8       // B for AlgoMulti; 0 = switch default
	Options JoinOptions // OptReproducible, OptSparse
	Storage Storage     // StorageDense, or StorageHash/StorageArray for sparse jobs
	// DeadlineMillis is, with OptBounded, how long after a block's first
	// packet the switch releases its partial aggregate (1..65535 ms).
	DeadlineMillis uint16
	Elements       uint64 // vector length in elements
	PacketElems    uint32 // dense: elements per packet the host wants; 0 = switch default. Sparse: 0
	TimeoutMillis  uint32 // per-allreduce timeout in ms; 0 = switch default (a child switch sends 0)
	BlockElems     uint32 // sparse: indices per block the host wants; 0 = switch default. Dense: 0
	// StreamPackets is, in a child switch's join (FlagFromSwitch) of a
	// sparse job, the longest stream of one block it sends up, in packets
	// (at least 1), from which the parent sizes its view of that child's
	// streams; 0 in every other join.
	StreamPackets uint32
}

// Unmarshal decodes a JoinBody from b, which must be exactly JoinBodyLen
// bytes (ErrLength otherwise). An unknown algo, option bit or storage kind,
// or a deadline without OptBounded, gives ErrBody. It never allocates.
func (j *JoinBody) Unmarshal(b []byte) error {
	if len(b) != JoinBodyLen {
		return ErrLength
	}
	b = b[:JoinBodyLen]
	j.World = binary.BigEndian.Uint16(b[joinOffWorld:])
	j.Algo = Algo(b[joinOffAlgo])
	j.Buffers = b[joinOffBuffers]
	j.Options = JoinOptions(b[joinOffOptions])
	j.Storage = Storage(b[joinOffStorage])
	j.DeadlineMillis = binary.BigEndian.Uint16(b[joinOffDeadline:])
	j.Elements = binary.BigEndian.Uint64(b[joinOffElements:])
	j.PacketElems = binary.BigEndian.Uint32(b[joinOffPacket:])
	j.TimeoutMillis = binary.BigEndian.Uint32(b[joinOffTimeout:])
	j.BlockElems = binary.BigEndian.Uint32(b[joinOffBlock:])
	j.StreamPackets = binary.BigEndian.Uint32(b[joinOffStream:])
	if !j.Algo.Valid() || !j.Options.Known() || !j.Storage.Valid() ||
		(j.DeadlineMillis != 0) != (j.Options&OptBounded != 0) {
		return ErrBody
	}
	return nil
}

// MarshalTo writes the body into b[:JoinBodyLen]. It
// returns ErrShort if b is too small and does not check the field values.
func (j *JoinBody) MarshalTo(b []byte) error {
	if len(b) < JoinBodyLen {
		return ErrShort
	}
	b = b[:JoinBodyLen]
	binary.BigEndian.PutUint16(b[joinOffWorld:], j.World)
	b[joinOffAlgo] = byte(j.Algo)
	b[joinOffBuffers] = j.Buffers
	b[joinOffOptions] = byte(j.Options)
	b[joinOffStorage] = byte(j.Storage)
	binary.BigEndian.PutUint16(b[joinOffDeadline:], j.DeadlineMillis)
	binary.BigEndian.PutUint64(b[joinOffElements:], j.Elements)
	binary.BigEndian.PutUint32(b[joinOffPacket:], j.PacketElems)
	binary.BigEndian.PutUint32(b[joinOffTimeout:], j.TimeoutMillis)
	binary.BigEndian.PutUint32(b[joinOffBlock:], j.BlockElems)
	binary.BigEndian.PutUint32(b[joinOffStream:], j.StreamPackets)
	return nil
}

// Append appends the encoded body to dst and returns the extended slice.
func (j *JoinBody) Append(dst []byte) []byte {
	dst, tail := grow(dst, JoinBodyLen)
	_ = j.MarshalTo(tail) // cannot fail: tail has JoinBodyLen bytes
	return dst
}

// AppendJoin appends a whole Join packet: a copy of h with Type TypeJoin and
// Count 0, then body. Set h.Child to the host's rank and h.DType, h.Op to
// the job's.
func AppendJoin(dst []byte, h *Header, body *JoinBody) []byte {
	return body.Append(appendControlHeader(dst, h, TypeJoin))
}

// JoinAckBodyLen is the size of a JoinAckBody without a group, the whole
// payload of a JoinAck; one with a group (header flag FlagGroup) has
// JoinAckGroupLen bytes more.
const (
	JoinAckBodyLen  = 20
	JoinAckGroupLen = 8
)

// Byte offsets within a JoinAckBody (big-endian, like the header).
const (
	ackOffWindow    = 0  // 4 bytes
	ackOffAlgo      = 4  // 1 byte
	ackOffBuffers   = 5  // 1 byte
	ackOffReserved  = 6  // 2 bytes, zero
	ackOffPacket    = 8  // 4 bytes
	ackOffBlocks    = 12 // 4 bytes
	ackOffQuota     = 16 // 4 bytes
	ackOffGroup     = 20 // 4 bytes, with FlagGroup
	ackOffGroupPort = 24 // 2 bytes, with FlagGroup
	ackOffGroupRes  = 26 // 2 bytes, zero, with FlagGroup
)

// JoinAckBody is the payload of a JoinAck: the switch admitted the host and
// says how the job will run. Multi-byte fields are big-endian:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                             Window                            |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|      Algo     |    Buffers    |        Reserved (zero)        |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                          PacketElems                          |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                             Blocks                            |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                          QuotaBuffers                         |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  Group (IPv4, with FlagGroup)                 |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|           Group port          |        Reserved (zero)        |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type JoinAckBody struct {
	Window       uint32 // W: blocks each host may have in flight
	Algo         Algo   // the design the switch chose; never AlgoAuto
	Buffers      uint8  // B when Algo is AlgoMulti
	PacketElems  uint32 // elements per packet (and per block) the job uses
	Blocks       uint32 // blocks per allreduce
	QuotaBuffers uint32 // aggregation buffers reserved for the job
	// Group is, when valid, the IPv4 multicast group and port the job's
	// results go to (granted to a job whose members all set OptMulticast);
	// the zero value means results come to each member's own address.
	Group netip.AddrPort
}

// Len is the encoded size of the body: JoinAckBodyLen, plus
// JoinAckGroupLen with a group (an IPv4 one: the only kind encoded).
func (a *JoinAckBody) Len() int {
	if a.hasGroup() {
		return JoinAckBodyLen + JoinAckGroupLen
	}
	return JoinAckBodyLen
}

// Unmarshal decodes a JoinAckBody from b, which must be exactly
// JoinAckBodyLen bytes, or JoinAckBodyLen+JoinAckGroupLen with a group
// (ErrLength otherwise; the header's FlagGroup says which, and
// Header.Unmarshal has checked that they agree). An Algo that is not a
// concrete design (unknown, or AlgoAuto), a non-zero reserved byte, or a
// group that is not an IPv4 multicast address with a port gives ErrBody.
// It never allocates.
func (a *JoinAckBody) Unmarshal(b []byte) error {
	if len(b) != JoinAckBodyLen && len(b) != JoinAckBodyLen+JoinAckGroupLen {
		return ErrLength
	}
	a.Window = binary.BigEndian.Uint32(b[ackOffWindow:])
	a.Algo = Algo(b[ackOffAlgo])
	a.Buffers = b[ackOffBuffers]
	a.PacketElems = binary.BigEndian.Uint32(b[ackOffPacket:])
	a.Blocks = binary.BigEndian.Uint32(b[ackOffBlocks:])
	a.QuotaBuffers = binary.BigEndian.Uint32(b[ackOffQuota:])
	a.Group = netip.AddrPort{}
	if !a.Algo.Valid() || a.Algo == AlgoAuto || binary.BigEndian.Uint16(b[ackOffReserved:]) != 0 {
		return ErrBody
	}
	if len(b) == JoinAckBodyLen {
		return nil
	}
	g := netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[ackOffGroup:ackOffGroupPort])), binary.BigEndian.Uint16(b[ackOffGroupPort:]))
	if !g.Addr().IsMulticast() || g.Port() == 0 || binary.BigEndian.Uint16(b[ackOffGroupRes:]) != 0 {
		return ErrBody
	}
	a.Group = g
	return nil
}

// hasGroup reports whether the body carries a group: an IPv4 one.
func (a *JoinAckBody) hasGroup() bool { return a.Group.IsValid() && a.Group.Addr().Is4() }

// MarshalTo writes the body into b[:a.Len()], reserved bytes zero. It
// returns ErrShort if b is too small and does not check the field values.
func (a *JoinAckBody) MarshalTo(b []byte) error {
	n := a.Len()
	if len(b) < n {
		return ErrShort
	}
	b = b[:n]
	binary.BigEndian.PutUint32(b[ackOffWindow:], a.Window)
	b[ackOffAlgo] = byte(a.Algo)
	b[ackOffBuffers] = a.Buffers
	binary.BigEndian.PutUint16(b[ackOffReserved:], 0)
	binary.BigEndian.PutUint32(b[ackOffPacket:], a.PacketElems)
	binary.BigEndian.PutUint32(b[ackOffBlocks:], a.Blocks)
	binary.BigEndian.PutUint32(b[ackOffQuota:], a.QuotaBuffers)
	if n > JoinAckBodyLen {
		g := a.Group.Addr().As4()
		copy(b[ackOffGroup:], g[:])
		binary.BigEndian.PutUint16(b[ackOffGroupPort:], a.Group.Port())
		binary.BigEndian.PutUint16(b[ackOffGroupRes:], 0)
	}
	return nil
}

// Append appends the encoded body to dst and returns the extended slice.
func (a *JoinAckBody) Append(dst []byte) []byte {
	dst, tail := grow(dst, a.Len())
	_ = a.MarshalTo(tail) // cannot fail: tail has a.Len() bytes
	return dst
}

// AppendJoinAck appends a whole JoinAck packet: a copy of h with Type
// TypeJoinAck, Count 0 and FlagGroup set where the body has a group, then
// body. Typically h is the Join's header, so job, token, child, dtype and
// op echo the request.
func AppendJoinAck(dst []byte, h *Header, body *JoinAckBody) []byte {
	hh := *h
	hh.Flags &^= FlagGroup
	if body.hasGroup() {
		hh.Flags |= FlagGroup
	}
	return body.Append(appendControlHeader(dst, &hh, TypeJoinAck))
}

// appendControlHeader appends the header of a control packet, whose body
// follows: a copy of h with Type typ and Count 0.
func appendControlHeader(dst []byte, h *Header, typ Type) []byte {
	hh := *h
	hh.Type, hh.Count = typ, 0
	dst, tail := grow(dst, HeaderLen)
	_ = hh.MarshalTo(tail) // cannot fail: tail has HeaderLen bytes
	return dst
}

// grow extends dst by n bytes and returns it with the new tail, which the
// caller overwrites in full.
func grow(dst []byte, n int) (all, tail []byte) {
	dst = slices.Grow(dst, n)
	l := len(dst)
	dst = dst[:l+n]
	return dst, dst[l:]
}
