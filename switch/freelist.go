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

// take moves up to cap(dst)-len(dst) recycled buffers into dst, under one
// lock, and returns it.
func (f *freeList[T]) take(dst []*T) []*T {
	f.mu.Lock()
	n := min(len(f.free), cap(dst)-len(dst))
	from := len(f.free) - n
	dst = append(dst, f.free[from:]...)
	clear(f.free[from:])
	f.free = f.free[:from]
	f.mu.Unlock()
	return dst
}

// putAll gives xs back under one lock; past max the rest is left to the
// collector.
func (f *freeList[T]) putAll(xs []*T) {
	f.mu.Lock()
	n := min(len(xs), f.max-len(f.free))
	f.free = append(f.free, xs[:n]...)
	f.mu.Unlock()
}

// freeBatch is how many buffers a freeCache takes or gives back at a time.
const freeBatch = 32

// freeCache is one goroutine's end of a freeList, which it either only
// takes from (a reader) or only gives back to (a core): it meets the list's
// lock once per freeBatch buffers instead of once a packet. With the
// reader on one CPU and the cores on another, that lock's cache line went
// back and forth twice a packet, and was the largest cost a second CPU
// added (docs/PERFORMANCE.md). Not safe for concurrent use.
type freeCache[T any] struct {
	list  *freeList[T]
	items []*T
}

func (f *freeList[T]) cache() freeCache[T] {
	return freeCache[T]{list: f, items: make([]*T, 0, freeBatch)}
}

// get takes a buffer from the cache, refilled from the list when empty.
func (c *freeCache[T]) get() *T {
	if len(c.items) == 0 {
		if c.items = c.list.take(c.items); len(c.items) == 0 {
			return c.list.new()
		}
	}
	n := len(c.items) - 1
	x := c.items[n]
	c.items[n] = nil
	c.items = c.items[:n]
	return x
}

// put gives x back to the cache, which hands a full batch on to the list.
func (c *freeCache[T]) put(x *T) {
	if c.items = append(c.items, x); len(c.items) == cap(c.items) {
		c.flush()
	}
}

// flush hands what the cache holds on to the list; an empty cache does
// not take the list's lock (a core flushes its lane of every reader after
// each batch, and most are empty).
func (c *freeCache[T]) flush() {
	if len(c.items) == 0 {
		return
	}
	c.list.putAll(c.items)
	clear(c.items)
	c.items = c.items[:0]
}
