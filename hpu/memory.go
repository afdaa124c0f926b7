package hpu

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// ErrNoMemory is returned when a quota or the L1 memory cannot give a buffer.
var ErrNoMemory = errors.New("hpu: no aggregation buffer free")

// Buffer is one fixed-size aggregation buffer in a cluster's L1 arena. Its
// Data slice is reused: whoever allocates it owns it until Free.
type Buffer struct {
	Data    []byte
	arena   *Arena
	index   int32
	inUse   bool // under arena.mu
	owner   *Quota
	Cluster int // the cluster whose L1 holds it
}

// Arena is a cluster's L1 memory carved into equal buffers, handed out from a
// free stack (lowest addresses first, so a lightly used arena stays compact).
type Arena struct {
	mu      sync.Mutex
	mem     []byte
	bufs    []Buffer
	free    []int32 // under mu, as peak and every buffer's inUse
	peak    int     // the most buffers in use at once
	cluster int

	// The buffers in use integrated over time, exactly: at every
	// allocation and free (under mu) held grows by the count so far times
	// the time since the last change. clock is nil where nobody reads it
	// (the virtual unit keeps its own memory statistics).
	clock func() int64
	since int64 // clock at the last change
	held  int64 // buffer × clock units up to since
}

func newArena(cluster, l1Bytes, bufBytes int) *Arena {
	n := l1Bytes / bufBytes
	a := &Arena{mem: make([]byte, n*bufBytes), bufs: make([]Buffer, n), free: make([]int32, n), cluster: cluster}
	for i := range a.bufs {
		a.bufs[i] = Buffer{Data: a.mem[i*bufBytes : (i+1)*bufBytes : (i+1)*bufBytes], arena: a, index: int32(i), Cluster: cluster}
		a.free[n-1-i] = int32(i)
	}
	return a
}

// Cap is the number of buffers the arena holds.
func (a *Arena) Cap() int { return len(a.bufs) }

// InUse is the number of buffers currently allocated.
func (a *Arena) InUse() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.inUse()
}

// inUse is InUse for a caller that holds mu, or that alone uses the arena
// (the virtual unit).
func (a *Arena) inUse() int { return len(a.bufs) - len(a.free) }

// Peak is the largest InUse seen.
func (a *Arena) Peak() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.peak
}

// advance adds the time since the last change at the present count to
// held. The caller holds mu.
func (a *Arena) advance() {
	if a.clock == nil {
		return
	}
	now := a.clock()
	if now <= a.since { // a clock may step back by a few ns (clock.go)
		return
	}
	a.held += int64(a.inUse()) * (now - a.since)
	a.since = now
}

// heldUntilNow is held brought up to the present.
func (a *Arena) heldUntilNow() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.advance()
	return a.held
}

// get pops a free buffer, or returns nil when none is free.
func (a *Arena) get() *Buffer {
	a.mu.Lock()
	n := len(a.free)
	if n == 0 {
		a.mu.Unlock()
		return nil
	}
	a.advance()
	b := &a.bufs[a.free[n-1]]
	a.free = a.free[:n-1]
	b.inUse = true
	a.peak = max(a.peak, a.inUse())
	a.mu.Unlock()
	return b
}

// put returns b to the free stack. The counts and the double-free check
// live under the lock put takes anyway, so that a buffer's round trip
// makes no locked instruction but the lock's own.
func (a *Arena) put(b *Buffer) {
	a.mu.Lock()
	if !b.inUse {
		a.mu.Unlock()
		panic("hpu: buffer freed twice")
	}
	b.inUse = false
	a.advance()
	a.free = append(a.free, b.index)
	a.mu.Unlock()
}

// Memory is the L1 of all clusters and the reservations (quotas) that jobs
// hold on it. Admission reserves; handlers allocate within their quota.
type Memory struct {
	arenas   []*Arena
	bufBytes int
	mu       sync.Mutex
	reserved int      // sum of the limits of live quotas
	draining []*Quota // released quotas whose buffers are not all freed yet
	total    int
}

func newMemory(cfg Config) *Memory {
	m := &Memory{bufBytes: cfg.BufferBytes}
	for c := 0; c < cfg.Clusters; c++ {
		a := newArena(c, cfg.L1Bytes, cfg.BufferBytes)
		m.arenas = append(m.arenas, a)
		m.total += a.Cap()
	}
	return m
}

// BufferBytes is the size of one buffer.
func (m *Memory) BufferBytes() int { return m.bufBytes }

// Total is the number of buffers across all clusters.
func (m *Memory) Total() int { return m.total }

// Free is the number of buffers not reserved by any quota.
func (m *Memory) Free() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.freeLocked()
}

