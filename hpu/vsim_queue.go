package hpu

// event is one entry of the VirtualUnit's agenda: a core to resume, a packet
// arriving, or a driver's timer. Events at the same cycle run in the order
// they were scheduled (seq), which keeps a run deterministic.
type event struct {
	at   int64
	seq  uint64
	core *vcore
	pkt  *Packet
	fn   func()
}

func (e *event) before(o *event) bool {
	return e.at < o.at || (e.at == o.at && e.seq < o.seq)
}

// eventQueue is a binary min-heap of events by (at, seq). It is typed (not
// container/heap) so that pushing an event does not box it.
type eventQueue struct{ h []event }

func (q *eventQueue) len() int    { return len(q.h) }
func (q *eventQueue) min() *event { return &q.h[0] }

func (q *eventQueue) push(e event) {
	q.h = append(q.h, e)
	h := q.h
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h[i].before(&h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *eventQueue) pop() event {
	h := q.h
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h[n] = event{} // drop references
	h = h[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h[l].before(&h[m]) {
			m = l
		}
		if r < n && h[r].before(&h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	q.h = h
	return top
}

// fifo is a growable ring buffer: a core's assigned packets, the packets
// waiting for a cluster.
type fifo[T any] struct {
	buf     []T
	head, n int
}

func (f *fifo[T]) len() int { return f.n }

func (f *fifo[T]) push(v T) {
	if f.n == len(f.buf) {
		nb := make([]T, max(8, 2*len(f.buf)))
		for i := range f.n {
			nb[i] = f.buf[(f.head+i)%len(f.buf)]
		}
		f.buf, f.head = nb, 0
	}
	f.buf[(f.head+f.n)%len(f.buf)] = v
	f.n++
}

func (f *fifo[T]) pop() T {
	var zero T
	v := f.buf[f.head]
	f.buf[f.head] = zero
	f.head = (f.head + 1) % len(f.buf)
	f.n--
	return v
}
