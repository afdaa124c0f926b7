package models

import (
	"fmt"
	"math"

	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/proto"
	"github.com/flare-net/flare/wire"
)

// Reading selects how the single-buffer contention formula of the Flare
// paper (§6, "single buffer") is read. The paper prints
//
//	τ = Σ_{i=1..C} iL / C = L(C−1)/2
//
// but the sum is L(C+1)/2. The two sides are two different quantities, so
// the model offers both and says which it uses (docs/MODEL.md).
type Reading uint8

const (
	// ReadService (the default) evaluates the sum: the i-th of n handlers
	// that contend for one buffer runs i·L cycles (its own L plus (i−1)·L
	// spinning), so the mean service time is τ = L(n+1)/2. This is what a
	// core is busy for, what K/τ needs, and what the emulator measures
	// (hpu.Stats.TauCycles counts spin cycles).
	ReadService Reading = iota
	// ReadWaitingOnly takes the printed closed form L(n−1)/2, which is the
	// mean time spent waiting, as τ, floored at the handler's own work
	// because the paper also states L ≤ τ. It is the optimistic reading:
	// τ = L for up to three contenders and 3.5·L instead of 4.5·L for eight.
	ReadWaitingOnly
)

var readingNames = [...]string{"service", "waiting-only"}

// String returns "service" or "waiting-only".
func (r Reading) String() string {
	if int(r) < len(readingNames) {
		return readingNames[r]
	}
	return fmt.Sprintf("reading(%d)", uint8(r))
}

// ParseReading parses a name as printed by String.
func ParseReading(s string) (Reading, error) {
	for i, n := range readingNames {
		if n == s {
			return Reading(i), nil
		}
	}
	return 0, fmt.Errorf("models: unknown contention reading %q (allowed: service, waiting-only)", s)
}

// Params are the inputs of the analytic model: the switch (clusters × cores,
// the core subset S, clock, cycle costs), the job (hosts P, bytes Z, dtype)
// and the arrival process (δ, δc). Zero values of the derived fields
// (CyclesPerPacket, DMACycles, InterArrival, SameBlockInterArrival,
// SparseHashSlots) mean "derive"; everything else must be set, as Preset
// does. Validate names the first field out of range.
type Params struct {
	Clusters        int        // shared-nothing clusters; K = Clusters × CoresPerCluster
	CoresPerCluster int        // C, cores per cluster
	SubsetS         int        // S, cores of a cluster that may run packets of one block (1..C)
	ClockHz         float64    // core clock; 1e9 for PsPIN
	PacketBytes     int        // payload bytes of one packet = one block of one host = one buffer
	DType           wire.DType // element type

	// CyclesPerPacket is L, the cycles one handler needs to fold one packet
	// into a buffer (§6: "L = 1024 cycles" for a 1 KiB int32 packet).
	// 0 derives it from hpu.PsPINCost: ElemCycles[DType] × elements per
	// packet. See PacketCycles.
	CyclesPerPacket float64
	// DMACycles is the cost of copying one packet between the packet buffer
	// and L1 (§6, tree: "64 cycles instead of the 1024 cycles needed for the
	// aggregation"). 0 derives it from hpu.PsPINCost (64 cycles per KiB).
	DMACycles float64

	Hosts int   // P, hosts (children) whose packets one block aggregates
	Bytes int64 // Z, bytes each host contributes

	// HostGbps is each host's line rate; it sets InterArrival when that is 0.
	HostGbps float64
	// InterArrival is δ: cycles between two packets arriving at the switch,
	// all hosts together (§4: "the switch receives a packet every δ
	// cycles"). 0 derives it from the hosts' line rate:
	// δ = PacketBytes·8 / (P·HostGbps) seconds × ClockHz.
	InterArrival float64
	// SameBlockInterArrival is δc, cycles between two packets of the same
	// block (§6). 0 derives it from the arrival process: with Staggered,
	// δc = G·δe (G blocks per stagger group, δe the effective inter-arrival,
	// see Evaluate); without, δc = δe. A positive value is used as is.
	SameBlockInterArrival float64
	// Staggered is staggered sending (§5): host i starts at block i·G/P of
	// its group so packets of a block arrive spread in time.
	Staggered bool
	// Window is the hosts' stagger group in blocks (proto.StaggeredOrder:
	// the in-flight window W). 0 staggers over the whole vector, as the
	// paper's model does.
	Window int

	// Buffers is B for a multi-buffer Design that leaves its own Buffers 0.
	Buffers int
	// QueueDepth bounds a cluster's input buffers in packets, queued plus
	// running (PsPIN: 20 = 12 waiting + 8 running). A saturated switch sits
	// at this bound.
	QueueDepth int
	// L1Bytes is each cluster's L1 memory; aggregation buffers live there.
	L1Bytes int

	// Reading selects how the single-buffer contention formula is read.
	Reading Reading
	// CountCopies charges the DMA copies the handlers do (a block's first
	// packet into a buffer, every tree leaf, the result out) at DMACycles
	// each. Off, the model is the paper's, which treats copies as free
	// ("we assume that the cost of copying the data is negligible", §6).
	CountCopies bool
	// TreeArrivalOrder takes the tree's M from the order in which staggered
	// hosts deliver a block's packets (a contiguous range of children) and
	// the subset of S cores that serves them (treeBufferCycles) instead of
	// the paper's (P−1)/log2 P, which depends on neither. Off, the model is
	// the paper's.
	TreeArrivalOrder bool

	// SparsePairsPerBlock is how many (index, value) pairs one host sends
	// for one sparse block (§7). 1536 makes a 1%-dense float32 block span
	// 600 KiB, the paper's example.
	SparsePairsPerBlock int
	// SparseBlockElems, when > 0, fixes the index range of a sparse block
	// instead (as handlers.SparseConfig.BlockElems does): each host then
	// sends density × SparseBlockElems pairs per block.
	SparseBlockElems int
	// SparseHashSlots is the hash table size per sparse block; 0 means
	// twice SparsePairsPerBlock.
	SparseHashSlots int
}

