package models

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/wire"
)

// Sparse storage names (wire.StorageHash, wire.StorageArray).
const (
	StorageHash  = "hash"
	StorageArray = "array"
)

// SparseRow is the sparse model's answer for one storage and density (§7
// of the Flare paper, Figures 13 and 14). Counts are per block unless the
// name says otherwise.
type SparseRow struct {
	Storage          string  `json:"storage"`
	Density          float64 `json:"density"` // non-zero fraction of each host's vector
	Hosts            int     `json:"hosts"`
	PairsPerPacket   int     `json:"pairs_per_packet"`
	PacketsPerBlock  int     `json:"packets_per_block"`   // per host
	SpanElements     float64 `json:"block_span_elements"` // index range one block covers: pairs / density
	UnionPairs       float64 `json:"union_pairs"`         // distinct indices of a block over all hosts
	CyclesPerElement float64 `json:"cycles_per_element"`  // per (index, value) pair folded
	CyclesPerPacket  float64 `json:"cycles_per_packet"`   // a full packet, without the flush
	FlushCycles      float64 `json:"flush_cycles"`        // once per block, by its last handler
	SpillCycles      float64 `json:"spill_cycles"`        // per block: DMA of the full spill buffers
	Tau              float64 `json:"tau_cycles"`          // per packet, the flush amortised
	Bandwidth        float64 `json:"bandwidth_pkts_per_cycle"`
	Gbps             float64 `json:"bandwidth_gbps"`
	ElementsPerS     float64 `json:"elements_per_s"`     // pairs folded per second
	BlockMemoryBytes float64 `json:"memory_block_bytes"` // L1 one open block holds
	ConcurrentBlocks int     `json:"concurrent_blocks"`  // K: one block per core (§6)
	MemoryBytes      float64 `json:"memory_bytes"`       // ConcurrentBlocks × BlockMemoryBytes
	Fits             bool    `json:"fits"`               // MemoryBytes ≤ the switch's L1
	SpillPairs       float64 `json:"spill_pairs"`        // pairs sent unaggregated through the spill buffer
	TrafficRatio     float64 `json:"spill_traffic_ratio"`
	Err              string  `json:"error,omitempty"`
}

// Per-pair instruction counts over the dense element cost e (4 cycles for
// types up to 32 bits: two loads, the operation, a store; 8 for 64-bit).
// Sparse pairs scatter, so the packed-SIMD lanes of the dense path do not
// apply. These are our estimates of a RISC-V handler, not numbers from the
// paper (whose Figure 13 values the text does not give):
//
//	array: index load, address, bounds check, presence-bit load/or/store      e + 6
//	hash:  index load, multiply-shift hash (2), key load, compare-and-branch
//	       (2), key store on insert, value address, probe bookkeeping         e + 8
//
// Both exceed the dense 1 KiB cost per packet (§7: "a lower bandwidth for
// the sparse allreduce compared to the dense one") and the hash costs more
// than the array ("storing the data as a contiguous array increases the
// bandwidth").
const (
	arrayPairExtra = 6
	hashPairExtra  = 8
	scanCycles     = 2 // load and test one bitmap word or hash slot
	emitCycles     = 4 // find the slot, load it, store index and value into the packet
)

// SparseDensities are the densities the sparse tables sweep: 0.1% and 1%
// (top-k gradients, §7) up to 20% (graph algorithms).
func SparseDensities() []float64 {
	return []float64{0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2}
}

