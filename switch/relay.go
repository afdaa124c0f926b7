package swtch

import (
	"context"
	"fmt"
	"math"
	"net/netip"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/wire"
)

// Relay is the ceiling a software switch is measured against: it answers
// joins as the switch does (the same window and packet size, so hosts send
// exactly the same datagrams) and echoes every data packet back to its
// sender as that block's result. It aggregates nothing and has no
// processing unit; one goroutine receives a batch, rewrites each header in
// place and sends the batch back. What it costs is what moving the same
// datagrams through the kernel costs, which no switch on this machine can
// beat. Its results are each host's own data, not a sum: use it to measure,
// never to verify.
type Relay struct {
	cfg   Config
	conn  conn.Conn
	ready chan struct{}
}

// NewRelay checks cfg (the fields a relay uses: Listen, PacketBytes, Window,
// Conn, Socket) and builds a relay; Run starts it.
func NewRelay(cfg Config) (*Relay, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Relay{cfg: cfg, ready: make(chan struct{})}, nil
}

// Addr is the relay's address once Ready is closed.
func (r *Relay) Addr() netip.AddrPort { return r.conn.LocalAddr() }

// Ready is closed once the socket is bound.
func (r *Relay) Ready() <-chan struct{} { return r.ready }

// Run binds the socket and echoes until ctx is done.
func (r *Relay) Run(ctx context.Context) error {
	c, err := listenRelay(&r.cfg, "relay")
	if err != nil {
		return err
	}
	r.conn = c
	close(r.ready)
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	n := c.BatchSize()
	msgs := make([]conn.Datagram, n)
	out := make([]conn.Datagram, 0, n)
	for i := range msgs {
		msgs[i].Buf = make([]byte, r.cfg.Socket.MaxDatagram)
	}
	var ack []byte
	var retry readRetry
	for {
		k, err := c.ReadBatch(msgs)
		if err != nil {
			if retry.failed(ctx, err) {
				return nil
			}
			continue // a transient error (ENOBUFS, ECONNREFUSED, ...): receive on
		}
		retry.ok()
		out = out[:0]
		for i := range msgs[:k] {
			d := &msgs[i]
			var h wire.Header
			payload, err := h.Unmarshal(d.Buf[:d.N])
			if err != nil {
				continue
			}
			switch h.Type {
			case wire.TypeData:
				h.Type, h.Child, h.Flags = wire.TypeResult, 0, 0
				_ = h.MarshalTo(d.Buf) // the header's own bytes: cannot fail
				out = append(out, *d)
			case wire.TypeJoin:
				if ack = r.ack(ack[:0], &h, payload); ack != nil {
					out = append(out, conn.Datagram{Buf: ack, N: len(ack), Addr: d.Addr})
				}
			}
		}
		for sent := 0; sent < len(out); {
			m, err := c.WriteBatch(out[sent:])
			if err != nil && ctx.Err() != nil {
				return nil
			}
			sent += max(m, 1) // a datagram the kernel refused is lost, as on a wire
		}
	}
}

// listenRelay returns cfg.Conn, or a UDP socket on cfg.Listen; what names
// the relay in errors.
func listenRelay(cfg *Config, what string) (conn.Conn, error) {
	if cfg.Conn != nil {
		return cfg.Conn, nil
	}
	c, err := conn.ListenUDP(cfg.Listen, cfg.Socket)
	if err != nil {
		return nil, fmt.Errorf("%s: --listen %s: %w", what, cfg.Listen, err)
	}
	return c, nil
}

// ack answers a join at once: the relay needs no other member to echo.
func (r *Relay) ack(b []byte, h *wire.Header, payload []byte) []byte {
	var body wire.JoinBody
	if body.Unmarshal(payload) != nil || h.DType.Size() == 0 {
		return nil
	}
	pe := int(body.PacketElems)
	if pe == 0 {
		pe = r.cfg.PacketBytes / h.DType.Size()
	}
	blocks := (int(body.Elements) + pe - 1) / pe
	if blocks > math.MaxUint32 || blocks < 1 {
		reply := wire.Header{Version: wire.Version, Type: wire.TypeError, Job: h.Job, Token: h.Token, Child: h.Child}
		return wire.AppendError(b, &reply, wire.CodeBadRequest, "relay: the join-ack's block count holds 1..4294967295 blocks")
	}
	algo, bufs := body.Algo, int(body.Buffers)
	if algo == wire.AlgoAuto {
		algo, bufs = wire.AlgoSingle, 0
	}
	reply := wire.Header{Version: wire.Version, Type: wire.TypeJoinAck, Job: h.Job, Token: h.Token, Child: h.Child, DType: h.DType, Op: h.Op}
	a := wire.JoinAckBody{Window: uint32(min(r.cfg.Window, blocks)), Algo: algo, Buffers: uint8(bufs),
		PacketElems: uint32(pe), Blocks: uint32(blocks)}
	return wire.AppendJoinAck(b, &reply, &a)
}
