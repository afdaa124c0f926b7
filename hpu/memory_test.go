package hpu

import (
	"errors"
	"testing"
)

func TestReserveRefusesWithNumbers(t *testing.T) {
	m := newMemory(Config{Clusters: 2, L1Bytes: 20 << 10, BufferBytes: 1024}.WithDefaults())
	if m.Total() != 40 {
		t.Fatalf("total = %d buffers, want 40", m.Total())
	}
	_, err := m.Reserve(96)
	if err == nil || err.Error() != "needs 96 buffers of 1 KiB, 40 free" || !errors.Is(err, ErrNoMemory) {
		t.Fatalf("Reserve(96) = %v", err)
	}
	q, err := m.Reserve(30)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Reserve(11); err == nil {
		t.Fatal("reserved past the total")
	}
	var got []*Buffer
	for i := 0; i < 30; i++ {
		b := q.Alloc(i % 2)
		if b == nil {
			t.Fatalf("alloc %d failed within quota", i)
		}
		got = append(got, b)
	}
	if q.Alloc(0) != nil || q.Failed() != 1 {
		t.Fatal("alloc past the quota succeeded")
	}
	if m.InUse() != 30 || q.Peak() != 30 {
		t.Fatalf("in use %d, peak %d; want 30, 30", m.InUse(), q.Peak())
	}
	// A released quota's buffers stay taken until freed.
	q.Release()
	if f := m.Free(); f != 10 {
		t.Fatalf("free after release with 30 held = %d, want 10", f)
	}
	q.Free(got[0]) // room under the limit: the release alone must refuse
	if q.Alloc(0) != nil {
		t.Fatal("alloc on a released quota succeeded")
	}
	for _, b := range got[1:] {
		q.Free(b)
	}
	if f := m.Free(); f != 40 || m.InUse() != 0 {
		t.Fatalf("free %d, in use %d after freeing all; want 40, 0", f, m.InUse())
	}
}

func TestAllocFallsBackToOtherClusters(t *testing.T) {
	m := newMemory(Config{Clusters: 2, L1Bytes: 4 << 10, BufferBytes: 1024}.WithDefaults())
	q, _ := m.Reserve(8)
	for i := 0; i < 8; i++ {
		b := q.Alloc(0)
		want := 0
		if i >= 4 {
			want = 1
		}
		if b.Cluster != want {
			t.Fatalf("alloc %d from cluster %d, want %d", i, b.Cluster, want)
		}
	}
}

func TestDoubleFreePanics(t *testing.T) {
	m := newMemory(Config{}.WithDefaults())
	q, _ := m.Reserve(1)
	b := q.Alloc(0)
	q.Free(b)
	defer func() {
		if recover() == nil {
			t.Fatal("double free did not panic")
		}
	}()
	q.Free(b)
}

// A buffer freed through another job's quota panics, before either
// quota's count or the arena changes: the other job would otherwise
// take it while its owner still writes to it.
func TestFreeThroughOtherQuotaPanics(t *testing.T) {
	m := newMemory(Config{}.WithDefaults())
	q1, _ := m.Reserve(1)
	q2, _ := m.Reserve(1)
	b := q1.Alloc(0)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("a buffer of quota 1 freed through quota 2 did not panic")
			}
		}()
		q2.Free(b)
	}()
	if q1.InUse() != 1 || q2.InUse() != 0 || m.InUse() != 1 {
		t.Errorf("after the refused free: quota 1 holds %d, quota 2 %d, the memory %d; want 1, 0, 1", q1.InUse(), q2.InUse(), m.InUse())
	}
}

// The buffers in use are integrated exactly, every allocation and free
// counted: 2 buffers for 10 units, then 1 for 5, then none, is 25.
func TestHeldIntegratesEveryChange(t *testing.T) {
	m := newMemory(Config{Clusters: 2, L1Bytes: 4 << 10, BufferBytes: 1024}.WithDefaults())
	var now int64
	for _, a := range m.arenas {
		a.clock = func() int64 { return now }
	}
	q, err := m.Reserve(4)
	if err != nil {
		t.Fatal(err)
	}
	x, y := q.Alloc(0), q.Alloc(1)
	now = 10
	q.Free(x)
	now = 15
	q.Free(y)
	now = 100
	if got := m.HeldNs(); got != 25 {
		t.Fatalf("held %d buffer-units, want 2×10 + 1×5 = 25", got)
	}
}

// A quota released twice gives its buffers back once: the memory's
// reservations never go below what other quotas hold, so nothing can be
// reserved twice over.
func TestReleaseTwice(t *testing.T) {
	m := newMemory(Config{Clusters: 1, L1Bytes: 16 << 10, BufferBytes: 1024}.WithDefaults())
	q, err := m.Reserve(4)
	if err != nil {
		t.Fatal(err)
	}
	other, err := m.Reserve(10)
	if err != nil {
		t.Fatal(err)
	}
	q.Release()
	q.Release()
	if f := m.Free(); f != 6 {
		t.Fatalf("free %d after one of two quotas was released twice, want 6 (16 less the other's 10)", f)
	}
	if _, err := m.Reserve(7); err == nil {
		t.Fatal("reserved 7 buffers with 6 free")
	}
	if _, err := m.Reserve(0); err == nil || err.Error() != "hpu: quota of 0 buffers: must be >= 1" {
		t.Fatalf("Reserve(0) = %v, want the range", err)
	}
	other.Release()
}
