package swtch

import "testing"

// A sender's batch takes results up to a full batch; what does not fit
// waits in rest, and a chain that comes while some wait goes after them:
// every result is sent once, in the order the cores emitted them.
func TestSenderTakeKeepsOrder(t *testing.T) {
	w := &sender{full: 4}
	chain := func(first, n int) *outPacket {
		var head, tail *outPacket
		for i := first; i < first+n; i++ {
			op := &outPacket{buf: []byte{byte(i)}}
			if head == nil {
				head = op
			} else {
				tail.next = op
			}
			tail = op
		}
		return head
	}
	w.take(chain(0, 6)) // 4 in the batch, 2 wait
	w.take(chain(6, 3)) // the batch is full: all 3 wait, after those 2
	w.take(chain(9, 1)) // and this one after them
	var got []byte
	for _, op := range w.held {
		got = append(got, op.buf[0])
	}
	if len(w.held) != 4 {
		t.Fatalf("%d results in the batch, want a full batch of 4", len(w.held))
	}
	for op := w.rest; op != nil; op = op.next {
		got = append(got, op.buf[0])
	}
	if string(got) != string([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Fatalf("batch then waiting: %v; want 0..9 in order, each once", got)
	}
	for _, op := range w.held {
		if op.next != nil {
			t.Fatalf("result %d in the batch still links to %d", op.buf[0], op.next.buf[0])
		}
	}
}
