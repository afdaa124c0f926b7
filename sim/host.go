package sim

import (
	"fmt"
	"math/rand/v2"

	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/wire"
)

// Emit receives a finished block at the current cycle: it keeps the result
// (every host receives the same multicast) and opens a window slot at each
// host.
func (s *sim) Emit(h *wire.Header, payload []byte) {
	if h.Type == wire.TypeError {
		return // a waiting report (CodeWaiting): no result
	}
	b := int(h.Block)
	switch {
	case h.Type != wire.TypeResult || h.Flags&wire.FlagRetransmit != 0:
		s.problems = append(s.problems, fmt.Sprintf("unexpected %s packet for block %d", h.Type, b))
		return
	case b >= s.nblocks || s.emitted[b] >= 0:
		s.problems = append(s.problems, fmt.Sprintf("block %d emitted twice or out of range", b))
		return
	}
	now := s.unit.Now()
	s.emitted[b] = now
	if f := s.feed; f != nil && f.blocked {
		f.blocked = false
		if err := s.unit.At(max(now, int64(f.plan)), f.wakeFn); err != nil {
			panic(err)
		}
	}
	copy(s.out[b*s.pe*s.esize:], payload)
	for _, host := range s.hosts {
		host.inflight--
		if s.feed != nil {
			continue
		}
		if host.blocked {
			host.blocked = false
			if err := s.unit.At(max(now, int64(host.plan)), host.wakeFn); err != nil {
				panic(err) // never before the clock
			}
		}
	}
}

// simHost is one sender: its staggered order, its next send time and its
// window.
type simHost struct {
	s        *sim
	rank     int
	order    []uint32
	next     int // index in order of the next block to send
	inflight int
	blocked  bool    // the window is full: the next result wakes it
	plan     float64 // cycle of the next send (kept fractional so the mean gap is exact)
	rng      *rand.Rand
	wakeFn   func() // h.wake, made once
}

func (h *simHost) gap() float64 { return h.rng.ExpFloat64() * h.s.cfg.MeanInterArrival }

// wake sends the next block if the window has room, and schedules the next
// send one random gap later.
func (h *simHost) wake() {
	s := h.s
	if h.inflight >= s.window {
		h.blocked = true
		return
	}
	now := h.send()
	if h.next < len(h.order) {
		h.plan = max(h.plan, float64(now)) + h.gap()
		if err := s.unit.At(int64(h.plan), h.wakeFn); err != nil {
			panic(err)
		}
	}
}

// packet builds host rank's packet of block blk, reusing a finished one.
func (s *sim) packet(rank int, blk uint32) *hpu.Packet {
	var p *hpu.Packet
	if n := len(s.free); n > 0 {
		p, s.free = s.free[n-1], s.free[:n-1]
	} else {
		p = new(hpu.Packet)
	}
	lo := int(blk) * s.pe
	n := min(s.pe, len(s.out)/s.esize-lo)
	p.Hdr = wire.Header{
		Version: wire.Version, Type: wire.TypeData, Job: 1, Token: 0x5eed, Block: blk,
		Child: uint16(rank), DType: s.cfg.DType, Op: s.cfg.Op, Count: uint32(n),
	}
	p.Payload = s.inputs[rank][lo*s.esize : (lo+n)*s.esize]
	p.Handler = s.dense
	return p
}

// send submits the host's next block now and returns the cycle.
func (h *simHost) send() int64 {
	s := h.s
	now := s.unit.Now()
	blk := h.order[h.next]
	h.next++
	h.inflight++
	if s.firstIn[blk] < 0 {
		s.firstIn[blk] = now
	}
	p := s.packet(h.rank, blk)
	p.Arrival = now
	if err := s.unit.Submit(p); err != nil {
		panic(err) // a timer's cycle is never before the clock
	}
	return now
}

// simFeed is the switch's arrival process (Config.Arrivals =
// ArrivalsSwitch): one stream of packets with exponential gaps of mean
// MeanInterArrival/P, the hosts taking turns in rank order; a host with
// nothing to send or a full window gives its turn to the next one.
type simFeed struct {
	s       *sim
	rng     *rand.Rand
	turn    int     // rank whose turn is next
	plan    float64 // cycle of the next packet
	blocked bool    // every host that has blocks left has a full window
	wakeFn  func()
}

func (f *simFeed) gap() float64 {
	return f.rng.ExpFloat64() * f.s.cfg.MeanInterArrival / float64(len(f.s.hosts))
}

func (f *simFeed) wake() {
	s := f.s
	p := len(s.hosts)
	left := false
	for i := range p {
		h := s.hosts[(f.turn+i)%p]
		if h.next >= len(h.order) {
			continue
		}
		left = true
		if h.inflight >= s.window {
			continue
		}
		now := h.send()
		f.turn = (h.rank + 1) % p
		f.plan = max(f.plan, float64(now)) + f.gap()
		if err := s.unit.At(int64(f.plan), f.wakeFn); err != nil {
			panic(err)
		}
		return
	}
	f.blocked = left
}
