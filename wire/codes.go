package wire

import "fmt"

// DefaultPort is the UDP port the switch listens on by default and on which
// the gopacket layer is registered, so a pcap of Flare traffic decodes.
const DefaultPort = 7470

// Type is the packet type (byte 1 of the header).
type Type uint8

// Packet types. Values are part of the wire format: never renumber.
const (
	TypeJoin    Type = 1 // host -> switch: join a job (JoinBody payload)
	TypeJoinAck Type = 2 // switch -> host: admitted, with the window W (JoinAckBody payload)
	TypeError   Type = 3 // switch -> host: refused or failed (ErrorBody payload: code + text)
	TypeData    Type = 4 // host/child switch -> switch: one dense block
	TypeResult  Type = 5 // switch -> host/child switch: one aggregated dense block
	TypeSparse  Type = 6 // host <-> switch: (index, value) pairs of one block (a host's, or the sparse result)
	TypeSpill   Type = 7 // switch -> host: pairs that collided in the hash table
	TypeLeave   Type = 8 // host -> switch: leave the job; its buffers return to the pool
	// TypeAbort: host -> switch (and child switch -> parent): the sender's
	// call failed (timeout, cancelled, closed); the switch ends the job at
	// once and tells every other member with a CodeAborted Error. The
	// payload is an ErrorBody: the cause and the sender's reason.
	TypeAbort Type = 9
	typeMax        = TypeAbort
)

var typeNames = [...]string{"", "join", "join-ack", "error", "data", "result", "sparse", "spill", "leave", "abort"}

// Valid reports whether t is a known packet type.
func (t Type) Valid() bool { return t >= TypeJoin && t <= typeMax }