// Limits checked by Validate. They keep a typo from asking for nonsense;
// they are not hardware limits.
const (
	MaxClusters        = hpu.MaxClusters
	MaxCoresPerCluster = hpu.MaxCoresPerCluster
	MinPacketBytes     = 64
	MaxPacketBytes     = 64 << 10
	MaxHosts           = proto.MaxChildren
	MaxBytes           = int64(1) << 40
	MaxClockHz         = 1e12
	MaxQueueDepth      = hpu.MaxQueueDepth
)

// Preset names.
const (
	PresetPsPIN = "pspin"
	PresetFlare = "flare"
)

// Presets lists the preset names Preset accepts.
func Presets() []string { return []string{PresetPsPIN, PresetFlare} }

// Preset returns a named parameter set, with every derived field filled in.
//
//   - "pspin": one PsPIN unit as simulated by its authors: 4 clusters × 8
//     cores at 1 GHz, 1 MiB L1 per cluster, queues of 20, 1 KiB int32
//     packets (L = 1024, DMA 64), 8 hosts at 100 Gbit/s.
//   - "flare": the switch of the paper's evaluation. §6 says staggered
//     sending removes contention only "if the data to be reduced is large
//     enough to have, at any time, one block per core" and that "for our
//     switch" that is above 512 KiB. With 1 KiB blocks that is 512 blocks,
//     so K = 512 cores = 64 clusters × 8 (16 PsPIN units; the paper scales
//     PsPIN's 4 clusters linearly, §6 evaluation). Its compute bound
//     K·8192 bit / L = 4.1 Tbit/s is above SHARP's 3.2 Tbit/s, as the
//     paper reports. 64 hosts at 100 Gbit/s (one 64-port switch, the scale
//     of the paper's Figure 15) offer 6.4 Tbit/s, so the switch, not the
//     links, is the bottleneck.
//
// Both use S = C, staggered sending over the whole vector, the service
// reading, copies free (the paper's model), B = 2 for a bare "multi" and
// Z = 1 MiB.
func Preset(name string) (Params, error) {
	p := Params{
		Clusters: hpu.DefaultClusters, CoresPerCluster: hpu.DefaultCoresPerCluster, SubsetS: hpu.DefaultCoresPerCluster,
		ClockHz: 1e9, PacketBytes: 1024, DType: wire.Int32,
		Hosts: 8, Bytes: 1 << 20, HostGbps: 100, Staggered: true,
		Buffers: 2, QueueDepth: hpu.DefaultQueueDepth, L1Bytes: hpu.DefaultL1Bytes,
		Reading: ReadService, SparsePairsPerBlock: 1536,
	}
	switch name {
	case PresetPsPIN:
	case PresetFlare:
		p.Clusters = 64
		p.Hosts = 64
	default:
		return Params{}, fmt.Errorf("models: unknown preset %q (allowed: pspin, flare)", name)
	}
	return p.Resolve(), nil
}

