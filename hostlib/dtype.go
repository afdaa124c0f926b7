package hostlib

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"unsafe"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/wire"
)

// Element is the set of Go element types AllReduce accepts, one per wire
// dtype: the signed integers, the IEEE floats, elem.BFloat16 and
// elem.Float16 (a bfloat16 and a binary16, each held in a uint16).
// Named types over the integers and floats (type Grad float32) are accepted
// too; the two 16-bit float types are accepted only as themselves, since
// their common uint16 cannot say which one a named type means.
type Element interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~float32 | ~float64 | elem.BFloat16 | elem.Float16
}

// DTypeOf returns the wire dtype of the Go element type T: wire.Int32 for
// int32, wire.BFloat16 for elem.BFloat16, wire.Float16 for
// elem.Float16, and so on.
func DTypeOf[T Element]() wire.DType {
	// The kind, not the type, decides, so named types map like their
	// underlying type; the uint16s in Element are exactly elem.BFloat16
	// and elem.Float16, told apart by type.
	switch reflect.TypeFor[T]().Kind() {
	case reflect.Int8:
		return wire.Int8
	case reflect.Int16:
		return wire.Int16
	case reflect.Int32:
		return wire.Int32
	case reflect.Int64:
		return wire.Int64
	case reflect.Float32:
		return wire.Float32
	case reflect.Float64:
		return wire.Float64
	case reflect.Uint16:
		if reflect.TypeFor[T]() == reflect.TypeFor[elem.Float16]() {
			return wire.Float16
		}
		return wire.BFloat16
	}
	panic("hostlib: DTypeOf: type outside Element") // unreachable: the constraint rules it out
}

// checkElement reports an error if T is not the Go type of dt, naming both.
func checkElement[T Element](dt wire.DType) error {
	if got := DTypeOf[T](); got != dt {
		return fmt.Errorf("hostlib: AllReduce on []%v (dtype %v), but the session's dtype is %v: pass a slice of the Go type of %v",
			reflect.TypeFor[T](), got, dt, dt)
	}
	return nil
}

// viewBytes returns the memory of buf as bytes, without copying. On a
// little-endian machine (nativeLittleEndian) those bytes are the vector's
// wire encoding.
func viewBytes[T Element](buf []T) []byte {
	var v T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(buf))), uintptr(len(buf))*unsafe.Sizeof(v))
}

// encodeLE writes src into dst as little-endian elements, the wire encoding,
// on a machine of either byte order. dst holds len(src) elements.
func encodeLE[T Element](dst []byte, src []T) {
	var v T
	switch unsafe.Sizeof(v) {
	case 1:
		for i := range src {
			dst[i] = *(*uint8)(unsafe.Pointer(&src[i]))
		}
	case 2:
		for i := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], *(*uint16)(unsafe.Pointer(&src[i])))
		}
	case 4:
		for i := range src {
			binary.LittleEndian.PutUint32(dst[4*i:], *(*uint32)(unsafe.Pointer(&src[i])))
		}
	case 8:
		for i := range src {
			binary.LittleEndian.PutUint64(dst[8*i:], *(*uint64)(unsafe.Pointer(&src[i])))
		}
	}
}

// decodeLE reads little-endian elements from src into dst, the inverse of
// encodeLE.
func decodeLE[T Element](dst []T, src []byte) {
	var v T
	switch unsafe.Sizeof(v) {
	case 1:
		for i := range dst {
			*(*uint8)(unsafe.Pointer(&dst[i])) = src[i]
		}
	case 2:
		for i := range dst {
			*(*uint16)(unsafe.Pointer(&dst[i])) = binary.LittleEndian.Uint16(src[2*i:])
		}
	case 4:
		for i := range dst {
			*(*uint32)(unsafe.Pointer(&dst[i])) = binary.LittleEndian.Uint32(src[4*i:])
		}
	case 8:
		for i := range dst {
			*(*uint64)(unsafe.Pointer(&dst[i])) = binary.LittleEndian.Uint64(src[8*i:])
		}
	}
}