// String returns the lower-case name used in docs, logs and decode tables.
func (t Type) String() string {
	if t.Valid() {
		return typeNames[t]
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// DType is the element type of a job's vector.
type DType uint8

// Element types. Values are part of the wire format.
const (
	Int8     DType = 1
	Int16    DType = 2
	Int32    DType = 3
	Int64    DType = 4
	Float32  DType = 5
	Float64  DType = 6
	BFloat16 DType = 7 // stored as uint16 (upper half of a float32), summed in float32, rounded to nearest even
	Float16  DType = 8 // IEEE 754 binary16 as a uint16, summed in float32, rounded to nearest even
	dtypeMax       = Float16
)

var dtypeNames = [...]string{"", "int8", "int16", "int32", "int64", "float32", "float64", "bfloat16", "float16"}
var dtypeSizes = [...]int{0, 1, 2, 4, 8, 4, 8, 2, 2}

// DTypes lists every element type, in code order.
var DTypes = []DType{Int8, Int16, Int32, Int64, Float32, Float64, BFloat16, Float16}

// Valid reports whether d is a known element type.
func (d DType) Valid() bool { return d >= Int8 && d <= dtypeMax }

// Size is the size of one element in bytes (0 for an unknown type).
func (d DType) Size() int {
	if d.Valid() {
		return dtypeSizes[d]
	}
	return 0
}

// IsFloat reports whether d is a floating-point type.
func (d DType) IsFloat() bool {
	return d == Float32 || d == Float64 || d == BFloat16 || d == Float16
}

// String returns the lower-case name ("float32").
func (d DType) String() string {
	if d.Valid() {
		return dtypeNames[d]
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// ParseDType parses a name as printed by String.
func ParseDType(s string) (DType, error) {
	for _, d := range DTypes {
		if d.String() == s {
			return d, nil
		}
	}
	return 0, fmt.Errorf("unknown dtype %q (allowed: int8, int16, int32, int64, float32, float64, bfloat16, float16)", s)
}

// Op is the reduction operator.
type Op uint8

// Built-in operators. Codes from OpCustomBase up are free for operators
// registered at run time (elem.RegisterOp).
const (
	OpSum  Op = 1
	OpMin  Op = 2
	OpMax  Op = 3
	OpProd Op = 4
	OpAnd  Op = 5 // integers only
	OpOr   Op = 6 // integers only
	OpXor  Op = 7 // integers only
	opMax     = OpXor

	// OpCustomBase is the first code available for custom operators.
	OpCustomBase Op = 128
)

var opNames = [...]string{"", "sum", "min", "max", "prod", "and", "or", "xor"}

// Ops lists the built-in operators, in code order.
var Ops = []Op{OpSum, OpMin, OpMax, OpProd, OpAnd, OpOr, OpXor}

// Builtin reports whether o is one of the built-in operators.
func (o Op) Builtin() bool { return o >= OpSum && o <= opMax }

// Valid reports whether o may appear on the wire: a built-in operator or a
// code in the custom range. Whether a custom code is registered is the
// handler's business, not the wire's.
func (o Op) Valid() bool { return o.Builtin() || o >= OpCustomBase }

// BitwiseOnly reports whether o is defined on integers only.
func (o Op) BitwiseOnly() bool { return o == OpAnd || o == OpOr || o == OpXor }

// String returns the lower-case name ("sum").
func (o Op) String() string {
	if o.Builtin() {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// ParseOp parses a built-in operator name as printed by String.
func ParseOp(s string) (Op, error) {
	for _, o := range Ops {
		if o.String() == s {
			return o, nil
		}
	}
	return 0, fmt.Errorf("unknown op %q (allowed: sum, min, max, prod, and, or, xor)", s)
}

// Flags is the header's flag field.
type Flags uint16

// Header flags.
const (
	FlagLast       Flags = 1 << 0 // last packet of this sender for a sparse block
	FlagRetransmit Flags = 1 << 1 // the sender has sent this packet before
	FlagPartial    Flags = 1 << 2 // result released before every child contributed (bounded-time mode)
	FlagFromSwitch Flags = 1 << 3 // sent by a child switch (carries an aggregate), not a host
	FlagGroup      Flags = 1 << 4 // a JoinAck whose body names the job's multicast group (JoinAckGroupLen more bytes)
	flagsKnown           = FlagLast | FlagRetransmit | FlagPartial | FlagFromSwitch | FlagGroup
)

// Known reports whether only defined flag bits are set.
func (f Flags) Known() bool { return f&^flagsKnown == 0 }

// Algo is the dense aggregation design a job asks for in its join.
type Algo uint8

// Aggregation designs (section 6 of the Flare paper). AlgoMulti carries its
// buffer count B separately (JoinBody.Buffers).
const (
	AlgoAuto   Algo = 0 // the switch chooses by message size (paper's rule)
	AlgoSingle Algo = 1 // one aggregation buffer per block, under a lock
	AlgoMulti  Algo = 2 // B buffers per block, the last handler folds them
	AlgoTree   Algo = 3 // a fixed binary tree over child indices: reproducible
	algoMax         = AlgoTree
)

var algoNames = [...]string{"auto", "single", "multi", "tree"}

// Valid reports whether a is a known design.
func (a Algo) Valid() bool { return a <= algoMax }

// String returns the lower-case name.
func (a Algo) String() string {
	if a.Valid() {
		return algoNames[a]
	}
	return fmt.Sprintf("algo(%d)", uint8(a))
}

// JoinOptions are the option bits of a join (JoinBody.Options).
type JoinOptions uint8

// Join option bits.
const (
	// OptReproducible asks for bit-identical floating-point results on every
	// run; the switch then always uses the tree design (paper section 6).
	OptReproducible JoinOptions = 1 << 0
	// OptSparse announces a sparse allreduce: hosts send Sparse packets and
	// JoinBody.Storage says how the switch keeps the partial sums.
	OptSparse JoinOptions = 1 << 1
	// OptBounded asks for bounded-time (tail-tolerant) aggregation: the
	// switch releases a block's partial aggregate DeadlineMillis after the
	// block's first packet, marked FlagPartial with the number of
	// contributors in Child, instead of waiting for every child.
	OptBounded JoinOptions = 1 << 2
	// OptMulticast says the host can also take the job's results on an IPv4
	// multicast group. A switch with a group pool grants one to a job all
	// of whose members ask (JoinAckBody.Group) and sends each result once,
	// to the group, instead of once to every member; the host keeps its
	// unicast socket for everything else. It is a member's capability, not
	// part of what the members must agree on.
	OptMulticast JoinOptions = 1 << 3
	optionsKnown             = OptReproducible | OptSparse | OptBounded | OptMulticast
)

// Known reports whether only defined option bits are set.
func (o JoinOptions) Known() bool { return o&^optionsKnown == 0 }

// Storage is how the switch keeps a block's partial sums (JoinBody.Storage).
type Storage uint8

// Storage kinds. Values are part of the wire format.
const (
	StorageDense Storage = 0 // one slot per element of the block (dense jobs)
	StorageHash  Storage = 1 // sparse: a hash table; pairs that collide spill back to the host
	StorageArray Storage = 2 // sparse: an array as long as the block, indexed directly
	storageMax           = StorageArray
)

var storageNames = [...]string{"dense", "hash", "array"}

// Valid reports whether s is a known storage kind.
func (s Storage) Valid() bool { return s <= storageMax }

// String returns the lower-case name ("hash").
func (s Storage) String() string {
	if s.Valid() {
		return storageNames[s]
	}
	return fmt.Sprintf("storage(%d)", uint8(s))
}

// ErrorCode says why the switch refused a join or failed a job
// (ErrorBody.Code). Values are part of the wire format.
type ErrorCode uint16

// Error codes.
const (
	CodeRefusedMemory ErrorCode = 1 // not enough aggregation buffers for the job's window
	CodeBadRequest    ErrorCode = 2 // a well-formed join the switch cannot serve (rank >= world, zero elements, ...)
	CodeJobMismatch   ErrorCode = 3 // join parameters (world, dtype, op, elements, ...) differ from the job's, or the token is wrong
	CodeJobFull       ErrorCode = 4 // every rank of the job has already joined
	CodeTooManyJobs   ErrorCode = 5 // the job table is full
	CodeTimeout       ErrorCode = 6 // the job or an allreduce timed out
	CodeUnknownJob    ErrorCode = 7 // no such job (never joined, or already torn down)
	CodeInternal      ErrorCode = 8 // a bug or resource failure in the switch
	// CodeWaiting is no failure: it answers a host's retransmission of a
	// block the switch already has from it, naming the children it still
	// waits for, so a host that times out can say which rank is missing.
	CodeWaiting ErrorCode = 9
	// CodeAborted says a member aborted the job (its Abort reached the
	// switch, which ended the job): the Error's Child is the rank that
	// aborted, its text who and why ("rank 2: allreduce generation 3 timed
	// out ..."). In an Abort's own body it is the cause "cancelled or
	// closed by the application", next to CodeTimeout.
	CodeAborted ErrorCode = 10
	codeMax               = CodeAborted
)

var codeNames = [...]string{"", "refused-memory", "bad-request", "job-mismatch", "job-full",
	"too-many-jobs", "timeout", "unknown-job", "internal", "waiting", "aborted"}

// Valid reports whether c is a known error code.
func (c ErrorCode) Valid() bool { return c >= CodeRefusedMemory && c <= codeMax }

// String returns the lower-case name ("refused-memory").
func (c ErrorCode) String() string {
	if c.Valid() {
		return codeNames[c]
	}
	return fmt.Sprintf("code(%d)", uint16(c))
}
