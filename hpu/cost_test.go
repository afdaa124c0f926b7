package hpu

import (
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
