package wire_test

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/flare-net/flare/wire"
)

// A data packet: host 1 sends elements 1, 2, 3, 4 (float32, sum) of block 2
// in allreduce 3 of job 7. This is the example in docs/PROTOCOL.md.
func ExampleAppendPacket() {
	h := wire.Header{Type: wire.TypeData, Job: 7, Token: 0x0123456789abcdef,
		Generation: 3, Block: 2, Child: 1, DType: wire.Float32, Op: wire.OpSum, Count: 4}
	var payload []byte
	for _, v := range []float32{1, 2, 3, 4} {
		payload = binary.LittleEndian.AppendUint32(payload, math.Float32bits(v))
	}
	pkt := wire.AppendPacket(nil, &h, payload)
	for off := 0; off < len(pkt); off += 16 {
		fmt.Printf("%04x  % x\n", off, pkt[off:min(off+16, len(pkt))])
	}
	// Output:
	// 0000  02 04 00 00 00 00 00 07 01 23 45 67 89 ab cd ef
	// 0010  00 00 00 03 00 00 00 02 00 01 05 01 00 00 00 04
	// 0020  00 00 80 3f 00 00 00 40 00 00 40 40 00 00 80 40
}

// Decoding on the receive path: validate, count drops by reason, dispatch.
func ExampleHeader_Unmarshal() {
	h := wire.Header{Type: wire.TypeJoin, Job: 7, Token: 42, Child: 3, DType: wire.Float32, Op: wire.OpSum}
	pkt := wire.AppendJoin(nil, &h, &wire.JoinBody{World: 8, Elements: 1 << 20})

	drops := map[string]int{}
	for _, datagram := range [][]byte{pkt, pkt[:20], append(pkt, 0)} {
		var h wire.Header
		payload, err := h.Unmarshal(datagram)
		if err != nil {
			drops[wire.DropReason(err)]++
			continue
		}
		var j wire.JoinBody
		if err := j.Unmarshal(payload); err != nil {
			drops[wire.DropReason(err)]++
			continue
		}
		fmt.Printf("%v: job %d rank %d of %d, %d %v elements\n", h.Type, h.Job, h.Child, j.World, j.Elements, h.DType)
	}
	fmt.Println("dropped:", drops)
	// Output:
	// join: job 7 rank 3 of 8, 1048576 float32 elements
	// dropped: map[length:1 short:1]
}

// An abort: rank 2 of job 7 gives up on allreduce 3 after its timeout.
// This is the Abort example in docs/PROTOCOL.md.
func ExampleAppendAbort() {
	h := wire.Header{Job: 7, Token: 0x0123456789abcdef, Generation: 3, Block: 2, Child: 2}
	pkt := wire.AppendAbort(nil, &h, wire.CodeTimeout, "timed out")
	for off := 0; off < len(pkt); off += 16 {
		fmt.Printf("%04x  % x\n", off, pkt[off:min(off+16, len(pkt))])
	}
	// Output:
	// 0000  02 09 00 00 00 00 00 07 01 23 45 67 89 ab cd ef
	// 0010  00 00 00 03 00 00 00 02 00 02 00 00 00 00 00 00
	// 0020  00 06 00 09 74 69 6d 65 64 20 6f 75 74
}
