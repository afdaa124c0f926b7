package hpu

import (
	"fmt"

	"github.com/flare-net/flare/wire"
)

// CostModel is the PsPIN cycle cost of what a handler does. Handlers charge
// it through Task.Charge* so that every run reports the service time τ in
// cycles, and the virtual-time runner advances its clock by it.
//
// Aggregation costs are per element. PsPIN's RI5CY cores aggregate one
// 1 KiB packet of int32 in L = 1024 cycles (4 cycles per element: two loads,
// the operation, a store); their packed-SIMD lanes do two int16 or four int8
// elements in the same instruction sequence, so every 32-bit dtype and every
// vectorised narrower one costs 1 cycle per byte. The cores have no vector
// path for bfloat16 or float16 (widen, add in float32, round) and no 64-bit
// datapath, so bfloat16 and float16 cost like float32 per element and
// int64/float64 take two 32-bit sequences per element (the paper's PsPIN
// offers none of these; this is our assumption, documented in
// docs/MODEL.md). Float16 is charged exactly like bfloat16, both being a
// widen, a float32 operation and a round per element; that converting
// binary16 in software takes more instructions than bfloat16's shift is
// left out, like the cost of rounding itself.
type CostModel struct {
	ClockHz     float64          // core clock, cycles per second
	ElemCycles  [elemSlots]int64 // aggregation cycles per element, indexed by wire.DType
	DMAPerKiB   int64            // cycles to DMA-copy 1 KiB between packet buffer and L1
	LockBackoff int64            // cycles a core spins before retrying a held lock
	Dispatch    int64            // fixed cycles per handler invocation (scheduling, header parse)
}

// elemSlots is the length of CostModel.ElemCycles: a power of two above
// every dtype code, so that Aggregate can mask instead of checking bounds.
const elemSlots = 16

// PsPINCost returns the reference costs: 1 GHz, L = 1024 cycles per 1 KiB
// int32 packet, 64-cycle DMA per KiB, 32-cycle lock back-off.
func PsPINCost() CostModel {
	var m CostModel
	m.ClockHz = 1e9
	m.ElemCycles[wire.Int8] = 1
	m.ElemCycles[wire.Int16] = 2
	m.ElemCycles[wire.Int32] = 4
	m.ElemCycles[wire.Float32] = 4
	m.ElemCycles[wire.BFloat16] = 4
	m.ElemCycles[wire.Float16] = 4
	m.ElemCycles[wire.Int64] = 8
	m.ElemCycles[wire.Float64] = 8
	m.DMAPerKiB = 64
	m.LockBackoff = 32
	return m
}

// Validate reports a cost that cannot be used.
func (m CostModel) Validate() error {
	if m.ClockHz <= 0 {
		return fmt.Errorf("cost model clock = %g Hz: must be > 0", m.ClockHz)
	}
	for _, d := range wire.DTypes {
		if m.ElemCycles[d] <= 0 {
			return fmt.Errorf("cost model cycles per %s element = %d: must be > 0", d, m.ElemCycles[d])
		}
	}
	for _, c := range []struct {
		name   string
		cycles int64
	}{{"DMA cycles per KiB", m.DMAPerKiB}, {"lock back-off cycles", m.LockBackoff}, {"dispatch cycles", m.Dispatch}} {
		if c.cycles < 0 {
			return fmt.Errorf("cost model %s = %d: must be >= 0", c.name, c.cycles)
		}
	}
	return nil
}

// Aggregate is the cost of folding n elements of d into a buffer.
func (m CostModel) Aggregate(d wire.DType, n int) int64 {
	return m.ElemCycles[d&(elemSlots-1)] * int64(n)
}

// Copy is the cost of a DMA copy of n bytes (rounded up to whole KiB/16
// bursts of 64 bytes, so small copies are not free).
func (m CostModel) Copy(n int) int64 {
	bursts := int64(n+63) / 64
	return bursts * m.DMAPerKiB / 16
}

// Nanos converts cycles to nanoseconds at the model's clock.
func (m CostModel) Nanos(cycles int64) float64 { return float64(cycles) * 1e9 / m.ClockHz }
