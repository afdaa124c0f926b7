package harness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/handlers"
	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/proto"
	"github.com/flare-net/flare/wire"
)

// Config describes an in-process allreduce: P emulated hosts play
// against a processing unit running one job's handlers.Dense, with no
// sockets. It is the bed of the handlers' concurrent property tests and of
// the CPU calibration of flare bench.
type Config struct {
	HPU         hpu.Config
	Hosts       int
	DType       wire.DType
	Op          wire.Op
	Algo        wire.Algo // AlgoAuto chooses by message size (proto.Choose)
	Buffers     int       // B for AlgoMulti (0 = 2)
	Elements    int       // vector length per host
	PacketElems int       // elements per packet (0 = the buffer size / dtype size)
	Window      int       // blocks in flight per host (0 = every block)
	Quota       int       // buffers reserved for the job (0 = as many as the window can use, capped by L1)
	Generations int       // back-to-back allreduces (0 = 1)
	Dup         float64   // probability that a host sends a packet twice
	Reorder     float64   // probability that a host holds a packet back behind later ones
	Seed        uint64
}

// Result is what a harness run produced.
type Result struct {
	Out     [][]byte      // each host's result of the last generation
	Packets int64         // packets submitted by hosts, duplicates included
	Elapsed time.Duration // wall time of all generations
	Algo    wire.Algo     // the design used
	Buffers int
	HPU     hpu.Stats
	Dense   *handlers.DenseStats
}

// Run runs cfg.Generations allreduces of inputs (one little-endian
// vector of cfg.Elements per host) and returns every host's final result.
func Run(ctx context.Context, cfg Config, inputs [][]byte) (*Result, error) {
	hcfg := cfg.HPU.WithDefaults()
	if cfg.Hosts < 1 || len(inputs) != cfg.Hosts {
		return nil, fmt.Errorf("harness: %d inputs for %d hosts", len(inputs), cfg.Hosts)
	}
	esize := cfg.DType.Size()
	if esize == 0 {
		return nil, fmt.Errorf("harness: dtype %s: %w", cfg.DType, elem.ErrUnsupported)
	}
	for i, in := range inputs {
		if len(in) != cfg.Elements*esize {
			return nil, fmt.Errorf("harness: input %d has %d bytes, want %d", i, len(in), cfg.Elements*esize)
		}
	}
	if cfg.PacketElems == 0 {
		cfg.PacketElems = hcfg.BufferBytes / esize
	}
	if cfg.Generations == 0 {
		cfg.Generations = 1
	}
	if cfg.Algo == wire.AlgoAuto {
		cfg.Algo, cfg.Buffers = proto.Choose(cfg.Elements*esize, false)
	}
	if cfg.Algo == wire.AlgoMulti && cfg.Buffers == 0 {
		cfg.Buffers = 2
	}
	nblocks := (cfg.Elements + cfg.PacketElems - 1) / cfg.PacketElems
	if cfg.Window <= 0 || cfg.Window > nblocks {
		cfg.Window = nblocks
	}

	eg := &harnessEgress{hosts: cfg.Hosts, pe: cfg.PacketElems * esize}
	unit, pool, err := newUnit(hcfg, eg, cfg.PacketElems*esize)
	if err != nil {
		return nil, err
	}
	dcfg := handlers.DenseConfig{
		Job: 1, Token: 0x5eed, Algo: cfg.Algo, Buffers: cfg.Buffers, Children: cfg.Hosts,
		DType: cfg.DType, Op: cfg.Op, Elements: cfg.Elements, PacketElems: cfg.PacketElems,
	}
	// By default, every block a window can have open, at its peak memory.
	dflt := min(unit.Memory().Total(), min(nblocks, cfg.Window*cfg.Hosts)*dcfg.MinBuffers())
	if dcfg.Quota, err = reserve(unit, cfg.Quota, dflt); err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	defer dcfg.Quota.Release()
	dense, err := handlers.NewDense(dcfg)
	if err != nil {
		return nil, err
	}
	defer dense.Close()

	hosts := make([]*harnessHost, cfg.Hosts)
	for i := range hosts {
		hosts[i] = &harnessHost{
			rank: i, in: inputs[i], out: make([]byte, len(inputs[i])),
			results: make(chan uint32, nblocks),
			order:   proto.StaggeredOrder(nil, i, cfg.Hosts, nblocks, cfg.Window),
			rng:     rand.New(rand.NewPCG(cfg.Seed, uint64(i))),
			handler: dense,
		}
	}
	eg.out = hosts

	packets, elapsed, err := runHosts(ctx, unit, len(hosts), cfg.Generations, func(ctx context.Context, i int, gen uint32) (int64, error) {
		return hosts[i].run(ctx, unit, dense, pool, &cfg, gen, esize)
	})
	if err != nil {
		return nil, err
	}
	res := &Result{Elapsed: elapsed, Packets: packets, Algo: cfg.Algo, Buffers: cfg.Buffers, Dense: &dense.Stats, HPU: unit.Stats()}
	for _, h := range hosts {
		res.Out = append(res.Out, h.out)
	}
	return res, nil
}

