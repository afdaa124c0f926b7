package wire

import (
	"encoding/binary"
	"math"
	"net/netip"
)

// seed is one valid packet, used by the round-trip tests, the gopacket
// tests, the pcap golden file and the fuzz seed corpus.
type seed struct {
	name    string
	h       Header // as decoded (Version set)
	payload []byte
	pkt     []byte
}

// testHeader is a header with every field set to something recognisable.
func testHeader(t Type, d DType, o Op, count uint32) Header {
	return Header{
		Version: Version, Type: t, Job: 7, Token: 0x0123456789abcdef,
		Generation: 3, Block: 2, Child: 1, DType: d, Op: o, Count: count,
	}
}

// denseF32 encodes float32 values little-endian, as a dense payload.
func denseF32(vs ...float32) []byte {
	b := make([]byte, 0, 4*len(vs))
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// pairsF64 encodes (index, float64) pairs little-endian, as a sparse payload.
func pairsF64(idx []uint32, vs []float64) []byte {
	var b []byte
	for i := range idx {
		b = binary.LittleEndian.AppendUint32(b, idx[i])
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(vs[i]))
	}
	return b
}

// seedPackets returns one or more valid packets of every type.
func seedPackets() []seed {
	var out []seed
	add := func(name string, h Header, payload []byte) {
		if payload == nil {
			payload = []byte{}
		}
		out = append(out, seed{name, h, payload, AppendPacket(nil, &h, payload)})
	}

	add("data-float32", testHeader(TypeData, Float32, OpSum, 4), denseF32(1, 2, 3, 4))
	res := testHeader(TypeResult, Int32, OpMax, 3)
	res.Child, res.Flags = 0, FlagPartial|FlagFromSwitch
	add("result-int32-partial", res, []byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0x80})
	custom := testHeader(TypeData, Int8, OpCustomBase+72, 1)
	custom.Flags = FlagRetransmit
	add("data-int8-custom-op", custom, []byte{0x7f})
	add("sparse-float64", testHeader(TypeSparse, Float64, OpSum, 2), pairsF64([]uint32{0, 255}, []float64{0.5, -2}))
	last := testHeader(TypeSparse, Float64, OpSum, 0)
	last.Flags = FlagLast
	add("sparse-empty-last", last, nil)
	add("spill-bfloat16", testHeader(TypeSpill, BFloat16, OpSum, 1), []byte{9, 0, 0, 0, 0x80, 0x3f})

	join := JoinBody{World: 8, Algo: AlgoMulti, Buffers: 4, Options: OptReproducible,
		Elements: 1 << 20, PacketElems: 256, TimeoutMillis: 5000}
	add("join", testHeader(TypeJoin, Float32, OpSum, 0), join.Append(nil))
	sparseJoin := JoinBody{World: 2, Algo: AlgoAuto, Options: OptSparse, Storage: StorageHash, Elements: 1000, BlockElems: 250}
	add("join-sparse", testHeader(TypeJoin, Float32, OpSum, 0), sparseJoin.Append(nil))
	upJoin := JoinBody{World: 4, Algo: AlgoMulti, Buffers: 2, Options: OptSparse, Storage: StorageArray, Elements: 1 << 16, BlockElems: 4096, StreamPackets: 33}
	up := testHeader(TypeJoin, Float64, OpMax, 0)
	up.Flags = FlagFromSwitch
	add("join-sparse-from-switch", up, upJoin.Append(nil))
	ack := JoinAckBody{Window: 16, Algo: AlgoTree, PacketElems: 256, Blocks: 4096, QuotaBuffers: 128}
	add("join-ack", testHeader(TypeJoinAck, Float32, OpSum, 0), ack.Append(nil))
	groupAck := ack
	groupAck.Group = netip.MustParseAddrPort("239.1.2.3:7000")
	grouped := testHeader(TypeJoinAck, Float32, OpSum, 0)
	grouped.Flags = FlagGroup
	add("join-ack-group", grouped, groupAck.Append(nil))
	e := ErrorBody{Code: CodeRefusedMemory, Text: []byte("need 128 buffers, 64 free")}
	add("error", testHeader(TypeError, 0, 0, 0), e.Append(nil))
	add("error-empty-text", testHeader(TypeError, Float32, OpSum, 0), (&ErrorBody{Code: CodeTimeout}).Append(nil))
	add("leave", testHeader(TypeLeave, 0, 0, 0), nil)
	abort := testHeader(TypeAbort, 0, 0, 0)
	abort.Flags, abort.Block = FlagRetransmit, uint32(abort.Child) // a second copy, from rank 1
	add("abort", abort, (&ErrorBody{Code: CodeTimeout, Text: []byte("allreduce generation 3 timed out after 2s: every stuck block waits for rank 2")}).Append(nil))
	return out
}
