package hpu

import (
	"strings"
	"testing"

	"github.com/flare-net/flare/wire"
)

// TestPsPINCostEveryDType checks that every dtype has a place and a cost in
// the table Aggregate indexes with a mask, so that a new dtype cannot alias
// another's slot (or slot 0, free of charge), and pins the documented
// per-element costs.
func TestPsPINCostEveryDType(t *testing.T) {
	m := PsPINCost()
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	want := map[wire.DType]int64{wire.Int8: 1, wire.Int16: 2, wire.Int32: 4, wire.Int64: 8,
		wire.Float32: 4, wire.Float64: 8, wire.BFloat16: 4, wire.Float16: 4}
	for _, d := range wire.DTypes {
		if int(d) >= elemSlots {
			t.Fatalf("dtype %v has code %d, beyond the %d slots of CostModel.ElemCycles", d, d, elemSlots)
		}
		w, ok := want[d]
		if !ok {
			t.Errorf("dtype %v: no documented cost in this test", d)
		}
		if got := m.Aggregate(d, 256); got != 256*w {
			t.Errorf("Aggregate(%v, 256) = %d cycles, want %d", d, got, 256*w)
		}
	}
}

// The reference's other costs as PsPINCost documents them (D = 64 is
// docs/MODEL.md's): a 1 GHz clock, 64 cycles to DMA a KiB, 32 cycles of
// lock back-off, no fixed dispatch.
func TestPsPINCostConstants(t *testing.T) {
	m := PsPINCost()
	if m.ClockHz != 1e9 || m.DMAPerKiB != 64 || m.LockBackoff != 32 || m.Dispatch != 0 {
		t.Errorf("PsPINCost: clock %g Hz, DMA %d cycles/KiB, back-off %d, dispatch %d; want 1e9, 64, 32, 0",
			m.ClockHz, m.DMAPerKiB, m.LockBackoff, m.Dispatch)
	}
}

// A copy costs whole 64-byte bursts, each a sixteenth of DMAPerKiB, so a
// byte costs a burst; cycles turn into ns at the model's clock.
func TestCostCopyAndNanos(t *testing.T) {
	m := PsPINCost()
	for _, tc := range []struct{ n, want int }{{0, 0}, {1, 4}, {64, 4}, {65, 8}, {1024, 64}, {1025, 68}} {
		if got := m.Copy(tc.n); got != int64(tc.want) {
			t.Errorf("Copy(%d) = %d cycles, want %d", tc.n, got, tc.want)
		}
	}
	m.DMAPerKiB = 8 // half a cycle a burst: a KiB still costs 8
	if got := m.Copy(1024); got != 8 {
		t.Errorf("DMA 8 cycles/KiB: Copy(1024) = %d cycles, want 8", got)
	}
	if got := m.Nanos(1500); got != 1500 {
		t.Errorf("1 GHz: Nanos(1500) = %g, want 1500", got)
	}
	m.ClockHz = 2e9
	if got := m.Nanos(1500); got != 750 {
		t.Errorf("2 GHz: Nanos(1500) = %g, want 750", got)
	}
}

// Validate refuses a cost that cannot be used, naming the field and its
// value: a clock that is not positive, a dtype that costs nothing, and a
// negative DMA, back-off or dispatch cost; zero is allowed for the last
// three.
func TestCostModelValidate(t *testing.T) {
	zero := PsPINCost()
	zero.DMAPerKiB, zero.LockBackoff, zero.Dispatch = 0, 0, 0
	if err := zero.Validate(); err != nil {
		t.Errorf("no DMA, back-off or dispatch cost: %v", err)
	}
	for _, tc := range []struct {
		set  func(*CostModel)
		want string
	}{
		{func(m *CostModel) { m.ClockHz = 0 }, "clock = 0 Hz"},
		{func(m *CostModel) { m.ClockHz = -1e9 }, "clock = -1e+09 Hz"},
		{func(m *CostModel) { m.ElemCycles[wire.Float16] = 0 }, "cycles per float16 element = 0"},
		{func(m *CostModel) { m.ElemCycles[wire.Int8] = -1 }, "cycles per int8 element = -1"},
		{func(m *CostModel) { m.DMAPerKiB = -1 }, "DMA cycles per KiB = -1: must be >= 0"},
		{func(m *CostModel) { m.LockBackoff = -2 }, "lock back-off cycles = -2: must be >= 0"},
		{func(m *CostModel) { m.Dispatch = -3 }, "dispatch cycles = -3: must be >= 0"},
	} {
		m := PsPINCost()
		tc.set(&m)
		if err := m.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want an error with %q", err, tc.want)
		}
	}
}
