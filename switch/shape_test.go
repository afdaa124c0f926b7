package swtch

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/flare-net/flare/wire"
)

// A sparse job's block range is what a host computes back from the block
// count, and resolving it again changes nothing: a child switch's join,
// which carries the resolved range, matches a host's that asked for the
// default.
func TestSparseBlockElemsIdempotent(t *testing.T) {
	for _, elements := range []int{1, 7, 4095, 4096, 4097, 100003, 262144, 1 << 28, min(1<<32-1, maxElements)} {
		for _, req := range []int{0, 1, 1000, 4096, 1 << 20} {
			be := sparseBlockElems(elements, req)
			blocks := (elements + be - 1) / be
			if be < 1 || blocks > 65536 || (elements+blocks-1)/blocks != be {
				t.Fatalf("elements %d, asked %d: range %d in %d blocks, which a host reads back as %d", elements, req, be, blocks, (elements+blocks-1)/blocks)
			}
			if again := sparseBlockElems(elements, be); again != be {
				t.Fatalf("elements %d, asked %d: %d, then %d when resolved again", elements, req, be, again)
			}
		}
	}
}

// The block range honours what the hosts ask for, evened out over the
// blocks, or DefaultSparseBlockElems, but is never so small that a job
// has more than 65,536 blocks nor larger than the vector.
func TestSparseBlockElemsValues(t *testing.T) {
	for _, tc := range []struct{ elements, req, want int }{
		{100003, 1000, 991}, // 101 blocks
		{100003, 0, 4001},   // 25 blocks of at most 4096
		{1 << 20, 0, DefaultSparseBlockElems},
		{1 << 28, 1, 4096}, // 65,536 blocks at most
		{1<<28 + 1, 1, 4097},
		{5000, 1 << 20, 5000}, // one block
		{7, 3, 3},
	} {
		if got := sparseBlockElems(tc.elements, tc.req); got != tc.want {
			t.Errorf("sparseBlockElems(%d elements, asked %d) = %d, want %d", tc.elements, tc.req, got, tc.want)
		}
	}
}

// A sparse job's join-ack: the blocks the hosts asked for, pairs per
// packet from the switch's packet size, and the design, with B buffers
// for multi and none named for single.
func TestSparsePlanAck(t *testing.T) {
	for _, tc := range []struct {
		algo             wire.Algo
		buffers          uint8
		wantAlgo         wire.Algo
		wantBuffers      uint8
		blockElems, want uint32
	}{
		{wire.AlgoAuto, 0, wire.AlgoSingle, 0, fzSparseBlock, 5},
		{wire.AlgoSingle, 0, wire.AlgoSingle, 0, 30, 4},
		{wire.AlgoMulti, 4, wire.AlgoMulti, 4, fzSparseBlock, 5},
	} {
		fx := newJobFixture(t, nil)
		for rank, from := range []netip.AddrPort{fzRank0, fzRank1} {
			h := wire.Header{Job: fzJob, Token: fzToken, Child: uint16(rank), DType: wire.Float32, Op: wire.OpSum}
			b := wire.JoinBody{World: 2, Options: wire.OptSparse, Storage: wire.StorageHash, Algo: tc.algo, Buffers: tc.buffers, Elements: fzSparseElems, BlockElems: tc.blockElems}
			fx.deliver(from, wire.AppendJoin(nil, &h, &b))
		}
		acks := fx.acks()
		pairs := uint32(fzPacketBytes / wire.PairSize(wire.Float32))
		if len(acks) != 2 || acks[0] != acks[1] || acks[0].Algo != tc.wantAlgo || acks[0].Buffers != tc.wantBuffers || acks[0].Blocks != tc.want || acks[0].PacketElems != pairs {
			t.Errorf("%v B=%d, blocks of %d: acks %+v; want two of %v, %d buffers, %d blocks, %d pairs a packet",
				tc.algo, tc.buffers, tc.blockElems, acks, tc.wantAlgo, tc.wantBuffers, tc.want, pairs)
		}
	}
}

// A sparse job of child switches sizes each block's streams by the
// longest a child says it sends, and refuses a child's join that says
// none: it must bound its streams.
func TestSparseChildStreams(t *testing.T) {
	join := func(child uint16, stream uint32) []byte {
		h := wire.Header{Job: fzJob, Token: fzToken, Child: child, Flags: wire.FlagFromSwitch, DType: wire.Float32, Op: wire.OpSum}
		b := wire.JoinBody{World: 3, Options: wire.OptSparse, Storage: wire.StorageHash, Elements: fzSparseElems, BlockElems: fzSparseBlock, StreamPackets: stream}
		return wire.AppendJoin(nil, &h, &b)
	}
	fx := newJobFixture(t, func(c *Config) { c.Children = 2 })
	fx.deliver(fzRank0, join(0, 3))
	fx.deliver(fzRank1, join(1, 5))
	fx.waitAdmitted(fzJob)
	if got := fx.s.jobs.get(fzJob).handler.(sparseJob).Config().ChildStream; got != 5 {
		t.Errorf("child switches with streams of 3 and 5 packets: blocks sized for %d, want 5", got)
	}
	fx = newJobFixture(t, func(c *Config) { c.Children = 2 })
	fx.deliver(fzRank0, join(0, 3))
	fx.deliver(fzRank1, join(1, 0))
	sent := fx.sent()
	if len(sent) == 0 || fx.s.jobs.get(fzJob) != nil {
		t.Fatalf("a child switch's sparse join without a stream bound: sent %v, the job in the table: %v", sent, fx.s.jobs.get(fzJob) != nil)
	}
	for _, p := range sent {
		if p.code != wire.CodeBadRequest || !strings.Contains(p.text, "a child switch's sparse join has stream packets 0") {
			t.Errorf("sent %v %v %q, want a bad request naming the stream bound", p.hdr.Type, p.code, p.text)
		}
	}
}
