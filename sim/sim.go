package sim

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/handlers"
	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/proto"
	"github.com/flare-net/flare/wire"
)

// Defaults of a simulated allreduce.
const (
	DefaultHosts       = 8
	DefaultPacketBytes = 1024  // Flare's 1 KiB packets
	DefaultHostGbps    = 100.0 // host link rate that sets the default inter-arrival time
)

// Config describes one allreduce run in virtual time (Run): P hosts
// stream a vector each to a VirtualUnit running one job's handlers.Dense.
//
// Rounds > 1 runs that many allreduces of Bytes one after another without
// waiting for results (pipelined, as a training step's gradient buckets
// are): the switch sees one stream of Rounds·Bytes per host whose blocks
// are numbered on, so round r's block b is block r·N + b and lives on the
// cluster after round r−1's last one, and every host staggers inside each
// round, so two packets of a block are the round's N blocks apart, as in a
// single allreduce of Bytes. A message of fewer blocks than the unit has
// cores cannot keep the cores busy on its own, and the model's bandwidth
// (K/τ) and memory are those of a switch that keeps receiving such
// allreduces (SteadyRounds).
//
// Arrivals follow the paper's method (§6: "we generate packets with a
// random and exponentially distributed arrival rate"; §4: "the switch
// receives a packet every δ cycles"): by default (ArrivalsSwitch) the
// switch receives one stream of packets with exponential gaps of mean
// δ = MeanInterArrival/P from cycle 0, the hosts taking turns in rank
// order, each sending its blocks in its staggered order (proto.StaggeredOrder, as
// hostlib sends) with at most Window blocks in flight. ArrivalsHosts gives
// every host its own exponential gaps of mean MeanInterArrival instead: P
// independent random walks, which drift apart by about √k gaps after k
// sends and so undo part of the staggering (docs/MODEL.md). A packet
// reaches the unit when it is sent and a result reaches the hosts when it
// is emitted: the network adds no delay beyond the random gaps, and no
// packet is lost.
type Config struct {
	HPU              hpu.Config // the unit; BufferBytes 0 = PacketBytes
	Hosts            int        // P, the hosts (children) of the job; 0 = DefaultHosts
	Bytes            int        // vector size per host, a multiple of the dtype size
	DType            wire.DType // 0 = int32
	Op               wire.Op    // 0 = sum; built-in operators only
	Algo             wire.Algo  // AlgoAuto = the paper's choice by size (proto.Choose)
	Buffers          int        // B for AlgoMulti (0 = 2)
	Seed             uint64     // inputs and arrival times; a seed gives one result
	MeanInterArrival float64    // mean cycles between two packets of one host; 0 = PacketBytes at HostGbps
	HostGbps         float64    // host link rate for the default inter-arrival; 0 = DefaultHostGbps
	Window           int        // blocks in flight per host; 0 = every block, or as many as L1 holds
	PacketBytes      int        // payload bytes per packet; 0 = DefaultPacketBytes
	Unstaggered      bool       // every host sends blocks 0, 1, 2, … (no staggering)
	Arrivals         Arrivals   // how the hosts' packets arrive: ArrivalsSwitch (default) or ArrivalsHosts
	Rounds           int        // allreduces of Bytes run back to back, pipelined (0 = 1; SteadyRounds)
}

