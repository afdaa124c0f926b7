package harness

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/handlers"
	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/proto"
	"github.com/flare-net/flare/wire"
)

// SparseConfig describes an in-process sparse allreduce: P emulated
// hosts play against a processing unit running one job's handlers.Sparse,
// with no sockets. Zero fields take the defaults noted.
type SparseConfig struct {
	HPU         hpu.Config
	Hosts       int
	DType       wire.DType
	Op          wire.Op      // sum, min or max
	Storage     wire.Storage // StorageHash or StorageArray (StorageDense, the zero value: hash)
	Buffers     int          // tables per block (0 = 1: single buffer)
	Elements    int          // vector length
	BlockElems  int          // indices per block (0 = min(Elements, 4096))
	HashSlots   int          // hash slots per table (0 = BlockElems)
	PacketPairs int          // pairs per packet (0 = as many as a buffer holds)
	Window      int          // blocks in flight per host (0 = every block)
	Quota       int          // buffers reserved (0 = what the window can use, capped by L1)
	Generations int          // back-to-back allreduces (0 = 1)
	Dup         float64      // probability that a packet is delivered twice (both directions)
	Reorder     float64      // probability that a host holds a packet back behind later ones
	Seed        uint64
}

// SparseResult is what a sparse harness run produced.
type SparseResult struct {
	Out        [][]byte // each host's final pairs of the last generation, global indices, sorted
	Packets    int64    // Sparse packets submitted by hosts, duplicates included
	Elapsed    time.Duration
	HPU        hpu.Stats
	Sparse     *handlers.SparseStats
	Config     handlers.SparseConfig // the handler's configuration
	QuotaInUse int                   // buffers the job held after the last generation: 0 when every flush returned its memory
	QuotaPeak  int                   // most buffers the job held at once
}

// RunSparse runs cfg.Generations sparse allreduces of inputs (per
// host, wire pairs of cfg.DType with global uint32 indices, in any order)
// through a real processing unit, with random duplicates and reordering of
// the hosts' packets and of the switch's, and returns every host's final
// result, merged from the switch's result and spills with proto.MergeSparse.
func RunSparse(ctx context.Context, cfg SparseConfig, inputs [][]byte) (*SparseResult, error) {
	hcfg := cfg.HPU.WithDefaults()
	if cfg.Hosts < 1 || len(inputs) != cfg.Hosts {
		return nil, fmt.Errorf("sparse harness: %d inputs for %d hosts", len(inputs), cfg.Hosts)
	}
	scfg, err := cfg.HandlerConfig(hcfg)
	if err != nil {
		return nil, err
	}
	nblocks := scfg.Blocks()
	if cfg.Window <= 0 || cfg.Window > nblocks {
		cfg.Window = nblocks
	}
	eg := &sparseHarnessEgress{}
	ps := wire.PairSize(cfg.DType)
	unit, pool, err := newUnit(hcfg, eg, scfg.PacketPairs*ps)
	if err != nil {
		return nil, err
	}
	per := scfg.BlockBuffers(hcfg.BufferBytes)
	dflt := min(unit.Memory().Total()/per, nblocks, cfg.Window*cfg.Hosts) * per
	if scfg.Quota, err = reserve(unit, cfg.Quota, dflt); err != nil {
		return nil, fmt.Errorf("sparse harness: %w", err)
	}
	defer scfg.Quota.Release()
	sp, err := handlers.NewSparse(scfg)
	if err != nil {
		return nil, err
	}
	defer sp.Close()

	packer := proto.SparsePacker{DType: cfg.DType, BlockElems: scfg.BlockElems, PacketPairs: scfg.PacketPairs}
	hosts := make([]*sparseHost, cfg.Hosts)
	for i := range hosts {
		if hosts[i], err = newSparseHost(i, inputs[i], packer, nblocks, &cfg, sp); err != nil {
			return nil, err
		}
	}
	eg.hosts = hosts

	packets, elapsed, err := runHosts(ctx, unit, len(hosts), max(cfg.Generations, 1), func(ctx context.Context, i int, gen uint32) (int64, error) {
		return hosts[i].run(ctx, unit, pool, gen)
	})
	if err != nil {
		return nil, err
	}
	res := &SparseResult{Elapsed: elapsed, Packets: packets, Sparse: &sp.Stats, Config: scfg, HPU: unit.Stats()}
	res.QuotaInUse, res.QuotaPeak = scfg.Quota.InUse(), scfg.Quota.Peak()
	for _, h := range hosts {
		var out []byte
		for _, b := range h.out {
			out = append(out, b...)
		}
		res.Out = append(res.Out, out)
	}
	return res, nil
}

