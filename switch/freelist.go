package swtch

import "sync"

// freeList recycles the packet path's buffers between its goroutines (the
// reader takes receive buffers, the cores give them back; the cores take
// send buffers, the writer gives them back). Unlike a sync.Pool it keeps
// what it holds across garbage collections, so a warm switch allocates
// nothing per packet even while the collector runs, and it holds at most
// max buffers: what the queues between those goroutines can have in flight,
// so the buffers it keeps are bounded by the queues, not by a burst.
type freeList[T any] struct {
	mu   sync.Mutex
	free []*T
	max  int
	new  func() *T
}

func newFreeList[T any](max int, new func() *T) *freeList[T] {
	return &freeList[T]{free: make([]*T, 0, max), max: max, new: new}
}

// get takes a recycled buffer, or makes one when none is free.
func (f *freeList[T]) get() *T {
	f.mu.Lock()
	if n := len(f.free); n > 0 {
		x := f.free[n-1]
		f.free[n-1] = nil
		f.free = f.free[:n-1]
		f.mu.Unlock()
		return x
	}
	f.mu.Unlock()
	return f.new()
}

// put gives x back; past max it is left to the collector.
func (f *freeList[T]) put(x *T) {
	f.mu.Lock()
	if len(f.free) < f.max {
		f.free = append(f.free, x)
	}
	f.mu.Unlock()
}
