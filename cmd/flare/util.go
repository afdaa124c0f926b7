package main

import (
	"encoding/binary"
	"math"
	"os"
	"runtime/pprof"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/wire"
)

// putValue stores the small integer v as one element of dt, little-endian.
func putValue(dt wire.DType, b []byte, v int64) {
	switch dt {
	case wire.Int8:
		b[0] = byte(v)
	case wire.Int16:
		binary.LittleEndian.PutUint16(b, uint16(v))
	case wire.Int32:
		binary.LittleEndian.PutUint32(b, uint32(v))
	case wire.Int64:
		binary.LittleEndian.PutUint64(b, uint64(v))
	case wire.Float32:
		binary.LittleEndian.PutUint32(b, math.Float32bits(float32(v)))
	case wire.Float64:
		binary.LittleEndian.PutUint64(b, math.Float64bits(float64(v)))
	case wire.BFloat16:
		binary.LittleEndian.PutUint16(b, uint16(elem.BFloat16From(float32(v))))
	case wire.Float16:
		binary.LittleEndian.PutUint16(b, uint16(elem.Float16From(float32(v))))
	default:
		// The flags admit only wire.ParseDType's dtypes: one missing
		// here would leave zeros that a verification could not catch.
		panic("putValue: no encoding for " + dt.String())
	}
}

// startCPUProfile profiles this process into path until stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
