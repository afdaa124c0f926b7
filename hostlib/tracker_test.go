package hostlib

import (
	"testing"
	"time"
)

// The retransmission timeout follows measured round trips (RFC 6298),
// never below rtoInitial, and ignores retransmitted blocks (Karn).
func TestTrackerRTO(t *testing.T) {
	var tr tracker
	tr.init(100, 10)
	if got := tr.rto(); got != rtoInitial {
		t.Fatalf("rto before any sample %v, want %v", got, rtoInitial)
	}
	ms := time.Millisecond
	now := time.Duration(0)
	for b := uint32(0); b < 20; b++ {
		due := tr.launch(b, now)
		if due-now != tr.rto() {
			t.Fatalf("block %d due after %v, want the rto %v", b, due-now, tr.rto())
		}
		now += 50 * ms
		if !tr.complete(b, now) {
			t.Fatalf("block %d: complete reported a duplicate", b)
		}
	}
	if tr.srtt < 45*ms || tr.srtt > 55*ms {
		t.Errorf("srtt %v after steady 50 ms round trips", tr.srtt)
	}
	if got := tr.rto(); got < 50*ms || got > 100*ms {
		t.Errorf("rto %v after steady 50 ms round trips, want 50..100 ms", got)
	}
	// A retransmitted block's late answer must not drag the estimate.
	srtt := tr.srtt
	tr.launch(20, now)
	tr.flights[0].backoff(now + 60*ms)
	tr.complete(20, now+900*ms)
	if tr.srtt != srtt {
		t.Errorf("srtt moved from %v to %v on a retransmitted block", srtt, tr.srtt)
	}
	// Fast round trips bring it down to the floor, not below.
	for b := uint32(21); b < 80; b++ {
		tr.launch(b, now)
		tr.complete(b, now+ms)
	}
	if got := tr.rto(); got != rtoInitial {
		t.Errorf("rto %v after 1 ms round trips, want the floor %v", got, rtoInitial)
	}
	if tr.complete(21, now) {
		t.Error("a block completed twice")
	}
	// A waiting report says a retransmission was spurious: the block has
	// waited 300 ms so far for other ranks, and the timeout follows.
	tr.launch(90, now)
	tr.flights[len(tr.flights)-1].backoff(now + rtoInitial)
	for range 8 {
		tr.heldUp(90, now+300*ms)
	}
	if got := tr.rto(); got < 250*ms {
		t.Errorf("rto %v after reports that block 90 waited 300 ms for other ranks, want at least 250 ms", got)
	}
	tr.heldUp(21, now+time.Hour) // done: no sample
	tr.heldUp(5000, now)         // not a block of this call
	if got := tr.rto(); got > rtoMax {
		t.Errorf("rto %v past rtoMax", got)
	}
}

// A call that ends with blocks in flight (it failed, or was abandoned)
// leaves nothing behind: the next call's flights are its own, a late
// result of an old flight's block takes none of them out, and a waiting
// report about one samples nothing.
func TestTrackerResetForgetsFlights(t *testing.T) {
	var tr tracker
	tr.init(8, 4)
	for b := range uint32(4) {
		tr.launch(b, 0)
	}
	tr.reset()
	tr.launch(5, 0)
	tr.heldUp(3, time.Second)
	if tr.srtt != 0 {
		t.Errorf("a waiting report about the last call's block 3 gave a sample (srtt %v)", tr.srtt)
	}
	tr.complete(0, time.Millisecond) // block 0's result, taken in this call without this rank's packet (a partial)
	if len(tr.flights) != 1 || tr.flights[0].block != 5 || tr.pos[5] != 0 {
		t.Errorf("flights %+v, block 5 at %d after block 0 completed; want block 5 still in flight, at 0", tr.flights, tr.pos[5])
	}
}
