package hpu

import (
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/flare-net/flare/wire"
)

// vlog is an egress that records the cycle of every emitted packet, and the
// core that emitted it, by block.
type vlog struct {
	u    *VirtualUnit
	at   map[uint32]int64
	core map[uint32][2]int
}

func (e *vlog) Emit(h *wire.Header, _ []byte) { e.at[h.Block] = e.u.Now() }

// newVUnit builds a virtual unit whose egress records emit cycles.
func newVUnit(t *testing.T, cfg Config) (*VirtualUnit, *vlog) {
	t.Helper()
	eg := &vlog{at: map[uint32]int64{}, core: map[uint32][2]int{}}
	u, err := NewVirtual(cfg, eg, nil)
	if err != nil {
		t.Fatal(err)
	}
	eg.u = u
	t.Cleanup(u.Close)
	return u, eg
}

// work charges a fixed number of cycles and emits; it records the core.
func work(eg *vlog, cycles int64) HandlerFunc {
	return func(t *Task) {
		eg.core[t.Pkt.Hdr.Block] = [2]int{t.Cluster, t.Core}
		t.Charge(cycles)
		t.Emit(&t.Pkt.Hdr, nil)
	}
}

func vpkt(h Handler, block uint32, at int64) *Packet {
	return &Packet{Hdr: wire.Header{Type: wire.TypeData, Block: block}, Handler: h, Arrival: at}
}