// Resolve returns p with every derived field that is 0 filled in. It never
// fails; Validate the result.
func (p Params) Resolve() Params {
	if p.CyclesPerPacket == 0 {
		p.CyclesPerPacket = derivedPacketCycles(p.DType, p.PacketBytes)
	}
	if p.DMACycles == 0 && p.PacketBytes > 0 {
		p.DMACycles = float64(hpu.PsPINCost().DMAPerKiB) * float64(p.PacketBytes) / 1024
	}
	if p.InterArrival == 0 && p.Hosts > 0 && p.HostGbps > 0 {
		p.InterArrival = float64(p.PacketBytes) * 8 / (float64(p.Hosts) * p.HostGbps * 1e9) * p.ClockHz
	}
	if p.SparseHashSlots == 0 {
		p.SparseHashSlots = 2 * p.SparsePairsPerBlock
	}
	return p
}

// derivedPacketCycles is L from the PsPIN cost model: cycles per element
// times elements per packet. Every type up to 32 bits costs one cycle per
// byte (4 per int32/float32 element; packed-SIMD lanes do two int16 or four
// int8 in the same sequence), 64-bit types two 32-bit sequences per element,
// bfloat16 and float16 (widened to float32) four cycles per element. So
// L = 1024 cycles per 1 KiB packet for every type except the 16-bit floats
// (2048), and the
// elements aggregated per second scale with 4/size (Figure 11, right).
func derivedPacketCycles(d wire.DType, packetBytes int) float64 {
	if !d.Valid() || packetBytes <= 0 {
		return 0
	}
	cost := hpu.PsPINCost()
	return float64(cost.ElemCycles[d]) * float64(packetBytes/d.Size())
}

// Cores is K, the number of cores of the switch.
func (p Params) Cores() int { return p.Clusters * p.CoresPerCluster }

// PacketCycles is L for p: CyclesPerPacket, or the derived value if 0.
func (p Params) PacketCycles() float64 { return p.Resolve().CyclesPerPacket }

// Delta is δ for p: InterArrival, or the value derived from the line rate.
func (p Params) Delta() float64 { return p.Resolve().InterArrival }

// Blocks is the number of blocks of one allreduce: packets per host,
// ⌈Z / PacketBytes⌉.
func (p Params) Blocks() int64 {
	if p.PacketBytes <= 0 {
		return 0
	}
	return (p.Bytes + int64(p.PacketBytes) - 1) / int64(p.PacketBytes)
}

// ElementsPerPacket is how many elements of DType one packet carries.
func (p Params) ElementsPerPacket() int {
	if !p.DType.Valid() {
		return 0
	}
	return p.PacketBytes / p.DType.Size()
}