// newUnit makes the processing unit of a harness run, over egress eg. The
// hosts take their packets, payloads of up to packetBytes, from the pool
// it returns, and the unit gives each back there once handled.
func newUnit(hcfg hpu.Config, eg hpu.Egress, packetBytes int) (*hpu.HPU, *sync.Pool, error) {
	pool := &sync.Pool{New: func() any { return &hpu.Packet{Payload: make([]byte, 0, packetBytes)} }}
	unit, err := hpu.New(hcfg, eg, func(p *hpu.Packet, _ int) { pool.Put(p) })
	return unit, pool, err
}

// reserve reserves the job's memory on unit: quota buffers, or dflt when
// quota is 0.
func reserve(unit *hpu.HPU, quota, dflt int) (*hpu.Quota, error) {
	if quota == 0 {
		quota = dflt
	}
	q, err := unit.Memory().Reserve(quota)
	if err != nil {
		return nil, fmt.Errorf("job needs %d buffers: %w", quota, err)
	}
	return q, nil
}

// runHosts runs the unit and, generation after generation, every host's
// part at once (run returns the packets host i sent), then stops the unit.
// It returns the packets and the time the generations took.
func runHosts(ctx context.Context, unit *hpu.HPU, hosts, gens int, run func(ctx context.Context, i int, gen uint32) (int64, error)) (packets int64, elapsed time.Duration, err error) {
	runCtx, stop := context.WithCancel(ctx)
	unitDone := make(chan struct{})
	go func() { unit.Run(runCtx); close(unitDone) }()
	defer func() { stop(); <-unitDone }()
	var mu sync.Mutex
	start := time.Now()
	for gen := range gens {
		g, gctx := errgroup.WithContext(ctx)
		for i := range hosts {
			g.Go(func() error {
				n, err := run(gctx, i, uint32(gen))
				mu.Lock()
				packets += n
				mu.Unlock()
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return packets, 0, err
		}
	}
	return packets, time.Since(start), nil
}

// harnessEgress delivers a result to every host: a copy into its output
// and the block id on its result channel.
type harnessEgress struct {
	hosts int
	pe    int // bytes per full packet
	out   []*harnessHost
}

func (e *harnessEgress) Emit(h *wire.Header, payload []byte) {
	if h.Type == wire.TypeError {
		return // a waiting report (CodeWaiting): no result
	}
	if h.Type != wire.TypeResult {
		return
	}
	off := int(h.Block) * e.pe
	for _, host := range e.out {
		copy(host.out[off:], payload)
		host.results <- h.Block
	}
}

type harnessHost struct {
	rank    int
	in, out []byte
	results chan uint32
	order   []uint32
	rng     *rand.Rand
	held    []*hpu.Packet
	handler hpu.Handler
}

// run sends one generation in staggered order with a window, duplicating
// and holding back packets at random, and waits for every result. Blocks
// whose result has not come within the retransmission timeout are sent
// again (the handler's bitmap keeps them from counting twice). It returns
// the number of packets sent.
func (h *harnessHost) run(ctx context.Context, unit *hpu.HPU, d *handlers.Dense, pool *sync.Pool, cfg *Config, gen uint32, esize int) (int64, error) {
	var sent int64
	nblocks := len(h.order)
	state := make([]uint8, nblocks) // 0 not sent, 1 in flight, 2 result received
	inflight, received := 0, 0
	deadline := time.Now().Add(harnessGiveUp)
	timer := time.NewTimer(harnessRTO)
	defer timer.Stop()
	submit := func(p *hpu.Packet) error {
		sent++
		return unit.SubmitWait(ctx, p)
	}
	wait := func() error {
		if err := h.flush(ctx, submit); err != nil {
			return err
		}
		timer.Reset(harnessRTO)
		select {
		case blk := <-h.results:
			if state[blk] == 1 {
				state[blk] = 2
				inflight--
				received++
			}
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("host %d: gave up after %v (generation %d, %d of %d blocks done; handler %s)",
				h.rank, harnessGiveUp, gen, received, nblocks, d.Stats.String())
		}
		for blk, st := range state {
			if st == 1 {
				p := h.packet(pool, cfg, gen, uint32(blk), esize)
				p.Hdr.Flags |= wire.FlagRetransmit
				if err := submit(p); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, blk := range h.order {
		for inflight >= cfg.Window {
			if err := wait(); err != nil {
				return sent, err
			}
		}
		state[blk] = 1
		inflight++
		p := h.packet(pool, cfg, gen, blk, esize)
		if h.rng.Float64() < cfg.Dup {
			dup := h.packet(pool, cfg, gen, blk, esize)
			dup.Hdr.Flags |= wire.FlagRetransmit
			h.held = append(h.held, dup)
		}
		if h.rng.Float64() < cfg.Reorder {
			h.held = append(h.held, p)
			continue
		}
		if err := submit(p); err != nil {
			return sent, err
		}
		// Held packets go out after a random number of later ones.
		if len(h.held) > 0 && h.rng.IntN(4) == 0 {
			if err := h.flush(ctx, submit); err != nil {
				return sent, err
			}
		}
	}
	for received < nblocks {
		if err := wait(); err != nil {
			return sent, err
		}
	}
	return sent, nil
}

// Retransmission timeout and overall limit of the in-process hosts. The
// timeout only fires when a packet was refused (no buffer) or its result
// is slow; it is long against a handler's microseconds.
const (
	harnessRTO    = 100 * time.Millisecond
	harnessGiveUp = 60 * time.Second
)

func (h *harnessHost) packet(pool *sync.Pool, cfg *Config, gen, blk uint32, esize int) *hpu.Packet {
	p := pool.Get().(*hpu.Packet)
	lo := int(blk) * cfg.PacketElems
	n := min(cfg.PacketElems, cfg.Elements-lo)
	p.Hdr = wire.Header{
		Version: wire.Version, Type: wire.TypeData, Job: 1, Token: 0x5eed, Generation: gen, Block: blk,
		Child: uint16(h.rank), DType: cfg.DType, Op: cfg.Op, Count: uint32(n),
	}
	p.Payload = append(p.Payload[:0], h.in[lo*esize:(lo+n)*esize]...)
	p.Handler = h.handler
	return p
}

// flush sends held packets in a random order.
func (h *harnessHost) flush(ctx context.Context, submit func(*hpu.Packet) error) error {
	h.rng.Shuffle(len(h.held), func(i, j int) { h.held[i], h.held[j] = h.held[j], h.held[i] })
	for len(h.held) > 0 {
		p := h.held[len(h.held)-1]
		h.held = h.held[:len(h.held)-1]
		if err := submit(p); err != nil {
			return err
		}
	}
	return nil
}
