package models

import (
	"math"
	"strings"
	"testing"

	"github.com/flare-net/flare/wire"
)

func TestSparseModel(t *testing.T) {
	p := mustPreset(t, PresetFlare)
	var prevHash SparseRow
	for i, d := range SparseDensities() {
		h := SparseEvaluate(p, StorageHash, d)
		a := SparseEvaluate(p, StorageArray, d)
		if h.Err != "" || a.Err != "" {
			t.Fatalf("density %g: %s %s", d, h.Err, a.Err)
		}
		// §7: hash memory and per-packet work do not depend on density.
		if h.BlockMemoryBytes != float64(p.SparseHashSlots*wire.PairSize(p.DType)+p.PacketBytes) {
			t.Errorf("%g: hash block memory %g", d, h.BlockMemoryBytes)
		}
		if h.CyclesPerPacket != 128*12 || a.CyclesPerPacket != 128*10 {
			t.Errorf("%g: cycles per packet hash %g, array %g; want 1536, 1280", d, h.CyclesPerPacket, a.CyclesPerPacket)
		}
		// Both cost more per packet than the dense L (§7: "a lower bandwidth
		// for the sparse allreduce compared to the dense one").
		if !(h.CyclesPerPacket > a.CyclesPerPacket && a.CyclesPerPacket > p.CyclesPerPacket) {
			t.Errorf("%g: hash %g > array %g > dense %g violated", d, h.CyclesPerPacket, a.CyclesPerPacket, p.CyclesPerPacket)
		}
		// The array spans pairs/density indices, 4 bytes and a presence bit each.
		span := float64(p.SparsePairsPerBlock) / d
		if beyond(a.SpanElements-span, 1e-6) || beyond(a.BlockMemoryBytes-(span*4+math.Ceil(span/8)), 1e-6) {
			t.Errorf("%g: array span %g, memory %g", d, a.SpanElements, a.BlockMemoryBytes)
		}
		if a.TrafficRatio != 1 || a.SpillPairs != 0 {
			t.Errorf("%g: array spills (%g, %g)", d, a.SpillPairs, a.TrafficRatio)
		}
		if i > 0 && !(h.TrafficRatio > prevHash.TrafficRatio) {
			t.Errorf("%g: hash spill traffic %g does not grow with density (%g before)", d, h.TrafficRatio, prevHash.TrafficRatio)
		}
		prevHash = h
		if want := float64(p.Cores()) * h.BlockMemoryBytes; h.MemoryBytes != want || !h.Fits {
			t.Errorf("%g: hash working memory %g (fits %v), want %g", d, h.MemoryBytes, h.Fits, want)
		}
	}
	// §7: at 1%, a float32 block is a ~600 KiB array with ~6 KiB of values,
	// and the 512 concurrent blocks do not fit in Flare's memory.
	a := SparseEvaluate(p, StorageArray, 0.01)
	if a.SpanElements*4 != 600<<10 || a.Fits {
		t.Errorf("1%% array: %g bytes per block, fits %v; want 600 KiB, false", a.SpanElements*4, a.Fits)
	}
	if h := SparseEvaluate(p, StorageHash, 0.001); h.TrafficRatio > 1.05 {
		t.Errorf("0.1%% hash: spill traffic ratio %g, want about 1 (indices rarely repeat)", h.TrafficRatio)
	}
	// With Figure 14's density range on 8 hosts the hash spills a little
	// more than half again at 20%.
	ps := mustPreset(t, PresetPsPIN)
	if h := SparseEvaluate(ps, StorageHash, 0.2); h.TrafficRatio < 1.4 || h.TrafficRatio > 1.7 {
		t.Errorf("pspin 20%% hash: spill traffic ratio %g", h.TrafficRatio)
	}
}

func TestSparseSpillFormula(t *testing.T) {
	p := mustPreset(t, PresetPsPIN)
	h := SparseEvaluate(p, StorageHash, 0.1)
	H, P, nnz := float64(p.SparseHashSlots), float64(p.Hosts), float64(p.SparsePairsPerBlock)
	u := nnz / 0.1 * (1 - math.Pow(0.9, P))
	owned := H * (1 - math.Exp(-u/H))
	if beyond(h.UnionPairs-u, 1e-9) || beyond(h.SpillPairs-(u-owned)*P*nnz/u, 1e-6) ||
		beyond(h.TrafficRatio-(owned+(u-owned)*P*nnz/u)/u, 1e-12) {
		t.Errorf("union %g spill %g ratio %g; want %g, %g, %g", h.UnionPairs, h.SpillPairs, h.TrafficRatio,
			u, (u-owned)*P*nnz/u, (owned+(u-owned)*P*nnz/u)/u)
	}
	// τ is the block's work over its packets.
	pkts := P * math.Ceil(nnz/128)
	if want := (P*nnz*12 + h.FlushCycles + h.SpillCycles) / pkts; beyond(h.Tau-want, 1e-9) {
		t.Errorf("τ %g, want %g", h.Tau, want)
	}
	if want := float64(p.Cores()) / h.Tau; beyond(h.Bandwidth-want, 1e-12) {
		t.Errorf("bandwidth %g, want K/τ = %g", h.Bandwidth, want)
	}
}

func TestSparseFixedSpan(t *testing.T) {
	p := mustPreset(t, PresetFlare)
	p.SparseBlockElems = 65536
	lo := SparseEvaluate(p, StorageArray, 0.01)
	hi := SparseEvaluate(p, StorageArray, 0.1)
	if lo.SpanElements != 65536 || lo.BlockMemoryBytes != hi.BlockMemoryBytes {
		t.Errorf("fixed span: %g elements, memory %g vs %g; want 65536 and equal", lo.SpanElements, lo.BlockMemoryBytes, hi.BlockMemoryBytes)
	}
	if lo.PacketsPerBlock != 6 || hi.PacketsPerBlock != 52 { // 655 and 6554 pairs, 128 per packet
		t.Errorf("packets per block %d, %d; want 6, 52", lo.PacketsPerBlock, hi.PacketsPerBlock)
	}
}

func TestSparseErrors(t *testing.T) {
	p := mustPreset(t, PresetFlare)
	for _, tc := range []struct {
		storage string
		density float64
		want    string
	}{{"tree", 0.1, "storage"}, {StorageHash, 0, "density"}, {StorageArray, 1.5, "density"}, {StorageHash, math.NaN(), "density"}} {
		if r := SparseEvaluate(p, tc.storage, tc.density); !strings.Contains(r.Err, tc.want) {
			t.Errorf("%s %g: error %q, want it to mention %s", tc.storage, tc.density, r.Err, tc.want)
		}
	}
	p.Hosts = 0
	if r := SparseEvaluate(p, StorageHash, 0.1); !strings.Contains(r.Err, "Hosts") {
		t.Errorf("invalid params: error %q", r.Err)
	}
}