// HandlerConfig applies the harness defaults and builds the handler's
// configuration (without its quota).
func (cfg *SparseConfig) HandlerConfig(hcfg hpu.Config) (handlers.SparseConfig, error) {
	if !cfg.DType.Valid() {
		return handlers.SparseConfig{}, fmt.Errorf("sparse harness: dtype %s: %w", cfg.DType, elem.ErrUnsupported)
	}
	if cfg.Storage == wire.StorageDense {
		cfg.Storage = wire.StorageHash
	}
	if cfg.Buffers == 0 {
		cfg.Buffers = 1
	}
	if cfg.BlockElems == 0 {
		cfg.BlockElems = max(min(cfg.Elements, 4096), 1)
	}
	if cfg.HashSlots == 0 {
		cfg.HashSlots = cfg.BlockElems
	}
	if cfg.PacketPairs == 0 {
		cfg.PacketPairs = hcfg.BufferBytes / wire.PairSize(cfg.DType)
	}
	return handlers.SparseConfig{
		Job: 1, Token: 0x5eed, Children: cfg.Hosts, DType: cfg.DType, Op: cfg.Op, Storage: cfg.Storage,
		Buffers: cfg.Buffers, Elements: cfg.Elements, BlockElems: cfg.BlockElems, HashSlots: cfg.HashSlots,
		PacketPairs: cfg.PacketPairs,
	}, nil
}

// sparseHarnessEgress hands every packet of the switch's streams to every
// host. Emit copies the payload once; the hosts only read it.
type sparseHarnessEgress struct {
	hosts []*sparseHost
}

func (e *sparseHarnessEgress) Emit(h *wire.Header, payload []byte) {
	if h.Type == wire.TypeError {
		return // a waiting report (CodeWaiting): no result
	}
	if h.Type != wire.TypeSparse && h.Type != wire.TypeSpill {
		return
	}
	d := sparseDown{hdr: *h, payload: bytes.Clone(payload)}
	for _, host := range e.hosts {
		host.deliver(d)
	}
}

// sparseDown is one packet of the switch's stream as a host receives it.
type sparseDown struct {
	hdr     wire.Header
	payload []byte
}

// sparseHost is one emulated host: its vector cut into blocks, and the
// switch's packets queued for it without bound, so a core never waits on a
// host.
type sparseHost struct {
	rank    int
	cfg     *SparseConfig
	packer  proto.SparsePacker
	handler hpu.Handler
	stats   *handlers.SparseStats
	blocks  [][]byte // each block's pairs, global indices, sorted
	order   []uint32
	rng     *rand.Rand
	held    []*hpu.Packet
	asm     []proto.SparseAssembler
	state   []uint8 // per block: 0 not sent, 1 in flight, 2 merged
	out     [][]byte

	mu     sync.Mutex
	queue  []sparseDown
	notify chan struct{}
	early  []sparseDown // the next generation's packets that came before this host got there
}

func newSparseHost(rank int, in []byte, packer proto.SparsePacker, nblocks int, cfg *SparseConfig, h *handlers.Sparse) (*sparseHost, error) {
	ps := wire.PairSize(cfg.DType)
	if len(in)%ps != 0 {
		return nil, fmt.Errorf("sparse harness: input %d has %d bytes, not whole %s pairs", rank, len(in), cfg.DType)
	}
	sorted := proto.SortPairs(in, cfg.DType)
	if n := len(sorted); n > 0 && int64(binary.LittleEndian.Uint32(sorted[n-ps:])) >= int64(cfg.Elements) {
		return nil, fmt.Errorf("sparse harness: input %d has index %d, beyond %d elements", rank,
			binary.LittleEndian.Uint32(sorted[n-ps:]), cfg.Elements)
	}
	s := &sparseHost{
		rank: rank, cfg: cfg, packer: packer, handler: h, stats: &h.Stats,
		order:  proto.StaggeredOrder(nil, rank, cfg.Hosts, nblocks, cfg.Window),
		rng:    rand.New(rand.NewPCG(cfg.Seed, uint64(rank))),
		asm:    make([]proto.SparseAssembler, nblocks),
		state:  make([]uint8, nblocks),
		out:    make([][]byte, nblocks),
		notify: make(chan struct{}, 1),
	}
	for b := range nblocks {
		s.blocks = append(s.blocks, packer.BlockPairs(sorted, b))
		s.asm[b].DType = cfg.DType
	}
	return s, nil
}