// freeLocked counts the buffers of released quotas that are still allocated
// as taken, so a new job is never promised memory a draining one still holds.
func (m *Memory) freeLocked() int {
	held := 0
	live := m.draining[:0]
	for _, q := range m.draining {
		if u := q.InUse(); u > 0 {
			held += u
			live = append(live, q)
		}
	}
	clear(m.draining[len(live):])
	m.draining = live
	return m.total - m.reserved - held
}

// HeldNs is the buffers in use integrated over time since the unit was
// built, in buffer-nanoseconds: its rate over an interval is the mean
// working memory there, exactly (every allocation and free is counted).
// 0 under a VirtualUnit, which measures memory in cycles itself.
func (m *Memory) HeldNs() int64 {
	var n int64
	for _, a := range m.arenas {
		n += a.heldUntilNow()
	}
	return n
}

// InUse is the number of buffers allocated right now, across clusters.
func (m *Memory) InUse() int {
	n := 0
	for _, a := range m.arenas {
		n += a.InUse()
	}
	return n
}

// Arena returns cluster c's arena.
func (m *Memory) Arena(c int) *Arena { return m.arenas[c] }

// NoFitError is returned by Reserve when a job asks for more buffers than
// are free. Its message carries the numbers an operator needs.
type NoFitError struct {
	Want, Free, BufferBytes int
}

func (e *NoFitError) Error() string {
	return fmt.Sprintf("needs %d buffers of %s, %d free", e.Want, sizeString(e.BufferBytes), e.Free)
}

// Is lets errors.Is(err, ErrNoMemory) match.
func (e *NoFitError) Is(target error) bool { return target == ErrNoMemory }

// Reserve carves a quota of n buffers out of the free memory, or returns a
// *NoFitError.
func (m *Memory) Reserve(n int) (*Quota, error) {
	if n < 1 {
		return nil, fmt.Errorf("hpu: quota of %d buffers: must be >= 1", n)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if free := m.freeLocked(); n > free {
		return nil, &NoFitError{Want: n, Free: free, BufferBytes: m.bufBytes}
	}
	m.reserved += n
	return &Quota{mem: m, limit: int64(n)}, nil
}

// Quota is one job's share of the L1 memory: at most Limit buffers allocated
// at once. Allocation prefers the given cluster and falls back to the others
// (PsPIN's L1s are addressable from every cluster, at a cost we ignore).
type Quota struct {
	mem      *Memory
	limit    int64
	used     atomic.Int64
	peak     atomic.Int64
	failed   atomic.Int64
	released atomic.Bool
}

// BufferBytes is the size of one buffer.
func (q *Quota) BufferBytes() int { return q.mem.bufBytes }

// Limit is the number of buffers reserved.
func (q *Quota) Limit() int { return int(q.limit) }

// InUse is the number of buffers the job holds now.
func (q *Quota) InUse() int { return int(q.used.Load()) }

// Peak is the most buffers the job held at once.
func (q *Quota) Peak() int { return int(q.peak.Load()) }

// Failed counts allocations refused because the quota was exhausted.
func (q *Quota) Failed() int64 { return q.failed.Load() }

// Alloc returns a buffer from cluster's arena (or another's), or nil when the
// quota is exhausted or released.
func (q *Quota) Alloc(cluster int) *Buffer {
	u := q.used.Add(1)
	if u > q.limit || q.released.Load() {
		q.used.Add(-1)
		q.failed.Add(1)
		return nil
	}
	for p := q.peak.Load(); u > p && !q.peak.CompareAndSwap(p, u); p = q.peak.Load() {
	}
	arenas := q.mem.arenas
	for i := range arenas {
		if b := arenas[(cluster+i)%len(arenas)].get(); b != nil {
			b.owner = q
			return b
		}
	}
	// Reservations never exceed the total, so this is a broken invariant.
	panic("hpu: quota admitted an allocation that no arena can hold")
}

// Free returns b to its arena and to the quota.
func (q *Quota) Free(b *Buffer) {
	if b.owner != q {
		panic("hpu: buffer freed through a quota that does not own it")
	}
	b.owner = nil
	b.arena.put(b)
	q.used.Add(-1)
}

// Release gives the reservation back to the memory. Later allocations fail;
// buffers still allocated stay valid and count as taken until freed.
// Release is idempotent.
func (q *Quota) Release() {
	q.mem.mu.Lock()
	defer q.mem.mu.Unlock()
	if !q.released.CompareAndSwap(false, true) {
		return
	}
	q.mem.reserved -= int(q.limit)
	q.mem.draining = append(q.mem.draining, q)
}

func sizeString(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}