// Result is what a simulated allreduce measured. Its JSON names match the
// analytic model's rows (models), so the two can be joined on algo, bytes
// and hosts.
type Result struct {
	Algo                  string  `json:"algo"` // single, multi2, multi4, tree
	Bytes                 int     `json:"bytes"`
	Hosts                 int     `json:"hosts"`
	DType                 string  `json:"dtype"`
	Blocks                int     `json:"blocks"`                      // per host and round
	Rounds                int     `json:"rounds"`                      // allreduces run back to back
	Window                int     `json:"window"`                      // blocks in flight per host
	StaggerBlocks         int     `json:"stagger_blocks"`              // the blocks each host staggers over
	MeanInterArrival      float64 `json:"inter_arrival_cycles"`        // per host
	TauCycles             float64 `json:"tau_cycles"`                  // mean service time per packet, lock waiting included
	LockWaitCycles        float64 `json:"lock_wait_cycles"`            // mean lock waiting per packet (part of τ)
	BandwidthPktsPerCycle float64 `json:"bandwidth_pkts_per_cycle"`    // input packets handled per cycle in the steady state (SteadyFrom..SteadyTo)
	BandwidthGbps         float64 `json:"bandwidth_gbps"`              // the same as input payload bits per second at the clock
	LatencyCycles         float64 `json:"latency_cycles"`              // mean block latency: first packet in to result out
	MemoryBuffers         float64 `json:"memory_buffers"`              // aggregation buffers in use, time-weighted mean in the steady state
	MemoryBytes           float64 `json:"memory_bytes"`                // the same in bytes
	SteadyFrom            int64   `json:"steady_from_cycle"`           // the steady state: from the cycle the first tenth of the packets was handled
	SteadyTo              int64   `json:"steady_to_cycle"`             // to the cycle nine tenths were
	SteadyTauCycles       float64 `json:"steady_tau_cycles"`           // mean τ of the packets handled in the steady state
	MakespanGbps          float64 `json:"makespan_bandwidth_gbps"`     // all input bits over the makespan (fill and drain included)
	MakespanMemoryBytes   float64 `json:"makespan_memory_bytes"`       // buffers in use, time-weighted mean over the makespan, in bytes
	MemoryBuffersMax      int     `json:"memory_buffers_max"`          // most buffers in use at once
	QueueOccupancy        float64 `json:"queue_occupancy"`             // mean cluster-queue occupancy seen by arriving packets
	QueueOccupancyMax     int64   `json:"queue_occupancy_max"`         // the largest seen
	IngressWaitCycles     float64 `json:"ingress_wait_cycles"`         // mean wait at the ingress per packet (full queues)
	Packets               int64   `json:"packets"`                     // input packets, P × blocks
	Cycles                int64   `json:"cycles"`                      // makespan: cycle 0 to the last result
	ContendedAcquisitions int64   `json:"contended_lock_acquisitions"` // lock acquisitions that had to wait
}

// DesignName names a dense design as the model's rows do: "single",
// "multi<B>", "tree".
func DesignName(a wire.Algo, buffers int) string {
	if a == wire.AlgoMulti {
		return fmt.Sprintf("multi%d", buffers)
	}
	return a.String()
}

// withDefaults fills zero fields, the unit's with hpu's own defaults; the
// defaults of a simulation live here.
func (c Config) withDefaults() Config {
	if c.Hosts == 0 {
		c.Hosts = DefaultHosts
	}
	if c.DType == 0 {
		c.DType = wire.Int32
	}
	if c.Op == 0 {
		c.Op = wire.OpSum
	}
	if c.PacketBytes == 0 {
		c.PacketBytes = DefaultPacketBytes
	}
	if c.HPU.BufferBytes == 0 {
		c.HPU.BufferBytes = c.PacketBytes
	}
	c.HPU = c.HPU.WithDefaults()
	if c.HostGbps == 0 {
		c.HostGbps = DefaultHostGbps
	}
	if c.MeanInterArrival == 0 {
		c.MeanInterArrival = float64(c.PacketBytes) * 8 / (c.HostGbps * 1e9) * c.HPU.Cost.ClockHz
	}
	if c.Algo == wire.AlgoAuto {
		c.Algo, c.Buffers = proto.Choose(c.Bytes, false)
	}
	if c.Algo == wire.AlgoMulti && c.Buffers == 0 {
		c.Buffers = 2
	}
	if c.Rounds == 0 {
		c.Rounds = 1
	}
	return c
}

// SteadyRounds is the Rounds that give a unit of cores cores at least one
// block per core, the paper's condition for a switch without contention
// and with every core busy (§6: "one block per core"): ⌈cores/N⌉ rounds of
// N = ⌈bytes/packetBytes⌉ blocks, or 1 when bytes is not a whole number
// of packets.
func SteadyRounds(cores, bytes, packetBytes int) int {
	if bytes <= 0 || packetBytes <= 0 || bytes%packetBytes != 0 {
		return 1
	}
	n := bytes / packetBytes
	return max(1, (cores+n-1)/n)
}

