package swtch

import (
	"context"
	"fmt"
	"math"
	"net/netip"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/wire"
)

// Relay is a ceiling a software switch is measured against: it answers
// joins as the switch does (the same window and packet size, so hosts send
// exactly the same datagrams) and returns data packets as results, with
// no processing unit and no handler. It aggregates nothing: its results are
// a host's own data, not a sum, so use it to measure, never to verify.
//
// It comes in two patterns. The echo relay (NewRelay) answers every data
// packet to its sender at once: one goroutine receives a batch, rewrites
// each header in place and sends the batch back, which is what moving the
// same datagrams through the kernel costs. The fan-out relay
// (NewFanoutRelay) has the switch's own communication pattern: it counts a
// block's arrivals from the job's P members and, with the last, sends that
// packet to all P, so a host waits for the slowest rank as in every
// allreduce. The fan-out relay is the fair ceiling for the switch. Given
// Config.Multicast, it sends a job whose members ask (wire.OptMulticast)
// its packets once to a group of the pool, as the switch does: the
// ceiling of the switch's multicast results.
type Relay struct {
	cfg   Config
	conn  conn.Conn
	ready chan struct{}
	fan   *fanout // nil: the echo relay
	ack   []byte  // the join answer being built
}

// NewRelay checks cfg (the fields a relay uses: Listen, PacketBytes, Window,
// Conn, Socket; Multicast and MulticastPort for the fan-out relay) and
// builds an echo relay; Run starts it.
func NewRelay(cfg Config) (*Relay, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Relay{cfg: cfg, ready: make(chan struct{})}, nil
}

// NewFanoutRelay is NewRelay for the fan-out relay.
func NewFanoutRelay(cfg Config) (*Relay, error) {
	r, err := NewRelay(cfg)
	if err != nil {
		return nil, err
	}
	r.fan = newFanout(newGroupPool(r.cfg.Multicast, r.cfg.MulticastPort))
	return r, nil
}

// Addr is the relay's address once Ready is closed.
func (r *Relay) Addr() netip.AddrPort { return r.conn.LocalAddr() }

// Ready is closed once the socket is bound.
func (r *Relay) Ready() <-chan struct{} { return r.ready }

// name is the relay's pattern, for errors.
func (r *Relay) name() string {
	if r.fan != nil {
		return "fan-out relay"
	}
	return "relay"
}

// Run binds the socket and relays until ctx is done.
func (r *Relay) Run(ctx context.Context) error {
	c, err := listenRelay(&r.cfg, r.name())
	if err != nil {
		return err
	}
	r.conn = c
	if r.fan != nil {
		if err := r.fan.groups.hold(); err != nil {
			c.Close()
			return multicastPortError(&r.cfg, err)
		}
		defer r.fan.groups.release()
	}
	close(r.ready)
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	// Where the conn can, it lends the datagrams from a region, as the
	// switch's readers take them: each batch is answered before the next
	// receive, so one region does.
	in := conn.NewBatch(c, regionMessages, r.cfg.Socket.MaxDatagram)
	msgs := in.Msgs
	out := make([]conn.Datagram, 0, len(msgs))
	var retry readRetry
	for {
		k, err := in.Read()
		if err != nil {
			if retry.failed(ctx, err) {
				return nil
			}
			continue // a transient error (ENOBUFS, ECONNREFUSED, ...): receive on
		}
		retry.ok()
		out = r.batch(msgs[:k], out[:0])
		for sent := 0; sent < len(out); {
			m, err := c.WriteBatch(out[sent:])
			if err != nil && ctx.Err() != nil {
				return nil
			}
			sent += max(m, 1) // a datagram the kernel refused is lost, as on a wire
		}
	}
}