func (s *sparseHost) deliver(d sparseDown) {
	s.mu.Lock()
	s.queue = append(s.queue, d)
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// run sends one generation in staggered order with a window, duplicating
// and holding back packets at random, and merges every block's stream.
// Blocks with no complete stream within the retransmission timeout are
// sent again whole (the handler drops what it already has). It returns the
// number of packets sent.
func (s *sparseHost) run(ctx context.Context, unit *hpu.HPU, pool *sync.Pool, gen uint32) (int64, error) {
	var sent int64
	for b := range s.state {
		s.state[b] = 0
		s.asm[b].Reset()
	}
	early := s.early
	s.early = nil
	if _, err := s.take(early, gen); err != nil {
		return sent, err
	}
	submit := func(p *hpu.Packet) error {
		sent++
		return unit.SubmitWait(ctx, p)
	}
	inflight, received := 0, 0
	deadline := time.Now().Add(harnessGiveUp)
	timer := time.NewTimer(harnessRTO)
	defer timer.Stop()
	wait := func() error {
		if err := s.flushHeld(submit); err != nil {
			return err
		}
		timer.Reset(harnessRTO)
		select {
		case <-s.notify:
			n, err := s.receive(gen)
			inflight -= n
			received += n
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sparse host %d: gave up after %v (generation %d, %d of %d blocks done; handler %s)",
				s.rank, harnessGiveUp, gen, received, len(s.state), s.stats.String())
		}
		for b, st := range s.state {
			if st == 1 {
				if err := s.send(pool, submit, gen, uint32(b), true); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, b := range s.order {
		for inflight >= s.cfg.Window {
			if err := wait(); err != nil {
				return sent, err
			}
		}
		s.state[b] = 1
		inflight++
		if err := s.send(pool, submit, gen, b, false); err != nil {
			return sent, err
		}
	}
	for received < len(s.state) {
		if err := wait(); err != nil {
			return sent, err
		}
	}
	return sent, nil
}

// send submits every packet of block b's stream, some twice, some held
// back to go out later in random order.
func (s *sparseHost) send(pool *sync.Pool, submit func(*hpu.Packet) error, gen, b uint32, again bool) error {
	n := s.packer.Packets(len(s.blocks[b]) / wire.PairSize(s.cfg.DType))
	for seq := range n {
		p := s.packet(pool, gen, b, seq, again)
		if s.rng.Float64() < s.cfg.Dup {
			s.held = append(s.held, s.packet(pool, gen, b, seq, true))
		}
		if s.rng.Float64() < s.cfg.Reorder {
			s.held = append(s.held, p)
			continue
		}
		if err := submit(p); err != nil {
			return err
		}
		if len(s.held) > 0 && s.rng.IntN(4) == 0 {
			if err := s.flushHeld(submit); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *sparseHost) packet(pool *sync.Pool, gen, b uint32, seq int, again bool) *hpu.Packet {
	p := pool.Get().(*hpu.Packet)
	p.Hdr = wire.Header{Version: wire.Version, Job: 1, Token: 0x5eed, Generation: gen, Child: uint16(s.rank), Op: s.cfg.Op}
	if again {
		p.Hdr.Flags = wire.FlagRetransmit
	}
	p.Payload = s.packer.Packet(p.Payload[:0], &p.Hdr, b, s.blocks[b], seq)
	p.Handler = s.handler
	return p
}

// flushHeld sends held packets in a random order.
func (s *sparseHost) flushHeld(submit func(*hpu.Packet) error) error {
	s.rng.Shuffle(len(s.held), func(i, j int) { s.held[i], s.held[j] = s.held[j], s.held[i] })
	for len(s.held) > 0 {
		p := s.held[len(s.held)-1]
		s.held = s.held[:len(s.held)-1]
		if err := submit(p); err != nil {
			return err
		}
	}
	return nil
}

// receive takes what the switch sent, in a shuffled order with some
// packets twice, and merges every block whose stream completed. It
// returns the number of blocks completed.
func (s *sparseHost) receive(gen uint32) (int, error) {
	s.mu.Lock()
	batch := s.queue
	s.queue = nil
	s.mu.Unlock()
	for _, d := range batch {
		if s.rng.Float64() < s.cfg.Dup {
			batch = append(batch, d)
		}
	}
	s.rng.Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
	return s.take(batch, gen)
}

// take adds packets of the switch's streams to their blocks and merges
// every block whose stream completed; it returns how many did. Spills of a
// block reach a host as soon as other hosts' pairs overflow the table:
// before this host has sent the block, even before it has finished the
// previous call. So a packet of the current call counts whatever the
// block's state, and one of the next call is kept for it.
func (s *sparseHost) take(batch []sparseDown, gen uint32) (int, error) {
	done := 0
	for i := range batch {
		d := &batch[i]
		b, _ := wire.SplitSparseBlock(d.hdr.Block)
		if d.hdr.Generation == gen+1 {
			s.early = append(s.early, *d)
			continue
		}
		if d.hdr.Generation != gen || int(b) >= len(s.state) || s.state[b] == 2 {
			continue // an older call's packet, or a block already merged
		}
		complete, err := s.asm[b].Add(&d.hdr, d.payload)
		if err != nil {
			return done, fmt.Errorf("sparse host %d, block %d: %w", s.rank, b, err)
		}
		if !complete {
			continue
		}
		if s.state[b] == 0 {
			return done, fmt.Errorf("sparse host %d: block %d complete before the host sent it", s.rank, b)
		}
		if s.out[b], err = s.asm[b].Merge(s.out[b][:0], s.cfg.Op, b*uint32(s.packer.BlockElems)); err != nil {
			return done, fmt.Errorf("sparse host %d, block %d: %w", s.rank, b, err)
		}
		s.state[b] = 2
		done++
	}
	return done, nil
}