func (c *Config) validate() error {
	es := c.DType.Size()
	switch {
	case c.Hosts < 1 || c.Hosts > proto.MaxChildren:
		return fmt.Errorf("sim: hosts = %d: must be in 1..%d", c.Hosts, proto.MaxChildren)
	case !c.DType.Valid():
		return fmt.Errorf("sim: dtype %s: unknown", c.DType)
	case !c.Op.Builtin() || (c.DType.IsFloat() && c.Op.BitwiseOnly()):
		return fmt.Errorf("sim: operator %s on %s: must be a built-in operator the dtype supports", c.Op, c.DType)
	case c.Bytes < es || c.Bytes%es != 0:
		return fmt.Errorf("sim: bytes = %d: must be a positive multiple of the %s size (%d)", c.Bytes, c.DType, es)
	case c.PacketBytes < es || c.PacketBytes%es != 0 || c.PacketBytes > c.HPU.BufferBytes:
		return fmt.Errorf("sim: packet bytes = %d: must be a multiple of %d and at most the %d-byte buffer",
			c.PacketBytes, es, c.HPU.BufferBytes)
	case !(c.MeanInterArrival > 0) || math.IsInf(c.MeanInterArrival, 0):
		return fmt.Errorf("sim: mean inter-arrival = %g cycles: must be > 0", c.MeanInterArrival)
	case c.Window < 0:
		return fmt.Errorf("sim: window = %d blocks: must be >= 0 (0 = every block)", c.Window)
	case c.Rounds < 0:
		return fmt.Errorf("sim: rounds = %d: must be >= 0 (0 = 1)", c.Rounds)
	case c.Rounds > 1 && c.Bytes%c.PacketBytes != 0:
		return fmt.Errorf("sim: rounds = %d with %d bytes: back-to-back rounds need whole %d-byte packets", c.Rounds, c.Bytes, c.PacketBytes)
	}
	return nil
}

// buffersFor is the quota a window of w blocks per host needs so that no
// packet ever finds the memory exhausted: every open block is in some host's
// window, so at most min(n, w·P) are open; single holds one buffer per open
// block, multi B, and tree one per packet received and not yet folded, at
// most the P·min(n, w) packets in flight.
func buffersFor(algo wire.Algo, b, p, n, w int) int {
	switch algo {
	case wire.AlgoMulti:
		return min(n, w*p) * b
	case wire.AlgoTree:
		return min(n, w) * p
	}
	return min(n, w*p)
}

// Run simulates one allreduce in virtual time on a VirtualUnit with the real
// Dense handler, checks every host's result against elem.Reference (an error if
// any element differs beyond the float rounding elem.Check allows, or a block is
// missing or emitted twice), and reports what the unit measured. A seed
// gives the same result on every run.
func Run(cfg Config) (Result, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return Result{}, err
	}
	s, err := newSim(&cfg)
	if err != nil {
		return Result{}, err
	}
	defer s.close()
	if err := s.run(); err != nil {
		return Result{}, err
	}
	if err := s.check(); err != nil {
		return Result{}, err
	}
	return s.result(), nil
}

// sim is one call of Run: the unit, the job's handler, the hosts and the
// egress that delivers results to them.
type sim struct {
	cfg      *Config
	unit     *hpu.VirtualUnit
	dense    *handlers.Dense
	esize    int
	pe       int // elements per packet
	nblocks  int // in all rounds
	perRound int // N, the blocks of one round
	window   int
	group    int // the blocks each host staggers over
	inputs   [][]byte
	out      []byte
	firstIn  []int64 // cycle the first packet of each block arrived, -1 before
	emitted  []int64 // cycle each block's result left, -1 before
	hosts    []*simHost
	feed     *simFeed // the switch's arrival stream (ArrivalsSwitch), or nil
	free     []*hpu.Packet
	problems []string // egress misbehaviour, reported after the run

	handled int64                             // packets whose handler has returned
	steady  [2]int64                          // packets handled at the start and the end of the steady state
	marks   [2]struct{ at, area, busy int64 } // cycle, BufferCycles and BusyCycles there
}

func newSim(cfg *Config) (*sim, error) {
	s := &sim{cfg: cfg, esize: cfg.DType.Size()}
	s.pe = cfg.PacketBytes / s.esize
	elems := cfg.Bytes / s.esize
	s.perRound = (elems + s.pe - 1) / s.pe
	elems *= cfg.Rounds
	s.nblocks = s.perRound * cfg.Rounds
	packets := int64(cfg.Hosts) * int64(s.nblocks)
	s.steady = [2]int64{max(1, packets/steadyTrim), packets - packets/steadyTrim}
	unit, err := hpu.NewVirtual(cfg.HPU, s, s.handledOne)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	s.unit = unit
	if err := s.setup(elems); err != nil {
		unit.Close()
		return nil, err
	}
	return s, nil
}

// steadyTrim: the steady state leaves out the first and the last
// 1/steadyTrim of the packets handled (the fill and the drain of a run).
const steadyTrim = 10

// handledOne takes back a packet whose handler has returned and marks the
// cycle and the buffer-cycles at the ends of the steady state.
func (s *sim) handledOne(p *hpu.Packet, _ int) {
	s.free = append(s.free, p)
	s.handled++
	for i, n := range s.steady {
		if s.handled == n {
			s.marks[i].at, s.marks[i].area, s.marks[i].busy = s.unit.Now(), s.unit.BufferCycles(), s.unit.BusyCycles()
		}
	}
}