// SparseEvaluate models one sparse block with "hash" or "array" storage at
// a density (0 < density ≤ 1). Each host sends p.SparsePairsPerBlock
// (index, value) pairs of p.DType per block, so a block spans
// pairs/density indices (with p.SparseBlockElems set, the span is fixed
// and the pairs are density × span); indices of different hosts are
// independent, so a block's union over P hosts is
// span·(1 − (1 − density)^P).
//
//   - Array storage keeps a value per index of the span and a presence
//     bitmap (a zero value is a legal sum, not an empty slot). Memory per
//     block grows as 1/density, and so does the flush, which scans the
//     bitmap, emits the union and clears the array by DMA (§7: "for lower
//     density the array storage requires storing a larger array, thus
//     increasing the number of cycles needed to flush it"). No spill.
//   - Hash storage keeps p.SparseHashSlots (index, value) slots, so its
//     memory and per-packet cost do not depend on density (§7). A pair
//     whose slot holds another index goes to the spill buffer and is sent
//     unaggregated. With u distinct indices hashed into H slots, H(1−e^(−u/H))
//     of them own a slot; every pair of the others spills, and each index
//     appears P·pairs/u times on average, so the switch sends
//     owned + (u − owned)·P·pairs/u pairs instead of u: the spill traffic
//     ratio. It is 1 at low density, where indices rarely repeat, and grows
//     with density (§7: "for 20% data density, spilling doubles the network
//     traffic").
//
// τ is the block's cycles over its packets: P·pairs folds, the flush and
// one DMA per packet the switch sends (result and spill). Concurrent blocks are K, one per core, the
// staggering rule of §6; the row says whether they fit the switch's L1
// (§7: the 1% array "requires a 600KiB array for each block ... and all
// the concurrently processed blocks do not fit in Flare memory").
func SparseEvaluate(p Params, storage string, density float64) SparseRow {
	p = p.Resolve()
	row := SparseRow{Storage: storage, Density: density, Hosts: p.Hosts}
	if storage != StorageHash && storage != StorageArray {
		row.Err = fmt.Sprintf("models: unknown sparse storage %q (allowed: hash, array)", storage)
		return row
	}
	if !(density > 0 && density <= 1) {
		row.Err = fmt.Sprintf("models: density %g: must be in (0, 1]", density)
		return row
	}
	if err := p.Validate(); err != nil {
		row.Err = err.Error()
		return row
	}
	b := newSparseBlock(p, density)
	row.PairsPerPacket, row.PacketsPerBlock, row.SpanElements, row.UnionPairs = b.ppp, b.pkts, b.span, b.union
	if storage == StorageArray {
		b.array(&row)
	} else {
		b.hash(&row)
	}
	row.CyclesPerPacket = row.CyclesPerElement * float64(b.ppp)
	blockCycles := b.hosts*b.pairs*row.CyclesPerElement + row.FlushCycles + row.SpillCycles
	row.Tau = blockCycles / (b.hosts * float64(b.pkts))

	row.Bandwidth = float64(p.Cores()) / row.Tau
	if p.InterArrival > 0 {
		row.Bandwidth = math.Min(row.Bandwidth, 1/p.InterArrival)
	}
	pairsPerPacket := b.pairs / float64(b.pkts)
	row.Gbps = row.Bandwidth * pairsPerPacket * float64(b.pairBytes) * 8 * p.ClockHz / 1e9
	row.ElementsPerS = row.Bandwidth * pairsPerPacket * p.ClockHz
	row.ConcurrentBlocks = p.Cores()
	row.MemoryBytes = float64(row.ConcurrentBlocks) * row.BlockMemoryBytes
	row.Fits = row.MemoryBytes <= float64(p.Clusters)*float64(p.L1Bytes)
	return row
}

// sparseBlock is the shape of one sparse block and the costs both storages
// share.
type sparseBlock struct {
	p          Params
	hosts      float64 // P
	pairs      float64 // pairs one host sends for the block
	span       float64 // indices the block covers
	union      float64 // distinct indices over all hosts
	ppp, pkts  int     // pairs per full packet, packets per host
	esize      int
	pairBytes  int
	elem       float64 // dense cycles per element, without vector lanes
	dmaPerByte float64
}