func submitRun(t *testing.T, u *VirtualUnit, ps ...*Packet) VirtualStats {
	t.Helper()
	for _, p := range ps {
		if err := u.Submit(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := u.Run(); err != nil {
		t.Fatal(err)
	}
	return u.Stats()
}

// A request that finds every core of its subset busy waits in its cluster
// and runs on the first of them to finish (PsPIN's cluster scheduler), not
// on a core chosen at its arrival: block 2 arrives while core 0 runs a
// 300-cycle handler and core 1 a 100-cycle one, and core 1 takes it at 100.
func TestVirtualClusterQueue(t *testing.T) {
	u, eg := newVUnit(t, Config{Clusters: 1, CoresPerCluster: 2})
	long, short := work(eg, 300), work(eg, 100)
	submitRun(t, u, vpkt(long, 0, 0), vpkt(short, 1, 0), vpkt(short, 2, 50), vpkt(short, 3, 60))
	want := map[uint32]int64{0: 300, 1: 100, 2: 200, 3: 300}
	if !reflect.DeepEqual(eg.at, want) {
		t.Fatalf("emit cycles %v, want %v", eg.at, want)
	}
	if eg.core[2] != [2]int{0, 1} || eg.core[3] != [2]int{0, 1} {
		t.Fatalf("blocks 2 and 3 ran on %v and %v, want core 1 (the first free) for both", eg.core[2], eg.core[3])
	}
}

// Without contention τ is exactly the cycles the handler charges, and a core
// runs its assigned packets one after another.
func TestVirtualServiceTime(t *testing.T) {
	u, eg := newVUnit(t, Config{Clusters: 1, CoresPerCluster: 2})
	h := work(eg, 100)
	// Blocks 0 and 1 take cores 0 and 1; block 2 (at 50) finds both busy,
	// waits in the cluster and starts on core 0, the first to free (at 100,
	// before core 1 at the same cycle).
	st := submitRun(t, u, vpkt(h, 0, 0), vpkt(h, 1, 0), vpkt(h, 2, 50))
	want := map[uint32]int64{0: 100, 1: 100, 2: 200}
	if !reflect.DeepEqual(eg.at, want) {
		t.Fatalf("emit cycles %v, want %v", eg.at, want)
	}
	if eg.core[2] != [2]int{0, 0} {
		t.Fatalf("block 2 ran on %v, want cluster 0 core 0", eg.core[2])
	}
	if tau := st.TauCycles(); tau != 100 {
		t.Fatalf("τ = %v cycles, want 100", tau)
	}
	if st.Now != 200 || st.QueueMax != 3 {
		t.Fatalf("now = %d, queue max = %d; want 200, 3", st.Now, st.QueueMax)
	}
	// Occupancies seen: 1, 2, then 3 (two running and itself).
	if q := st.QueueMean(); q != 2 {
		t.Fatalf("queue mean = %v, want 2", q)
	}
}

// A free core is the lowest-numbered idle one of the block's subset.
func TestVirtualLowestIdleCore(t *testing.T) {
	u, eg := newVUnit(t, Config{Clusters: 1, CoresPerCluster: 4})
	h := work(eg, 100)
	submitRun(t, u, vpkt(h, 0, 0), vpkt(h, 1, 10), vpkt(h, 2, 20), vpkt(h, 3, 115), vpkt(h, 4, 115))
	// At 115 cores 0 and 1 are idle again (done at 100 and 110), core 2 is not.
	want := map[uint32][2]int{0: {0, 0}, 1: {0, 1}, 2: {0, 2}, 3: {0, 0}, 4: {0, 1}}
	if !reflect.DeepEqual(eg.core, want) {
		t.Fatalf("cores %v, want %v", eg.core, want)
	}
}

// A queued request runs only on a core of its block's subset (policy S):
// with S = 2 of 4 cores, block 4's subset is cores 0 and 1, both busy to
// 300, and core 2, free at 100, does not take it.
func TestVirtualQueuedStaysInSubset(t *testing.T) {
	u, eg := newVUnit(t, Config{Clusters: 1, CoresPerCluster: 4, SubsetS: 2})
	long, short := work(eg, 300), work(eg, 100)
	submitRun(t, u, vpkt(long, 0, 0), vpkt(long, 2, 0), vpkt(short, 1, 0), vpkt(short, 4, 10))
	if eg.core[1] != [2]int{0, 2} || eg.core[4] != [2]int{0, 0} || eg.at[4] != 400 {
		t.Fatalf("block 1 ran on %v; block 4 on %v, done at %d: want core 2, then core 0 at 400", eg.core[1], eg.core[4], eg.at[4])
	}
}

// lockWork takes a shared lock, works L cycles inside it and releases it.
func lockWork(l *Lock, cycles int64) HandlerFunc {
	return func(t *Task) {
		t.Lock(l)
		t.Charge(cycles)
		t.Unlock(l)
	}
}

// C handlers of one block that start together on C cores serialize on the
// lock: the i-th waits (i−1)·L, so τ averages L(C+1)/2 (the sum the paper's
// formula means), and the back-off quantizes the waits.
func TestVirtualLockContention(t *testing.T) {
	const c, l = 8, 1024
	for _, backoff := range []int64{32, 0, 100} {
		cfg := Config{Clusters: 1, CoresPerCluster: c}
		cfg.Cost = PsPINCost()
		cfg.Cost.LockBackoff = backoff
		u, _ := newVUnit(t, cfg)
		var lk Lock
		var ps []*Packet
		for range c {
			ps = append(ps, vpkt(lockWork(&lk, l), 0, 0))
		}
		st := submitRun(t, u, ps...)
		tot := st.Total()
		switch backoff {
		case 0, 32: // the releases fall on poll cycles: no loss
			if tau := st.TauCycles(); tau != l*(c+1)/2.0 {
				t.Fatalf("back-off %d: τ = %v, want L(C+1)/2 = %v", backoff, tau, l*(c+1)/2.0)
			}
			if tot.LockWaitCycles != l*c*(c-1)/2 || tot.Contended != c-1 {
				t.Fatalf("back-off %d: waited %d cycles in %d acquisitions, want %d in %d",
					backoff, tot.LockWaitCycles, tot.Contended, l*c*(c-1)/2, c-1)
			}
		default: // each hand-over waits for the next poll: up to a back-off more
			if tau := st.TauCycles(); tau <= l*(c+1)/2.0 || tau > l*(c+1)/2.0+float64(backoff*c) {
				t.Fatalf("back-off %d: τ = %v, want just above %v", backoff, tau, l*(c+1)/2.0)
			}
		}
		if got := tot.Cycles; got != sumBusy(st) {
			t.Fatalf("charged cycles %d differ from busy time %d", got, sumBusy(st))
		}
	}
}

func sumBusy(st VirtualStats) int64 {
	var n int64
	for _, c := range st.Cores {
		n += c.BusyNs // 1 GHz: ns are cycles
	}
	return n
}

// A lock is busy only while a handler holds it in virtual time: one that
// takes it again later does not delay a handler that needs it in between
// (what running each handler to completion would get wrong).
func TestVirtualLockInterleaving(t *testing.T) {
	u, _ := newVUnit(t, Config{Clusters: 1, CoresPerCluster: 2})
	var lk Lock
	twice := HandlerFunc(func(t *Task) {
		t.Lock(&lk)
		t.Unlock(&lk)
		t.Charge(1000)
		t.Lock(&lk)
		t.Unlock(&lk)
	})
	st := submitRun(t, u, vpkt(twice, 0, 0), vpkt(twice, 0, 10))
	if w := st.Total().LockWaitCycles; w != 0 || st.TauCycles() != 1000 {
		t.Fatalf("waited %d cycles, τ = %v; want 0, 1000", w, st.TauCycles())
	}

	// A holder that works 500 cycles inside the lock delays a handler that
	// asks at cycle 10 to its first poll after 500: 10 + 16·32 = 522.
	u, eg := newVUnit(t, Config{Clusters: 1, CoresPerCluster: 2})
	in := func(t *Task) {
		t.Lock(&lk)
		t.Charge(500)
		t.Unlock(&lk)
		t.Emit(&t.Pkt.Hdr, nil)
	}
	st = submitRun(t, u, vpkt(HandlerFunc(in), 0, 0), vpkt(HandlerFunc(in), 1, 10))
	if eg.at[0] != 500 || eg.at[1] != 1022 || st.Total().LockWaitCycles != 512 {
		t.Fatalf("emitted at %v, waited %d; want 500 and 1022, 512", eg.at, st.Total().LockWaitCycles)
	}

	// A handler that finds the lock held at the very cycle it is released
	// still spins: it takes the lock at its first poll, one back-off on.
	u, eg = newVUnit(t, Config{Clusters: 1, CoresPerCluster: 2})
	holder := func(t *Task) {
		t.Lock(&lk)
		t.Charge(20) // yields at 10 to the other's arrival, resumes at 20
		t.Unlock(&lk)
		t.Emit(&t.Pkt.Hdr, nil)
	}
	asker := func(t *Task) {
		t.Charge(10) // asks at 20, before the holder resumes
		t.Lock(&lk)
		t.Unlock(&lk)
		t.Emit(&t.Pkt.Hdr, nil)
	}
	st = submitRun(t, u, vpkt(HandlerFunc(holder), 0, 0), vpkt(HandlerFunc(asker), 1, 10))
	if eg.at[0] != 20 || eg.at[1] != 52 || st.Total().LockWaitCycles != 32 {
		t.Fatalf("emitted at %v, waited %d; want 20 and 52 (one back-off), 32", eg.at, st.Total().LockWaitCycles)
	}
}

// TryLock sees the lock as it is at the handler's cycle.
func TestVirtualTryLock(t *testing.T) {
	u, _ := newVUnit(t, Config{Clusters: 1, CoresPerCluster: 2})
	var lk Lock
	got := map[uint32]bool{}
	h := HandlerFunc(func(t *Task) {
		ok := t.TryLock(&lk)
		got[t.Pkt.Hdr.Block] = ok
		t.Charge(100)
		if ok {
			t.Unlock(&lk)
		}
	})
	submitRun(t, u, vpkt(h, 0, 0), vpkt(h, 1, 50), vpkt(h, 2, 100))
	if want := map[uint32]bool{0: true, 1: false, 2: true}; !reflect.DeepEqual(got, want) {
		t.Fatalf("TryLock results %v, want %v", got, want)
	}
}

// A cluster holds at most QueueDepth requests; the others wait for it in
// arrival order.
func TestVirtualQueueDepthIngress(t *testing.T) {
	u, eg := newVUnit(t, Config{Clusters: 1, CoresPerCluster: 1, QueueDepth: 3})
	h := work(eg, 100)
	var ps []*Packet
	for b := range 10 {
		ps = append(ps, vpkt(h, uint32(b), 0))
	}
	st := submitRun(t, u, ps...)
	for b := range uint32(10) {
		if eg.at[b] != int64(b+1)*100 {
			t.Fatalf("block %d emitted at %d, want %d (arrival order)", b, eg.at[b], (b+1)*100)
		}
	}
	if st.QueueMax != 3 || st.IngressWaited != 7 || st.IngressMax != 7 {
		t.Fatalf("queue max %d, ingress waited %d (max %d); want 3, 7, 7", st.QueueMax, st.IngressWaited, st.IngressMax)
	}
	// Packet b ≥ 3 enters when packet b−3 finishes, at (b−2)·100.
	var want int64
	for b := 3; b < 10; b++ {
		want += int64(b-2) * 100
	}
	if st.IngressWaitCycles != want {
		t.Fatalf("ingress wait %d cycles, want %d", st.IngressWaitCycles, want)
	}
	if st.TauCycles() != 100 {
		t.Fatalf("τ = %v: the ingress wait is not service time", st.TauCycles())
	}
}

// A packet waiting for its full home cluster holds up only the packets of
// that cluster: one for another cluster with room starts at once (no
// head-of-line blocking), and the waiting ones enter in arrival order.
func TestVirtualWaitPerCluster(t *testing.T) {
	u, eg := newVUnit(t, Config{Clusters: 2, CoresPerCluster: 1, QueueDepth: 1})
	h := work(eg, 100)
	// Blocks 0, 2 and 4 are cluster 0's, block 1 cluster 1's.
	st := submitRun(t, u, vpkt(h, 0, 0), vpkt(h, 2, 0), vpkt(h, 4, 5), vpkt(h, 1, 10))
	want := map[uint32]int64{0: 100, 2: 200, 4: 300, 1: 110}
	if !reflect.DeepEqual(eg.at, want) {
		t.Fatalf("emitted at %v, want %v", eg.at, want)
	}
	if st.IngressWaited != 2 || st.IngressMax != 2 || st.IngressWaitCycles != 100+195 {
		t.Fatalf("%d waited (max %d) for %d cycles; want 2 (2) for 295", st.IngressWaited, st.IngressMax, st.IngressWaitCycles)
	}
}

// With Overflow and S > 1 a full home cluster overflows to the
// least-loaded one; with S = 1, or without Overflow (S = 0 below: S = 2
// with the default), the packet waits for its home cluster.
func TestVirtualOverflow(t *testing.T) {
	for _, s := range []int{2, 1, 0} {
		u, eg := newVUnit(t, Config{Clusters: 2, CoresPerCluster: 2, QueueDepth: 2, SubsetS: s, Overflow: s > 0})
		h := work(eg, 100)
		var ps []*Packet
		for range 4 {
			ps = append(ps, vpkt(h, 0, 0)) // all of home cluster 0
		}
		st := submitRun(t, u, ps...)
		over := st.Clusters[1].Overflow
		switch s {
		case 2:
			if over != 2 || st.Now != 100 {
				t.Fatalf("S=2: %d overflowed, done at %d; want 2, 100", over, st.Now)
			}
		case 1: // one core owns block 0: four in a row
			if over != 0 || st.Now != 400 || st.IngressWaited != 2 {
				t.Fatalf("S=1: %d overflowed, done at %d, %d waited; want 0, 400, 2", over, st.Now, st.IngressWaited)
			}
		case 0: // the two cores of cluster 0, two rounds
			if over != 0 || st.Now != 200 || st.IngressWaited != 2 {
				t.Fatalf("S=2 without Overflow: %d overflowed, done at %d, %d waited; want 0, 200, 2", over, st.Now, st.IngressWaited)
			}
		}
		_ = eg
	}
}

// Buffers in use are integrated over virtual time at the cycles where
// handlers allocate and free them.
func TestVirtualMemory(t *testing.T) {
	u, _ := newVUnit(t, Config{Clusters: 2, CoresPerCluster: 1})
	q, err := u.Memory().Reserve(4)
	if err != nil {
		t.Fatal(err)
	}
	h := HandlerFunc(func(t *Task) {
		t.Charge(10)
		b := q.Alloc(t.Cluster)
		t.Charge(100)
		q.Free(b)
		t.Charge(10)
	})
	// One buffer over [110, 210] and one over [160, 260], on two clusters.
	st := submitRun(t, u, vpkt(h, 0, 100), vpkt(h, 1, 150))
	if st.Now != 270 || st.BuffersMax != 2 {
		t.Fatalf("now %d, max buffers %d; want 270, 2", st.Now, st.BuffersMax)
	}
	if want := 200.0 / 270; st.BuffersMean != want {
		t.Fatalf("mean buffers %v, want %v", st.BuffersMean, want)
	}
}

// randomRun drives a unit with random arrivals of lock-sharing handlers.
func randomRun(t *testing.T, seed uint64) VirtualStats {
	u, _ := newVUnit(t, Config{Clusters: 2, CoresPerCluster: 4, QueueDepth: 6})
	r := rand.New(rand.NewPCG(seed, 1))
	locks := make([]Lock, 8)
	h := HandlerFunc(func(t *Task) {
		l := &locks[t.Pkt.Hdr.Block%8]
		t.Lock(l)
		t.Charge(int64(t.Pkt.Hdr.Count))
		t.Unlock(l)
		t.Charge(64)
	})
	var at int64
	var ps []*Packet
	for range 500 {
		at += int64(r.ExpFloat64() * 60)
		p := vpkt(h, uint32(r.IntN(32)), at)
		p.Hdr.Count = uint32(100 + r.IntN(1000))
		ps = append(ps, p)
	}
	return submitRun(t, u, ps...)
}

func TestVirtualDeterministic(t *testing.T) {
	a, b := randomRun(t, 7), randomRun(t, 7)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("two runs with one seed differ:\n%+v\n%+v", a.Total(), b.Total())
	}
	if c := randomRun(t, 8); reflect.DeepEqual(a, c) {
		t.Fatal("runs with different seeds are identical")
	}
	if a.QueueMax > 6 || a.Total().Contended == 0 || a.IngressWaited == 0 {
		t.Fatalf("queue max %d (depth 6), %d contended, %d waited at ingress: want a loaded run",
			a.QueueMax, a.Total().Contended, a.IngressWaited)
	}
}

// Handlers that take two locks in opposite orders deadlock; Run says so.
func TestVirtualDeadlock(t *testing.T) {
	u, _ := newVUnit(t, Config{Clusters: 1, CoresPerCluster: 2})
	var a, b Lock
	ab := func(x, y *Lock) HandlerFunc {
		return func(t *Task) {
			t.Lock(x)
			t.Charge(10)
			t.Lock(y)
			t.Unlock(y)
			t.Unlock(x)
		}
	}
	u.Submit(vpkt(ab(&a, &b), 0, 0))
	u.Submit(vpkt(ab(&b, &a), 1, 0))
	if err := u.Run(); err == nil || !strings.Contains(err.Error(), "deadlock") {
		t.Fatalf("Run = %v, want a deadlock error", err)
	}
}

func TestVirtualSubmitErrors(t *testing.T) {
	u, eg := newVUnit(t, Config{Clusters: 1, CoresPerCluster: 1})
	submitRun(t, u, vpkt(work(eg, 100), 0, 50))
	if err := u.Submit(vpkt(work(eg, 1), 0, 10)); err == nil {
		t.Fatal("a packet arriving before the clock was accepted")
	}
	if err := u.Submit(&Packet{Arrival: 500}); err == nil {
		t.Fatal("a packet without a handler was accepted")
	}
	if err := u.At(10, func() {}); err == nil {
		t.Fatal("a timer before the clock was accepted")
	}
	u.Close()
	if err := u.Run(); err != ErrClosed {
		t.Fatalf("Run after Close = %v, want ErrClosed", err)
	}
}

// Close releases every core coroutine, also of handlers left suspended.
func TestVirtualCloseReleases(t *testing.T) {
	before := runtime.NumGoroutine()
	u, err := NewVirtual(Config{Clusters: 2, CoresPerCluster: 8}, &vlog{at: map[uint32]int64{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var lk Lock
	for b := range 64 {
		u.Submit(vpkt(lockWork(&lk, 100), uint32(b), int64(b)))
	}
	if err := u.RunUntil(500); err != nil {
		t.Fatal(err)
	}
	u.Close()
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before; {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after Close, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(time.Millisecond)
	}
}

// Timers run in cycle order between handlers and may submit packets.
func TestVirtualTimers(t *testing.T) {
	u, eg := newVUnit(t, Config{Clusters: 1, CoresPerCluster: 1})
	h := work(eg, 100)
	var fired []int64
	var tick func()
	tick = func() {
		fired = append(fired, u.Now())
		if len(fired) < 3 {
			u.Submit(vpkt(h, uint32(len(fired)), u.Now()))
			u.At(u.Now()+150, tick)
		}
	}
	u.At(20, tick)
	if err := u.Run(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fired, []int64{20, 170, 320}) || eg.at[1] != 120 || eg.at[2] != 270 {
		t.Fatalf("timers at %v, emits %v", fired, eg.at)
	}
}

// Steady state allocates nothing per packet: the tasks are restarted, the
// event heap and FIFOs keep their capacity.
func TestVirtualZeroAlloc(t *testing.T) {
	u, err := NewVirtual(Config{Clusters: 2, CoresPerCluster: 4, QueueDepth: 4}, &vlog{at: map[uint32]int64{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	q, _ := u.Memory().Reserve(64)
	locks := make([]Lock, 4)
	h := HandlerFunc(func(t *Task) {
		l := &locks[t.Pkt.Hdr.Block%4]
		b := q.Alloc(t.Cluster)
		t.Lock(l)
		t.Charge(300)
		t.Unlock(l)
		q.Free(b)
		t.ChargeCopy(1024)
	})
	ps := make([]*Packet, 64)
	for i := range ps {
		ps[i] = vpkt(h, uint32(i), 0)
	}
	allocs := testing.AllocsPerRun(50, func() {
		base := u.Now()
		for i, p := range ps {
			p.Arrival = base + int64(i*20)
			u.Submit(p)
		}
		if err := u.Run(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per 64 packets, want 0", allocs)
	}
	if st := u.Stats(); st.Total().Contended == 0 || st.IngressWaited == 0 {
		t.Fatalf("%d contended, %d ingress waits: the run should exercise both", st.Total().Contended, st.IngressWaited)
	}
}

func BenchmarkVirtualUnit(b *testing.B) {
	u, err := NewVirtual(Config{Clusters: 64, CoresPerCluster: 8}, &vlog{at: map[uint32]int64{}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer u.Close()
	locks := make([]Lock, 512)
	h := HandlerFunc(func(t *Task) {
		l := &locks[t.Pkt.Hdr.Block%512]
		t.Lock(l)
		t.Charge(1024)
		t.Unlock(l)
		t.ChargeCopy(1024)
	})
	ps := make([]*Packet, 4096)
	for i := range ps {
		ps[i] = vpkt(h, uint32(i/8), 0)
	}
	b.ReportAllocs()
	for b.Loop() {
		base := u.Now()
		for i, p := range ps {
			p.Arrival = base + int64(i)
			u.Submit(p)
		}
		if err := u.Run(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(ps))/b.Elapsed().Seconds(), "packets/s")
}

// The virtual unit's ring keeps first in, first out when it grows with
// its oldest entry mid-buffer.
func TestFifoGrowsInOrder(t *testing.T) {
	var f fifo[int]
	next, want := 0, 0
	for round := range 5 {
		for range 5 + 3*round { // more than it holds, after pops moved its head
			f.push(next)
			next++
		}
		for range 4 {
			if got := f.pop(); got != want {
				t.Fatalf("round %d: popped %d, want %d", round, got, want)
			}
			want++
		}
	}
	for f.len() > 0 {
		if got := f.pop(); got != want {
			t.Fatalf("popped %d, want %d", got, want)
		}
		want++
	}
	if want != next {
		t.Fatalf("%d popped of %d pushed", want, next)
	}
}
