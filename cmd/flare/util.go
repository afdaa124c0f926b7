package main

import (
	"encoding/binary"
	"math"
)

func putFloat32(b []byte, v float32) { binary.LittleEndian.PutUint32(b, math.Float32bits(v)) }
