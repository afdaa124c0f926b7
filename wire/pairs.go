package wire

import (
	"encoding/binary"
	"iter"
)

// Sparse streams. A sender's packets for one sparse block (a host's Sparse
// packets to the switch; the switch's Spill and Sparse result packets to the
// hosts) form a stream numbered 0, 1, 2, ... so that a receiver can tell a
// duplicate from a new packet and knows when it has the whole stream. The
// header has no spare field for that number, so Sparse and Spill packets
// split the 32-bit block field: the low SparseSeqShift bits are the block
// id, the high bits the packet's sequence number in its stream.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|        Sequence (high)        |           Block (low)         |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// The block id stays in the low bits so that a processing unit that places
// packets by block (block mod clusters) keeps every packet of a block on
// its home cluster whenever the cluster count divides 2^16.
const (
	SparseSeqShift  = 16
	MaxSparseBlocks = 1 << SparseSeqShift        // block ids 0..MaxSparseBlocks-1
	MaxSparseSeq    = 1 << (32 - SparseSeqShift) // sequence numbers 0..MaxSparseSeq-1
	sparseBlockMask = MaxSparseBlocks - 1
)

// SparseBlockField packs a sparse block id and a stream sequence number
// into the header's block field. Bits of block above MaxSparseBlocks-1 and
// of seq above MaxSparseSeq-1 are dropped: callers check their ranges.
func SparseBlockField(block, seq uint32) uint32 {
	return seq<<SparseSeqShift | block&sparseBlockMask
}

// SplitSparseBlock unpacks the block field of a Sparse or Spill packet into
// the block id and the packet's sequence number in its stream.
func SplitSparseBlock(field uint32) (block, seq uint32) {
	return field & sparseBlockMask, field >> SparseSeqShift
}

// Pairs is a read-only view of the (index, value) pairs of a Sparse or
// Spill payload: each pair is a little-endian uint32 index followed by one
// little-endian element of the dtype (PairSize bytes in all). The accessors
// index into the payload and never copy or allocate.
type Pairs struct {
	b    []byte
	size int // PairSize of the dtype
}

// ParsePairs checks that payload holds exactly count pairs of dt and returns
// a view of them. An unknown dt gives ErrDType; a payload whose length is
// not count × PairSize(dt) gives ErrLength. The check is done in 64 bits, so
// no count overflows.
func ParsePairs(payload []byte, dt DType, count uint32) (Pairs, error) {
	if !dt.Valid() {
		return Pairs{}, ErrDType
	}
	size := PairSize(dt)
	if uint64(len(payload)) != uint64(count)*uint64(size) {
		return Pairs{}, ErrLength
	}
	return Pairs{b: payload, size: size}, nil
}

// PairsOf views payload as pairs of dt, with as many pairs as its length
// holds; it is ParsePairs for payloads whose count is implied by their
// length (ErrLength when that is not a whole number of pairs).
func PairsOf(payload []byte, dt DType) (Pairs, error) {
	if !dt.Valid() {
		return Pairs{}, ErrDType
	}
	size := PairSize(dt)
	if len(payload)%size != 0 {
		return Pairs{}, ErrLength
	}
	return Pairs{b: payload, size: size}, nil
}

// Len is the number of pairs.
func (p Pairs) Len() int {
	if p.size == 0 {
		return 0
	}
	return len(p.b) / p.size
}

// Index returns the index of pair i (0 ≤ i < Len).
func (p Pairs) Index(i int) uint32 {
	return binary.LittleEndian.Uint32(p.b[i*p.size:])
}

// Value returns the value bytes of pair i (little-endian, one element), a
// sub-slice of the payload.
func (p Pairs) Value(i int) []byte {
	off := i * p.size
	return p.b[off+IndexLen : off+p.size : off+p.size]
}

// Pair returns the PairSize bytes of pair i, a sub-slice of the payload.
func (p Pairs) Pair(i int) []byte {
	off := i * p.size
	return p.b[off : off+p.size : off+p.size]
}

// Bytes returns the whole payload the view covers.
func (p Pairs) Bytes() []byte { return p.b }

// All iterates over the pairs in payload order: the index, and the value
// bytes as a sub-slice of the payload.
func (p Pairs) All() iter.Seq2[uint32, []byte] {
	return func(yield func(uint32, []byte) bool) {
		for i, n := 0, p.Len(); i < n; i++ {
			if !yield(p.Index(i), p.Value(i)) {
				return
			}
		}
	}
}

// AppendPair appends one pair (index little-endian, then value as given) to
// dst and returns the extended slice. value must be one element of the
// packet's dtype, already little-endian. It does not allocate when dst has
// room for IndexLen+len(value) more bytes.
func AppendPair(dst []byte, index uint32, value []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, index)
	return append(dst, value...)
}

// AppendPairs appends len(indices) pairs of dt to dst: indices[i] with the
// i-th element of values (little-endian elements back to back). It returns
// ErrLength, and dst unchanged, when values does not hold exactly
// len(indices) elements of dt, and ErrDType for an unknown dt.
func AppendPairs(dst []byte, dt DType, indices []uint32, values []byte) ([]byte, error) {
	if !dt.Valid() {
		return dst, ErrDType
	}
	sz := dt.Size()
	if uint64(len(values)) != uint64(len(indices))*uint64(sz) {
		return dst, ErrLength
	}
	dst, tail := grow(dst, len(indices)*(IndexLen+sz))
	for i, idx := range indices {
		binary.LittleEndian.PutUint32(tail, idx)
		copy(tail[IndexLen:IndexLen+sz], values[i*sz:])
		tail = tail[IndexLen+sz:]
	}
	return dst, nil
}

// PutPairIndex overwrites the index of the pair that starts at b[0].
func PutPairIndex(b []byte, index uint32) { binary.LittleEndian.PutUint32(b, index) }