// Validate reports the first field out of range, naming it and the allowed
// range. It checks p as Resolve leaves it, so derived fields may be 0.
func (p Params) Validate() error {
	q := p.Resolve()
	bad := func(field string, v any, rng string) error {
		return fmt.Errorf("models: Params.%s = %v: must be %s", field, v, rng)
	}
	switch {
	case p.Clusters < 1 || p.Clusters > MaxClusters:
		return bad("Clusters", p.Clusters, fmt.Sprintf("in 1..%d", MaxClusters))
	case p.CoresPerCluster < 1 || p.CoresPerCluster > MaxCoresPerCluster:
		return bad("CoresPerCluster", p.CoresPerCluster, fmt.Sprintf("in 1..%d", MaxCoresPerCluster))
	case p.SubsetS < 1 || p.SubsetS > p.CoresPerCluster:
		return bad("SubsetS", p.SubsetS, fmt.Sprintf("in 1..%d (CoresPerCluster)", p.CoresPerCluster))
	case !(p.ClockHz > 0 && p.ClockHz <= MaxClockHz):
		return bad("ClockHz", p.ClockHz, fmt.Sprintf("in (0, %g]", MaxClockHz))
	case !p.DType.Valid():
		return bad("DType", p.DType, "one of int8, int16, int32, int64, float32, float64, bfloat16, float16")
	case p.PacketBytes < MinPacketBytes || p.PacketBytes > MaxPacketBytes || p.PacketBytes%p.DType.Size() != 0:
		return bad("PacketBytes", p.PacketBytes, fmt.Sprintf("a multiple of %d (the %s size) in %d..%d", p.DType.Size(), p.DType, MinPacketBytes, MaxPacketBytes))
	case !(p.CyclesPerPacket >= 0) || math.IsInf(p.CyclesPerPacket, 0):
		return bad("CyclesPerPacket", p.CyclesPerPacket, ">= 0 (0 derives L from the PsPIN cost model)")
	case !(p.DMACycles >= 0) || math.IsInf(p.DMACycles, 0):
		return bad("DMACycles", p.DMACycles, ">= 0 (0 derives it: 64 cycles per KiB)")
	case p.Hosts < 2 || p.Hosts > MaxHosts:
		return bad("Hosts", p.Hosts, fmt.Sprintf("in 2..%d", MaxHosts))
	case p.Bytes < 1 || p.Bytes > MaxBytes:
		return bad("Bytes", p.Bytes, fmt.Sprintf("in 1..%d", MaxBytes))
	case !(p.InterArrival >= 0) || math.IsInf(p.InterArrival, 0):
		return bad("InterArrival", p.InterArrival, ">= 0 cycles (0 derives δ from HostGbps)")
	case p.InterArrival == 0 && !(p.HostGbps > 0 && p.HostGbps < math.Inf(1)):
		return bad("HostGbps", p.HostGbps, "> 0 when InterArrival is 0")
	case !(p.SameBlockInterArrival >= 0) || math.IsInf(p.SameBlockInterArrival, 0):
		return bad("SameBlockInterArrival", p.SameBlockInterArrival, ">= 0 cycles (0 derives δc)")
	case p.Window < 0:
		return bad("Window", p.Window, ">= 0 blocks (0 = the whole vector)")
	case p.Buffers < 2 || p.Buffers > proto.MaxBuffers:
		return bad("Buffers", p.Buffers, fmt.Sprintf("in 2..%d", proto.MaxBuffers))
	case p.QueueDepth < p.CoresPerCluster || p.QueueDepth > MaxQueueDepth:
		return bad("QueueDepth", p.QueueDepth, fmt.Sprintf("in %d (CoresPerCluster)..%d", p.CoresPerCluster, MaxQueueDepth))
	case p.L1Bytes < p.PacketBytes || p.L1Bytes > hpu.MaxL1Bytes:
		return bad("L1Bytes", p.L1Bytes, fmt.Sprintf("in %d (PacketBytes)..%d", p.PacketBytes, hpu.MaxL1Bytes))
	case int(p.Reading) >= len(readingNames):
		return bad("Reading", p.Reading, "service or waiting-only")
	case p.SparsePairsPerBlock < 1:
		return bad("SparsePairsPerBlock", p.SparsePairsPerBlock, ">= 1")
	case p.SparseBlockElems < 0:
		return bad("SparseBlockElems", p.SparseBlockElems, ">= 0 (0: blocks of SparsePairsPerBlock pairs)")
	case p.SparseHashSlots < 0:
		return bad("SparseHashSlots", p.SparseHashSlots, ">= 0 (0 = twice SparsePairsPerBlock)")
	case !(q.CyclesPerPacket > 0):
		return bad("CyclesPerPacket", p.CyclesPerPacket, "> 0 once derived")
	}
	return nil
}
