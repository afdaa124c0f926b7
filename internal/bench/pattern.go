package bench

import (
	"crypto/rand"
	"encoding/binary"
	"math"
	mrand "math/rand/v2"
	"slices"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/wire"
)

// putValue stores the small integer v as one element of dt, little-endian,
// with the reference's encoding (elem.StoreInt, elem.StoreFloat: exact for
// the patterns' small integers in every dtype).
func putValue(dt wire.DType, b []byte, v int64) {
	switch {
	case !dt.Valid():
		// Config.Validate admits only wire.DTypes: one missing here would
		// leave zeros that a verification could not catch.
		panic("putValue: no encoding for " + dt.String())
	case dt.IsFloat():
		elem.StoreFloat(dt, b, float64(v))
	default:
		elem.StoreInt(dt, b, v)
	}
}

// patternValue is rank r's element i in call it: small integers (and ±1
// with a rare 2 for products), so every design's float result is exact and
// the check can be element-exact. For sums it is an element's part plus a
// rank's part (sumElemPart, sumRankPart): every element still differs
// from its neighbours, from call to call and from rank to rank (by the
// rank's part), and the sum over the ranks is P × the element's part plus
// one number per call, so checking a result costs one hash an element
// instead of P. (A check of P hashes an element took 52 ms of CPU per
// 1 MiB rank between calls, and on this VM the next call ran ~20% slower
// after such a burst, while the relays, which check nothing, did not pay
// it.)
func patternValue(op wire.Op, r, i, it int) int64 {
	if op == wire.OpSum {
		return sumElemPart(i, it) + sumRankPart(r, it)
	}
	h := uint64(i)*0x9E3779B97F4A7C15 ^ uint64(r)*0xBF58476D1CE4E5B9 ^ uint64(it)*0x94D049BB133111EB
	h ^= h >> 31
	if op == wire.OpProd {
		switch h % 16 {
		case 0:
			return -1
		case 1:
			return 2
		}
		return 1
	}
	return int64(h%61) - 30
}

// sumElemPart is element i's part of every rank's sum pattern in call it,
// in -20..20.
func sumElemPart(i, it int) int64 {
	h := uint64(i)*0x9E3779B97F4A7C15 ^ uint64(it)*0x94D049BB133111EB
	h ^= h >> 31
	return int64(h%41) - 20
}

// sumRankPart is rank r's part of its sum pattern in call it, in -10..10.
func sumRankPart(r, it int) int64 {
	h := uint64(r+1)*0xBF58476D1CE4E5B9 ^ uint64(it)*0x94D049BB133111EB
	h ^= h >> 29
	return int64(h%21) - 10
}

// sumsExactly reports whether buf, float32 elements from first on, holds
// the sums of every rank's pattern of call it, bit for bit. The patterns
// are small integers, so every design's float32 sum of them is exact
// whatever its order; the benchmarks' default row is checked without
// building the reference (verifyPattern says where a result is wrong).
func sumsExactly(world, it int, buf []byte, first int) bool {
	var ranks int64
	for r := range world {
		ranks += sumRankPart(r, it)
	}
	w := int64(world)
	for i := 0; 4*i+4 <= len(buf); i++ {
		want := w*sumElemPart(first+i, it) + ranks
		if binary.LittleEndian.Uint32(buf[4*i:]) != math.Float32bits(float32(want)) {
			return false
		}
	}
	return true
}

// fillPattern writes rank's dense vector of call it into buf.
func fillPattern(dt wire.DType, op wire.Op, rank, it int, buf []byte) {
	if dt == wire.Float32 && op == wire.OpSum { // the benchmarks' default: the rank's part once
		rp := sumRankPart(rank, it)
		for i, b := 0, buf; len(b) >= 4; i, b = i+1, b[4:] {
			binary.LittleEndian.PutUint32(b, math.Float32bits(float32(sumElemPart(i, it)+rp)))
		}
		return
	}
	if dt == wire.Float32 { // without a dispatch per element
		for i := 0; 4*i+4 <= len(buf); i++ {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(float32(patternValue(op, rank, i, it))))
		}
		return
	}
	sz := dt.Size()
	for i := 0; i*sz < len(buf); i++ {
		putValue(dt, buf[i*sz:], patternValue(op, rank, i, it))
	}
}

// sparsePattern is rank r's sparse vector in call it: max(1, density ×
// count) distinct indices, a share overlap of them drawn from a set every
// rank shares (so indices collide across ranks as in real gradients), the
// rest from the rank's own stream, with small integer values (zeros
// included) so float sums are exact. Every process computes every rank's
// vector from these numbers alone, which is how a rank checks its result.
func sparsePattern(dt wire.DType, r, it, count int, density, overlap float64) []byte {
	k := min(count, max(1, int(density*float64(count)+0.5)))
	used := make([]uint64, (count+63)/64)
	take := func(i int) bool {
		if used[i/64]&(1<<(i%64)) != 0 {
			return false
		}
		used[i/64] |= 1 << (i % 64)
		return true
	}
	shared := mrand.New(mrand.NewPCG(uint64(it), 0x5eed))
	own := mrand.New(mrand.NewPCG(uint64(it), uint64(r)+1))
	idx := make([]int, 0, k)
	nShared := int(overlap * float64(k))
	for len(idx) < nShared {
		if i := shared.IntN(count); take(i) {
			idx = append(idx, i)
		}
	}
	for len(idx) < k {
		if i := own.IntN(count); take(i) {
			idx = append(idx, i)
		}
	}
	slices.Sort(idx)
	sz := dt.Size()
	pairs := make([]byte, 0, k*wire.PairSize(dt))
	val := make([]byte, sz)
	for _, i := range idx {
		putValue(dt, val, int64((i*7+r*31+it*3)%13)-6)
		pairs = wire.AppendPair(pairs, uint32(i), val)
	}
	return pairs
}

// newToken draws a job token from the system's random source.
func newToken() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never returns an error: Go ends the program if the system's source fails
	return binary.LittleEndian.Uint64(b[:])
}
