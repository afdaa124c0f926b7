package swtch

import (
	"bytes"
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/wire"
)

// relayAnswers runs one batch of datagrams, all from from, through an
// echo relay and decodes its answers.
func relayAnswers(t *testing.T, r *Relay, from netip.AddrPort, pkts ...[]byte) []sentPacket {
	t.Helper()
	var in []conn.Datagram
	for _, p := range pkts {
		in = append(in, conn.Datagram{Buf: bytes.Clone(p), N: len(p), Addr: from})
	}
	var out []sentPacket
	for _, d := range r.batch(in, nil) {
		out = append(out, decodeSentPacket(t, "relay", d.Addr, d.Buf[:d.N]))
	}
	return out
}

func newEchoRelay(t *testing.T) *Relay {
	t.Helper()
	r, err := NewRelay(Config{Listen: "127.0.0.1:0", PacketBytes: fzPacketBytes})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The relay answers a join as the switch does, so that hosts send it the
// datagrams they would send the switch: the same header, window, design,
// packet size and block count, for each shape (the packet size the
// switch's or the join's own, blocks exact or with a short last one).
func TestRelayAnswersJoinsAsTheSwitch(t *testing.T) {
	for _, tc := range []struct {
		dt       wire.DType
		elements uint64
		pe       uint32
	}{
		{wire.Float32, fzElements, 0},
		{wire.Float32, 64, 0}, // whole blocks
		{wire.Int8, 1000, 0},
		{wire.Float64, 5, 3},
		{wire.Int16, 1 << 20, 0}, // more blocks than the window
	} {
		fx := newJobFixture(t, func(c *Config) { c.HPU = hpu.Config{} }) // the daemon's unit, whose memory does not bound these windows
		join := shapeJoin(9, 0, 1, tc.dt, tc.elements, tc.pe)
		fx.deliver(fzRank0, join)
		want := fx.sent()
		got := relayAnswers(t, newEchoRelay(t), fzRank0, join)
		if len(want) != 1 || len(got) != 1 || got[0].hdr != want[0].hdr || got[0].to != fzRank0 {
			t.Fatalf("%v×%d, %d a packet: the relay answered %v, the switch %v", tc.dt, tc.elements, tc.pe, got, want)
		}
		var g, w wire.JoinAckBody
		if err := g.Unmarshal(got[0].payload); err != nil {
			t.Fatal(err)
		}
		if err := w.Unmarshal(want[0].payload); err != nil {
			t.Fatal(err)
		}
		if g.Window != w.Window || g.Algo != w.Algo || g.Buffers != w.Buffers || g.PacketElems != w.PacketElems || g.Blocks != w.Blocks {
			t.Errorf("%v×%d, %d a packet: the relay acked %+v, the switch %+v", tc.dt, tc.elements, tc.pe, g, w)
		}
	}
}

// A join the relay cannot read gets no answer; one it cannot serve gets a
// bad-request error to the join's own token; two joins in one batch each
// get their own answer; and what the answers are built in does not grow
// with the joins a relay has answered.
func TestRelayRefusesJoins(t *testing.T) {
	r := newEchoRelay(t)
	badDType := shapeJoin(9, 0, 1, wire.Float32, 64, 0)
	badDType[wire.OffDType] = 0xEE
	if got := relayAnswers(t, r, fzRank0, badDType); len(got) != 0 {
		t.Errorf("a join of dtype 0xEE: answered %v, want nothing", got)
	}
	for _, tc := range []struct {
		name            string
		world, elements uint64
		pe              uint32
	}{
		{"no elements", 1, 0, 0},
		{"no ranks", 0, 64, 0},
		{"too many elements", 1, maxElements + 1, 0},
		{"2^32 blocks", 1, 1 << 32, 1},
	} {
		if tc.elements > maxElements+1 {
			continue // the bound above is the one this platform reaches first
		}
		got := relayAnswers(t, r, fzRank0, shapeJoin(9, 0, int(tc.world), wire.Int8, tc.elements, tc.pe))
		if len(got) != 1 || got[0].hdr.Type != wire.TypeError || got[0].code != wire.CodeBadRequest ||
			got[0].hdr.Token != 9 || got[0].hdr.Job != 9 || !strings.Contains(got[0].text, "1..4294967295 blocks and 1..65535 ranks") {
			t.Errorf("%s: answered %v, want a bad-request error to job 9, token 9, naming the ranges", tc.name, got)
		}
	}
	for range 100 {
		got := relayAnswers(t, r, fzRank0, shapeJoin(7, 0, 1, wire.Float32, 64, 0), shapeJoin(8, 0, 1, wire.Float32, 64, 0))
		if len(got) != 2 || got[0].hdr.Job != 7 || got[1].hdr.Job != 8 || got[0].hdr.Type != wire.TypeJoinAck || got[1].hdr.Type != wire.TypeJoinAck {
			t.Fatalf("two joins in a batch: answered %v, want job 7's join-ack then job 8's", got)
		}
	}
	if c := cap(r.ack); c > 4*(wire.HeaderLen+wire.JoinAckBodyLen) {
		t.Errorf("after 100 batches of two joins the answers' buffer holds %d bytes, want at most a few answers", c)
	}
}

// A data packet goes back to its sender at once as its block's result: the
// header's job, block and generation kept, the type a result's and the
// child and flags cleared, the payload untouched. A datagram that does
// not decode gets no answer.
func TestRelayEchoesData(t *testing.T) {
	r := newEchoRelay(t)
	payload := []byte("sixteen bytes...")
	h := wire.Header{Job: 9, Token: 9, Type: wire.TypeData, Child: 3, Block: 4, Generation: 5, Flags: wire.FlagRetransmit, DType: wire.Int8, Op: wire.OpSum, Count: uint32(len(payload))}
	got := relayAnswers(t, r, fzRank1, wire.AppendPacket(nil, &h, payload))
	want := h
	want.Version, want.Type, want.Child, want.Flags = wire.Version, wire.TypeResult, 0, 0
	if len(got) != 1 || got[0].hdr != want || got[0].to != fzRank1 || !bytes.Equal(got[0].payload, payload) {
		t.Fatalf("answered %v, want %+v with the payload to %v", got, want, fzRank1)
	}
	other := wire.AppendPacket(nil, &h, payload)
	other[wire.OffVersion]++
	short := wire.AppendPacket(nil, &h, payload)[:wire.HeaderLen+3]
	if got := relayAnswers(t, r, fzRank1, other, short); len(got) != 0 {
		t.Errorf("a data packet of another version and one cut short: answered %v, want nothing", got)
	}
}

// The relay runs on one socket: a group of conns is refused by name.
func TestRelayOneSocket(t *testing.T) {
	c, err := conn.NewMemNetwork().Listen(netip.MustParseAddrPort("10.0.0.9:7000"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRelay(Config{Conns: []conn.Conn{c}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a relay that took the group would run until then
	defer cancel()
	if err := r.Run(ctx); err == nil || !strings.Contains(err.Error(), "Config.Conns = 1 conns: the relay uses one socket") {
		t.Errorf("Run with one conn in Config.Conns: %v, want an error naming Config.Conns", err)
	}
}
