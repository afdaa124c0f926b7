package swtch

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/flare-net/flare/wire"
)

// oldJoin is a join as protocol version 1 encoded it: version byte 1 and a
// 24-byte body (world, algo, buffers, options, storage, deadline,
// elements, packet elems, timeout).
func oldJoin(job uint32, rank int, flags wire.Flags) []byte {
	h := wire.Header{Version: wire.Version1, Type: wire.TypeJoin, Flags: flags, Job: job, Token: 77, Child: uint16(rank), DType: wire.Float32, Op: wire.OpSum}
	body := make([]byte, wire.JoinBodyLenV1)
	binary.BigEndian.PutUint16(body[0:], 2)
	binary.BigEndian.PutUint64(body[8:], fzElements)
	binary.BigEndian.PutUint32(body[16:], fzPacketElems)
	return wire.AppendPacket(nil, &h, body)
}

// TestOldVersionJoinRefused: a version-1 join is dropped (counted under
// version) and answered, in version 1 so its sender decodes it, with a
// bad-request Error naming both versions; no job is created; a version-1
// data packet gets no answer.
func TestOldVersionJoinRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags wire.Flags
		who   string
	}{
		{"host", 0, "rank 1 joined"},
		{"child switch", wire.FlagFromSwitch, "child switch 1 joined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newJobFixture(t, nil)
			fx.deliver(fzRank0, oldJoin(5, 1, tc.flags))
			out := fx.drain()
			if len(out) != 1 || out[0].to != fzRank0 {
				t.Fatalf("the switch sent %d packets, want one Error to %v", len(out), fzRank0)
			}
			h, payload, err := decodeSent(out[0].buf) // read as the old host would
			if h.Version != wire.Version1 {
				t.Fatalf("the answer carries version %d, want 1 (the joiner's)", h.Version)
			}
			if err != nil || h.Type != wire.TypeError || h.Job != 5 || h.Token != 77 || h.Child != 1 {
				t.Fatalf("answer %+v (%v): want an Error to job 5, token 77, rank 1", h, err)
			}
			var e wire.ErrorBody
			if err := e.Unmarshal(payload); err != nil || e.Code != wire.CodeBadRequest {
				t.Fatalf("answer body %v (%v): want bad-request, a code version 1 knows", e.Code, err)
			}
			for _, w := range []string{"job 5: " + tc.who, "protocol version 1", "speaks version 2"} {
				if !strings.Contains(e.Message(), w) {
					t.Errorf("refusal %q does not say %q", e.Message(), w)
				}
			}
			if n := fx.s.drops.snapshot()[wire.ReasonVersion]; n != 1 {
				t.Errorf("version drops = %d, want 1", n)
			}
			if n := fx.s.refusals.get(refusalVersion); n != 1 {
				t.Errorf("refusals %q = %d, want 1", refusalVersion, n)
			}
			if fx.s.jobs.get(5) != nil {
				t.Error("the refused join created a job")
			}
			data := denseData(0, 0, 1, 77)
			data[wire.OffVersion] = wire.Version1
			fx.deliver(fzRank0, data)
			if out := fx.drain(); len(out) != 0 {
				t.Errorf("a version-1 data packet was answered (%d packets)", len(out))
			}
			if n := fx.s.drops.snapshot()[wire.ReasonVersion]; n != 2 {
				t.Errorf("version drops = %d, want 2", n)
			}
		})
	}
}

// TestJoinFieldKinds: each join field carries one thing, and a join that
// puts a value in another kind's field is refused naming the field.
func TestJoinFieldKinds(t *testing.T) {
	sparse := wire.JoinBody{World: 1, Options: wire.OptSparse, Storage: wire.StorageHash, Elements: fzSparseElems}
	dense := wire.JoinBody{World: 1, Algo: wire.AlgoSingle, Elements: fzElements}
	for _, tc := range []struct {
		name  string
		flags wire.Flags
		body  func(sparse, dense wire.JoinBody) wire.JoinBody
		want  string
	}{
		{"sparse packet elems", 0, func(s, _ wire.JoinBody) wire.JoinBody { s.PacketElems = 64; return s }, "packet elems 64 in a sparse join: must be 0"},
		{"dense block elems", 0, func(_, d wire.JoinBody) wire.JoinBody { d.BlockElems = 64; return d }, "block elems 64 in a dense join: must be 0"},
		{"host stream packets", 0, func(s, _ wire.JoinBody) wire.JoinBody { s.StreamPackets = 3; return s }, "stream packets 3: must be 0"},
		{"dense stream packets", 0, func(_, d wire.JoinBody) wire.JoinBody { d.StreamPackets = 3; return d }, "stream packets 3: must be 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newJobFixture(t, nil)
			h := wire.Header{Flags: tc.flags, Job: 6, Token: 6, DType: wire.Float32, Op: wire.OpSum}
			body := tc.body(sparse, dense)
			fx.deliver(fzRank0, wire.AppendJoin(nil, &h, &body))
			r := fx.replies()
			if len(r.errors) != 1 || r.errors[0].Code != wire.CodeBadRequest || !strings.Contains(r.errors[0].Message(), tc.want) {
				t.Fatalf("got %v and %d acks, want one bad-request saying %q", r.errors, len(r.acks), tc.want)
			}
		})
	}
	// The same bodies without the stray field are admitted, the sparse
	// one with the block size it asked for.
	fx := newJobFixture(t, nil)
	h := wire.Header{Job: 8, Token: 8, DType: wire.Float32, Op: wire.OpSum}
	sparse.BlockElems = 100
	fx.deliver(fzRank0, wire.AppendJoin(nil, &h, &sparse))
	if r := fx.replies(); r.acks[8] != 1 {
		t.Fatalf("the sparse join was not admitted: %v", r.errors)
	}
	if j := fx.s.jobs.get(8); j == nil || j.spec.BlockElems != 100 || j.spec.PacketElems != 0 {
		t.Fatalf("job 8's spec %+v: want block elems 100, packet elems 0", j.spec)
	}
}

// TestMemberIndexOnlyLooks: memberIndex returns the member index and
// leaves the header as it was.
func TestMemberIndexOnlyLooks(t *testing.T) {
	fx := newJobFixture(t, func(c *Config) { c.Children, c.LocalHosts = 3, 2 })
	for _, tc := range []struct {
		flags        wire.Flags
		child, index uint16
		ok           bool
	}{
		{0, 0, 3, true}, {0, 1, 4, true}, {0, 2, 0, false},
		{wire.FlagFromSwitch, 2, 2, true},
	} {
		h := wire.Header{Flags: tc.flags, Child: tc.child}
		before := h
		index, ok := fx.s.memberIndex(&h)
		if index != tc.index || ok != tc.ok || h != before {
			t.Errorf("memberIndex(child %d, flags %v) = %d, %v, header %+v: want %d, %v, header unchanged",
				tc.child, tc.flags, index, ok, h, tc.index, tc.ok)
		}
	}
}
