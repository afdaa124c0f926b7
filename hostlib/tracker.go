package hostlib

import "time"

// never is a due time no call reaches.
const never = time.Duration(1<<63 - 1)

// tracker is the state of one call's blocks: which are done, which are in
// flight, and when each is due for retransmission. It is plain data that
// the goroutine in the call advances, with times passed in as durations
// since the call started, so the bookkeeping reads apart from the I/O. It
// is sized once, at admission, and reused by every call.
type tracker struct {
	done      []uint64 // bitmap: the block's result has arrived
	completed int      // blocks done
	next      int      // position in the sending order of the next first transmission
	flights   []flight // blocks sent and not yet done, in no particular order
	pos       []int32  // block → its index in flights, or -1

	// Round-trip estimate (RFC 6298), kept from call to call: the path's
	// property, not one call's. Zero srtt means no sample yet.
	srtt, rttvar time.Duration
	floor        time.Duration // the smallest RTO: rtoInitial, or rtoSparse
}

// flight is one block in flight.
type flight struct {
	block uint32
	due   time.Duration // when it is retransmitted unless its result came
	rto   time.Duration // the wait after the latest transmission
	sent  time.Duration // first transmission
	again bool          // retransmitted: its round trip is ambiguous (Karn)
}

// init sizes t for blocks blocks, at most limit of them in flight.
func (t *tracker) init(blocks, limit int) {
	t.done = make([]uint64, (blocks+63)/64)
	t.flights = make([]flight, 0, limit)
	t.pos = make([]int32, blocks)
	for i := range t.pos {
		t.pos[i] = -1
	}
}

// reset starts a call: nothing done, nothing in flight, and every block's
// retransmission timeout back at its initial value.
func (t *tracker) reset() {
	for _, f := range t.flights {
		t.pos[f.block] = -1
	}
	t.flights = t.flights[:0]
	clear(t.done)
	t.completed, t.next = 0, 0
}

// isDone reports whether block b's result has arrived.
func (t *tracker) isDone(b uint32) bool { return t.done[b/64]&(1<<(b%64)) != 0 }

// launch records block b as sent for the first time at now and returns when
// it is due.
func (t *tracker) launch(b uint32, now time.Duration) time.Duration {
	rto := t.rto()
	t.pos[b] = int32(len(t.flights))
	t.flights = append(t.flights, flight{block: b, due: now + rto, rto: rto, sent: now})
	return now + rto
}

// rto is the first retransmission timeout of a block: TCP's SRTT + 4·RTTVAR
// once results have come back, within [rtoInitial, rtoMax]. A block's
// result waits for every rank's packet, so its round trip includes the
// slowest rank's lag; on a loaded machine that exceeds any fixed timeout,
// and retransmitting early only adds load.
func (t *tracker) rto() time.Duration {
	floor := max(t.floor, rtoInitial)
	if t.srtt == 0 {
		return floor
	}
	return min(max(t.srtt+4*t.rttvar, floor), rtoMax)
}

// sample folds one round trip into the estimate (RFC 6298, section 2).
func (t *tracker) sample(r time.Duration) {
	if t.srtt == 0 {
		t.srtt, t.rttvar = r, r/2
		return
	}
	d := t.srtt - r
	if d < 0 {
		d = -d
	}
	t.rttvar = (3*t.rttvar + d) / 4
	t.srtt = (7*t.srtt + r) / 8
}

// heldUp takes the switch's waiting report on block b at now: the switch had
// this rank's packet and waits for other ranks', so the retransmission that
// drew the answer was spurious, and the block's round trip is at least
// now − sent. That lower bound is sampled. Karn's rule keeps retransmitted
// blocks out of the estimate, so without it the estimate follows only the
// blocks that never waited, and on a loaded machine, where a block waits
// for the slowest rank, keeps firing too early (TCP corrects its spurious
// timeouts the same way, RFC 4015).
func (t *tracker) heldUp(b uint32, now time.Duration) {
	if int(b) >= len(t.pos) || t.pos[b] < 0 {
		return // done meanwhile, or not this call's
	}
	t.sample(now - t.flights[t.pos[b]].sent)
}

// backoff records a retransmission of f at now: the timeout doubles, up to
// rtoMax, as TCP's does, so a congested switch is not flooded.
func (f *flight) backoff(now time.Duration) {
	f.rto = min(2*f.rto, rtoMax)
	f.due = now + f.rto
	f.again = true
}

// complete marks block b done at now and takes it out of flight; a block
// sent once gives a round-trip sample. It reports false if b was done
// already (a duplicate result).
func (t *tracker) complete(b uint32, now time.Duration) bool {
	if t.isDone(b) {
		return false
	}
	t.done[b/64] |= 1 << (b % 64)
	t.completed++
	if i := t.pos[b]; i >= 0 {
		if f := &t.flights[i]; !f.again {
			t.sample(now - f.sent)
		}
		last := len(t.flights) - 1
		t.flights[i] = t.flights[last]
		t.pos[t.flights[i].block] = i
		t.flights = t.flights[:last]
		t.pos[b] = -1
	}
	return true
}

// missing returns the lowest ids of blocks not done, at most limit of them.
func (t *tracker) missing(limit int) []int {
	var ids []int
	for b := 0; b < len(t.pos) && len(ids) < limit; b++ {
		if !t.isDone(uint32(b)) {
			ids = append(ids, b)
		}
	}
	return ids
}