func newSparseBlock(p Params, density float64) sparseBlock {
	b := sparseBlock{p: p, hosts: float64(p.Hosts), pairs: float64(p.SparsePairsPerBlock),
		esize: p.DType.Size(), pairBytes: wire.PairSize(p.DType)}
	b.span = b.pairs / density
	if p.SparseBlockElems > 0 {
		b.span = float64(p.SparseBlockElems)
		b.pairs = math.Max(1, math.Round(density*b.span))
	}
	b.ppp = p.PacketBytes / b.pairBytes
	b.pkts = int(math.Ceil(b.pairs / float64(b.ppp)))
	b.union = b.span * (1 - math.Pow(1-density, b.hosts))
	cost := hpu.PsPINCost()
	b.elem = float64(cost.ElemCycles[wire.Int32])
	if b.esize == 8 {
		b.elem = float64(cost.ElemCycles[wire.Int64])
	}
	b.dmaPerByte = float64(cost.DMAPerKiB) / 1024
	return b
}

// packets is the DMA cost of sending n pairs in full packets.
func (b sparseBlock) packets(n float64) float64 {
	return math.Ceil(n/float64(b.ppp)) * b.p.DMACycles
}

// array: a value per index of the span and a presence bitmap; the flush
// scans the bitmap, emits the union and clears both by DMA.
func (b sparseBlock) array(row *SparseRow) {
	row.CyclesPerElement = b.elem + arrayPairExtra
	bytes := b.span*float64(b.esize) + math.Ceil(b.span/8)
	row.FlushCycles = b.span/32*scanCycles + b.union*emitCycles + b.packets(b.union) + bytes*b.dmaPerByte
	row.BlockMemoryBytes = bytes
	row.TrafficRatio = 1
}

// hash: H (index, value) slots and a spill buffer. u distinct indices own
// H(1 − e^(−u/H)) slots; every pair of the others spills.
func (b sparseBlock) hash(row *SparseRow) {
	row.CyclesPerElement = b.elem + hashPairExtra
	H := float64(b.p.SparseHashSlots)
	owned := b.union
	if H > 0 {
		owned = H * (1 - math.Exp(-b.union/H))
	}
	row.SpillPairs = (b.union - owned) * b.hosts * b.pairs / b.union
	table := H * float64(b.pairBytes)
	row.FlushCycles = H*scanCycles + owned*emitCycles + b.packets(owned) + table*b.dmaPerByte
	row.SpillCycles = b.packets(row.SpillPairs)
	row.BlockMemoryBytes = table + float64(b.p.PacketBytes) // the table and one spill buffer
	row.TrafficRatio = (owned + row.SpillPairs) / b.union
}

// SparseSweep evaluates every storage at every density, storage by storage.
func SparseSweep(p Params, storages []string, densities []float64) []SparseRow {
	var rows []SparseRow
	for _, s := range storages {
		for _, d := range densities {
			rows = append(rows, SparseEvaluate(p, s, d))
		}
	}
	return rows
}

// WriteSparseTable writes sparse rows as an aligned text table.
func WriteSparseTable(w io.Writer, rows []SparseRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join([]string{"storage", "density", "span", "union", "cyc/elem", "cyc/pkt",
		"flush", "tau", "Gbit/s", "Gpairs/s", "mem/block", "mem(K blocks)", "fits", "spill", "traffic"}, "\t")+"\t")
	for _, r := range rows {
		if r.Err != "" {
			fmt.Fprintf(tw, "%s\t%g\terror: %s\t\n", r.Storage, r.Density, r.Err)
			continue
		}
		fits := "no"
		if r.Fits {
			fits = "yes"
		}
		fmt.Fprintf(tw, "%s\t%.1f%%\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.1f\t%.1f\t%.3f\t%s\t%s\t%s\t%.0f\t%.2fx\t\n",
			r.Storage, r.Density*100, r.SpanElements, r.UnionPairs, r.CyclesPerElement, r.CyclesPerPacket,
			r.FlushCycles, r.Tau, r.Gbps, r.ElementsPerS/1e9, FormatBytes(r.BlockMemoryBytes),
			FormatBytes(r.MemoryBytes), fits, r.SpillPairs, r.TrafficRatio)
	}
	return tw.Flush()
}