// batch turns a received batch into what to send, appended to out. The
// answers point into msgs' buffers, which stay untouched until they are
// sent.
func (r *Relay) batch(msgs []conn.Datagram, out []conn.Datagram) []conn.Datagram {
	r.ack = r.ack[:0]
	if r.fan != nil {
		r.fan.start()
	}
	for i := range msgs {
		d := &msgs[i]
		var h wire.Header
		payload, err := h.Unmarshal(d.Buf[:d.N])
		if err != nil {
			continue
		}
		switch h.Type {
		case wire.TypeData:
			if r.fan != nil {
				out = r.fan.data(&h, d, out)
				continue
			}
			toResult(&h, d)
			out = append(out, *d)
		case wire.TypeJoin:
			// Answers accumulate in r.ack for the batch, each datagram its
			// own slice of it, so that two joins in one batch keep their
			// own answers.
			start := len(r.ack)
			var shape relayShape
			r.ack, shape = relayAck(&r.cfg, r.ack, &h, payload, netip.AddrPort{})
			if r.fan != nil && shape.world > 0 {
				var g netip.AddrPort
				if r.ack, g = r.fan.join(r.ack, start, &h, shape, d.Addr); g.IsValid() {
					r.ack, _ = relayAck(&r.cfg, r.ack[:start], &h, payload, g) // the ack names the job's group
				}
			}
			if len(r.ack) > start {
				out = append(out, conn.Datagram{Buf: r.ack[start:], N: len(r.ack) - start, Addr: d.Addr})
			}
		}
	}
	if r.fan != nil {
		out = r.fan.finish(out)
	}
	return out
}

// toResult rewrites the data packet d, whose header is h, as its block's
// result, in place.
func toResult(h *wire.Header, d *conn.Datagram) {
	h.Type, h.Child, h.Flags = wire.TypeResult, 0, 0
	_ = h.MarshalTo(d.Buf) // the header's own bytes: cannot fail
}

// listenRelay returns cfg.Conn, or a UDP socket on cfg.Listen; what names
// the relay in errors.
func listenRelay(cfg *Config, what string) (conn.Conn, error) {
	if len(cfg.Conns) > 0 {
		return nil, fmt.Errorf("Config.Conns = %d conns: the %s uses one socket (Config.Conn)", len(cfg.Conns), what)
	}
	if cfg.Conn != nil {
		return cfg.Conn, nil
	}
	c, err := conn.ListenUDP(cfg.Listen, cfg.Socket)
	if err != nil {
		return nil, fmt.Errorf("%s: Config.Listen = %s: %w", what, cfg.Listen, err)
	}
	return c, nil
}

// relayShape is what a relay's join-ack fixes: the job's ranks and
// blocks, and whether the member asked for a multicast group.
type relayShape struct {
	world, blocks int
	multicast     bool
}

// relayAck answers a join at once, appended to b: a relay needs no other
// member to answer. A join it cannot read gets no answer; one it cannot
// serve an error. For a join-ack it returns the job's shape (zero
// otherwise); a fan-out relay checks the rank and the shape on top
// (fanout.join). The ack names group when it is valid.
func relayAck(cfg *Config, b []byte, h *wire.Header, payload []byte, group netip.AddrPort) ([]byte, relayShape) {
	var body wire.JoinBody
	if body.Unmarshal(payload) != nil || h.DType.Size() == 0 {
		return b, relayShape{}
	}
	pe := int(body.PacketElems)
	if pe == 0 {
		pe = cfg.PacketBytes / h.DType.Size()
	}
	if pe < 1 || body.Elements < 1 || body.Elements > maxElements || (body.Elements-1)/uint64(pe) >= math.MaxUint32 || body.World == 0 {
		return relayError(b, h, "relay: a job holds 1..4294967295 blocks and 1..65535 ranks"), relayShape{}
	}
	blocks := int((body.Elements-1)/uint64(pe) + 1)
	algo, bufs := body.Algo, int(body.Buffers)
	if algo == wire.AlgoAuto {
		algo, bufs = wire.AlgoSingle, 0
	}
	reply := wire.Header{Version: wire.Version, Type: wire.TypeJoinAck, Job: h.Job, Token: h.Token, Child: h.Child, DType: h.DType, Op: h.Op}
	w := cfg.windowFor(int(body.World), pe*h.DType.Size()) // the switch's for the job with one buffer a block
	a := wire.JoinAckBody{Window: uint32(min(w, blocks)), Algo: algo, Buffers: uint8(bufs),
		PacketElems: uint32(pe), Blocks: uint32(blocks), Group: group}
	return wire.AppendJoinAck(b, &reply, &a), relayShape{world: int(body.World), blocks: blocks, multicast: body.Options&wire.OptMulticast != 0}
}

// relayError appends an error answer to the join h.
func relayError(b []byte, h *wire.Header, text string) []byte {
	reply := wire.Header{Version: wire.Version, Type: wire.TypeError, Job: h.Job, Token: h.Token, Child: h.Child}
	return wire.AppendError(b, &reply, wire.CodeBadRequest, text)
}