// setup sizes the window and the quota, builds the handler, the inputs and
// the hosts.
func (s *sim) setup(elems int) error {
	cfg := s.cfg
	p, n := cfg.Hosts, s.nblocks
	s.window = cfg.Window
	if s.window == 0 || s.window > n {
		s.window = n
	}
	total := s.unit.Memory().Total()
	need := buffersFor(cfg.Algo, cfg.Buffers, p, n, s.window)
	if need > total && cfg.Window == 0 {
		// The largest window whose blocks fit in L1 (need grows with it).
		lo, hi := 1, s.window
		for lo < hi {
			mid := (lo + hi + 1) / 2
			if buffersFor(cfg.Algo, cfg.Buffers, p, n, mid) <= total {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		s.window = lo
		need = buffersFor(cfg.Algo, cfg.Buffers, p, n, lo)
	}
	dcfg := handlers.DenseConfig{
		Job: 1, Token: 0x5eed, Algo: cfg.Algo, Buffers: cfg.Buffers, Children: p,
		DType: cfg.DType, Op: cfg.Op, Elements: elems, PacketElems: s.pe,
	}
	need = max(need, dcfg.MinBuffers())
	q, err := s.unit.Memory().Reserve(need)
	if err != nil {
		return fmt.Errorf("sim: %s with %d hosts and a window of %d blocks: %w (a smaller Window or more L1 helps)",
			DesignName(cfg.Algo, cfg.Buffers), p, s.window, err)
	}
	dcfg.Quota = q
	if s.dense, err = handlers.NewDense(dcfg); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	s.inputs = simInputs(rand.New(rand.NewPCG(cfg.Seed, 0x1a7a)), cfg.DType, cfg.Op, p, elems*s.esize)
	s.out = make([]byte, elems*s.esize)
	s.group = min(s.perRound, s.window)
	s.firstIn = make([]int64, n)
	s.emitted = make([]int64, n)
	for i := range n {
		s.firstIn[i], s.emitted[i] = -1, -1
	}
	for rank := range p {
		h := &simHost{s: s, rank: rank, rng: rand.New(rand.NewPCG(cfg.Seed, uint64(rank)+1))}
		if cfg.Unstaggered {
			for b := range n {
				h.order = append(h.order, uint32(b))
			}
		} else {
			h.order = proto.StaggeredOrder(make([]uint32, 0, n), rank, p, n, s.group)
		}
		h.wakeFn = h.wake
		s.hosts = append(s.hosts, h)
	}
	return nil
}

func (s *sim) close() {
	s.unit.Close()
	s.dense.Close()
	s.dense.Config().Quota.Release()
}

// run starts every host at its first random gap after cycle 0 and runs the
// unit until the last result.
func (s *sim) run() error {
	if s.cfg.Arrivals == ArrivalsSwitch {
		f := &simFeed{s: s, rng: rand.New(rand.NewPCG(s.cfg.Seed, 0xfeed))}
		f.wakeFn = f.wake
		f.plan = f.gap()
		s.feed = f
		if err := s.unit.At(int64(f.plan), f.wakeFn); err != nil {
			return err
		}
	}
	for _, h := range s.hosts {
		if s.feed != nil {
			break
		}
		h.plan = h.gap()
		if err := s.unit.At(int64(h.plan), h.wakeFn); err != nil {
			return err
		}
	}
	if err := s.unit.Run(); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	return nil
}

// check holds a finished run to what a correct switch does: nothing
// unexpected emitted, no packet refused, every block completed, and the
// result the reference's.
func (s *sim) check() error {
	if len(s.problems) > 0 {
		return fmt.Errorf("sim: %s: %s", DesignName(s.cfg.Algo, s.cfg.Buffers), s.problems[0])
	}
	st := &s.dense.Stats
	if d, nb, inv := st.Duplicate.Load(), st.NoBuffer.Load(), st.Invalid.Load(); d+nb+inv != 0 {
		return fmt.Errorf("sim: the handler refused packets (duplicate %d, no buffer %d, invalid %d): %s", d, nb, inv, st.String())
	}
	for b, at := range s.emitted {
		if at < 0 {
			return fmt.Errorf("sim: block %d of %d never completed: %s", b, s.nblocks, st.String())
		}
	}
	if err := elem.Check(s.cfg.DType, s.cfg.Op, s.inputs, s.out); err != nil {
		return fmt.Errorf("sim: %s %s %s on %d hosts, %d bytes x %d rounds: result differs from the reference: %w",
			DesignName(s.cfg.Algo, s.cfg.Buffers), s.cfg.DType, s.cfg.Op, s.cfg.Hosts, s.cfg.Bytes, s.cfg.Rounds, err)
	}
	return nil
}

// result turns the unit's statistics into a row.
func (s *sim) result() Result {
	cfg := s.cfg
	st := s.unit.Stats()
	tot := st.Total()
	packets := int64(cfg.Hosts) * int64(s.nblocks)
	r := Result{
		Algo: DesignName(cfg.Algo, cfg.Buffers), Bytes: cfg.Bytes, Hosts: cfg.Hosts, DType: cfg.DType.String(),
		Blocks: s.perRound, Rounds: cfg.Rounds, Window: s.window, StaggerBlocks: s.group,
		MeanInterArrival: cfg.MeanInterArrival,
		TauCycles:        st.TauCycles(), MemoryBuffers: st.BuffersMean, MemoryBuffersMax: st.BuffersMax,
		MemoryBytes:    st.BuffersMean * float64(cfg.HPU.BufferBytes),
		QueueOccupancy: st.QueueMean(), QueueOccupancyMax: st.QueueMax,
		Packets: packets, Cycles: st.Now, ContendedAcquisitions: tot.Contended,
	}
	if n := tot.Packets + tot.Rejected; n > 0 {
		r.LockWaitCycles = float64(tot.LockWaitCycles) / float64(n)
	}
	if st.Arrivals > 0 {
		r.IngressWaitCycles = float64(st.IngressWaitCycles) / float64(st.Arrivals)
	}
	gbps := func(pktsPerCycle float64) float64 {
		return pktsPerCycle * float64(cfg.Bytes) / float64(s.perRound) * 8 * cfg.HPU.Cost.ClockHz / 1e9
	}
	if st.Now > 0 {
		r.MakespanGbps = gbps(float64(packets) / float64(st.Now))
		r.MakespanMemoryBytes = r.MemoryBytes
	}
	// The steady state: the model's 𝓑 and 𝓡 are rates and means of a
	// switch that keeps receiving packets (§4), so the run's are measured
	// between the cycles the first and the last tenth of the packets were
	// handled, leaving out the fill and the drain (docs/MODEL.md, "Model vs
	// simulation"). A run too short to have one keeps the makespan's.
	r.BandwidthPktsPerCycle, r.BandwidthGbps = float64(packets)/float64(max(1, st.Now)), r.MakespanGbps
	r.SteadyFrom, r.SteadyTo, r.SteadyTauCycles = 0, st.Now, r.TauCycles
	if a, b := s.marks[0], s.marks[1]; b.at > a.at && s.steady[1] > s.steady[0] {
		r.SteadyFrom, r.SteadyTo = a.at, b.at
		r.BandwidthPktsPerCycle = float64(s.steady[1]-s.steady[0]) / float64(b.at-a.at)
		r.BandwidthGbps = gbps(r.BandwidthPktsPerCycle)
		r.MemoryBuffers = float64(b.area-a.area) / float64(b.at-a.at)
		r.MemoryBytes = r.MemoryBuffers * float64(cfg.HPU.BufferBytes)
		r.SteadyTauCycles = float64(b.busy-a.busy) / float64(s.steady[1]-s.steady[0])
	}
	var lat int64
	for b, at := range s.emitted {
		lat += at - s.firstIn[b]
	}
	r.LatencyCycles = float64(lat) / float64(s.nblocks)
	return r
}

// simInputs draws each host's vector: random bits for integers; for floats
// values in [-1, 1) (near 1 for products, so P factors neither overflow nor
// vanish).
func simInputs(r *rand.Rand, dt wire.DType, op wire.Op, hosts, n int) [][]byte {
	es := dt.Size()
	in := make([][]byte, hosts)
	for h := range in {
		b := make([]byte, n)
		for i := 0; i+es <= n; i += es {
			switch {
			case !dt.IsFloat():
				elem.StoreInt(dt, b[i:], int64(r.Uint64()))
			case op == wire.OpProd:
				elem.StoreFloat(dt, b[i:], 0.75+r.Float64()/2)
			default:
				elem.StoreFloat(dt, b[i:], r.Float64()*2-1)
			}
		}
		in[h] = b
	}
	return in
}

// Arrivals is the arrival process of a simulated allreduce.
type Arrivals uint8

const (
	// ArrivalsSwitch: the switch receives one stream of packets with
	// exponential gaps of mean δ = MeanInterArrival/P, the hosts taking
	// turns in rank order.
	ArrivalsSwitch Arrivals = iota
	// ArrivalsHosts: every host sends with its own exponential gaps of mean
	// MeanInterArrival, independently of the others.
	ArrivalsHosts
)
