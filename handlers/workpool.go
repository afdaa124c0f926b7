package handlers

import "sync"

// workPool is a handler's fixed set of block states: a stack under a
// lock, taken when a block opens and put back when it closes, so that no
// packet allocates. Its size bounds the blocks open at once.
type workPool[T any] struct {
	mu   sync.Mutex
	free []*T
}

// take pops a state, or nil when every one is in use.
func (p *workPool[T]) take() *T {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.free)
	if n == 0 {
		return nil
	}
	w := p.free[n-1]
	p.free = p.free[:n-1]
	return w
}

// put returns a state.
func (p *workPool[T]) put(w *T) {
	p.mu.Lock()
	p.free = append(p.free, w)
	p.mu.Unlock()
}
