package handlers

import "github.com/flare-net/flare/hpu"

// The generation rule, one state machine for every design, dense and
// sparse.
//
// A block belongs to one generation at a time. While it aggregates, its
// state lives in a record taken from the job's pool (Dense's work,
// Sparse's sparseWork), and the record carries the state of its
// generation (genState): the packets admitted into it, the handlers done
// with it, and whether the block has left it. A handler admits its packet
// under the block's lock; it may then use the record's buffers outside the
// lock (the multi-buffer designs fold there, the tree climbs); and it
// settles under the lock again when it is done with the record.
//
// A packet of a newer generation on an active block abandons the block's
// record: the block takes the new generation and a fresh record, and the
// old record stays with the handlers still using it. Each of them, when it
// settles, finds the record abandoned and drops its contribution; the
// last of them releases the record (its buffers back to the quota, the
// record back to the pool); a record that no handler holds is released at
// once. So an abandoned generation never emits a result, and nothing of
// it (buffers, contributor bits, counts) reaches the generation that
// replaced it. Packets of the older generation that arrive afterwards are
// stale. A block completes only when every handler admitted into its
// record has settled and the record is still the block's. (The spill
// packets a sparse handler may still send while it finishes folding into
// an abandoned record are pieces of a stream that never ends: a stream is
// complete only with its FlagLast result packet.)
//
// What a block keeps of its finished generations (the dense result store,
// the sparse stream records, indexed by generation parity) follows the
// same rule: a late store of an older generation never replaces a newer
// one's.

// block states
const (
	blockIdle   = iota // no packet of this generation yet
	blockActive        // aggregating
	blockDone          // result emitted
)

// genState is the generation state of one record. It is read and written
// under the lock of the block the record was opened for.
type genState struct {
	start     int64 // when the handler of the record's first packet started (Task.Started)
	admitted  int32 // packets admitted into the record
	settled   int32 // of them, handlers done with the record
	abandoned bool  // the block moved to a newer generation: the record counts for nothing
}

// genRecord is a design's per-block record: it carries its genState.
type genRecord interface {
	comparable
	gstate() *genState
}

// cacheLine is the bytes of a CPU's cache line on the machines the
// switch runs on (x86-64, most arm64): the unit of what two CPUs contend.
const cacheLine = 64

// linePair is the span two CPUs' writes must keep apart: x86's adjacent-
// line prefetchers (Intel's, and AMD's from Zen on) fetch a line's
// 128-byte-aligned neighbour along with it, so one CPU's miss on its line
// takes the other CPU's neighbouring line from it too, and the other's next
// write waits for it to come back. With the two vCPUs on separate dies (a
// line in ~190 ns rather than ~40), 64-byte block records and counter
// shards side by side cost a second reader that at every packet
// (docs/PERFORMANCE.md).
const linePair = 2 * cacheLine

// genBlock is the generation part of one block: its lock, its generation
// and state, and its record while it aggregates.
//
// A job's blocks are a table, each entry on a cache line of its own
// (cacheLine): the readers of a switch take blocks in turn (the data port
// group steers block b to reader b mod readers), so neighbouring blocks are
// handled on different CPUs at once, and two on one line sent it back and
// forth between them on every packet's lock (docs/PERFORMANCE.md). The
// entries are laid out so that each reader's lie together (blockLayout).
type genBlock[W genRecord] struct {
	lock  hpu.Lock // the single-buffer critical section; the state lock otherwise
	gen   uint32
	state uint8 // blockIdle, blockActive, blockDone
	work  W     // the record while blockActive
}

// genStep is what a packet meets at its block (genBlock.advance).
type genStep uint8

const (
	genStale    genStep = iota // an older generation than the block's
	genFinished                // the block's generation, already emitted
	genIdle                    // the block's generation, no record yet: the caller opens one
	genActive                  // the block's generation, aggregating into b.work
)

// genOpener is what opening a block for a packet (enter) asks of a
// design; everything else about the opening is the same for all of them.
type genOpener[W genRecord] interface {
	// take gives a fresh record with the memory its first packet needs,
	// or false when the quota cannot hold the block (nothing is held).
	take(t *hpu.Task) (W, bool)
	// releaseWork returns a record that no handler holds to the pool.
	releaseWork(w W)
	// resend sends the stored result of the packet's generation back to
	// its sender, if the design keeps one.
	resend(t *hpu.Task)
	// counters are the design's generation counters.
	counters() *BlockStats
}

// enter opens block b for the packet of task t, under b.lock: it applies
// the generation rule (advance), counts an abandoned record and releases
// one that no handler holds, resends the stored result to a packet of a
// finished generation (the block's own, or the one before it: a host
// that missed it retransmits), and takes a record for the block's first
// packet (opened). It returns the record the packet goes on into, with
// its design's own admission (contributor bits, stream sequences); a nil
// record means the packet is not aggregated, and it has been counted.
func enter[W genRecord](b *genBlock[W], t *hpu.Task, d genOpener[W]) (w W, opened bool) {
	gen := t.Pkt.Hdr.Generation
	st := d.counters()
	step, abandoned, orphan := b.advance(gen)
	if abandoned {
		st.Abandoned.Add(1)
	}
	var none W
	if orphan != none {
		d.releaseWork(orphan)
	}
	switch step {
	case genStale:
		if gen+1 == b.gen {
			d.resend(t)
		}
		st.Stale.Add(1)
		return none, false
	case genFinished:
		d.resend(t)
		st.Duplicate.Add(1)
		return none, false
	case genIdle:
		nw, ok := d.take(t)
		if !ok {
			st.NoBuffer.Add(1)
			return none, false
		}
		b.open(nw)
		nw.gstate().start = t.Started()
		return nw, true
	}
	return b.work, false
}

// advance applies the generation rule to a packet of generation gen,
// under b.lock. A newer generation moves the block to it; if the block was
// active, its record is abandoned (abandoned is true), and orphan is the
// record when no handler holds it, for the caller to release now.
func (b *genBlock[W]) advance(gen uint32) (step genStep, abandoned bool, orphan W) {
	var none W
	switch {
	case gen < b.gen:
		return genStale, false, none
	case gen > b.gen:
		if b.state == blockActive {
			abandoned = true
			if g := b.work.gstate(); g.abandon() {
				orphan = b.work
			}
		}
		b.gen, b.state, b.work = gen, blockIdle, none
	}
	switch b.state {
	case blockDone:
		return genFinished, abandoned, orphan
	case blockIdle:
		return genIdle, abandoned, orphan
	}
	return genActive, abandoned, orphan
}

// open makes w, fresh from the pool, the block's record for its
// generation.
func (b *genBlock[W]) open(w W) {
	*w.gstate() = genState{}
	b.work, b.state = w, blockActive
}

// complete marks the block's generation done: its record leaves the
// block, owned by the caller, which emits the result and releases it.
func (b *genBlock[W]) complete() {
	var none W
	b.state, b.work = blockDone, none
}

// unopen returns an active block whose record holds no packet (its only
// one was refused after all) to idle; the caller releases the record.
func (b *genBlock[W]) unopen() {
	var none W
	b.state, b.work = blockIdle, none
}

// drop ends the block at its job's end (Close): a record it still
// aggregates into goes back through release, and the block takes no
// more packets.
func (b *genBlock[W]) drop(release func(W)) {
	if b.state == blockActive {
		release(b.work)
	}
	b.complete()
}

// admit counts a packet into the record; its handler settles later.
func (g *genState) admit() { g.admitted++ }

// unadmit takes back an admitted packet that could not be aggregated.
func (g *genState) unadmit() { g.admitted-- }

// settle records that a handler is done with the record. live says its
// contribution counts (the record is still its block's); release says the
// record was abandoned and this was its last handler, which releases it.
func (g *genState) settle() (live, release bool) {
	g.settled++
	if g.abandoned {
		return false, g.settled == g.admitted
	}
	return true, false
}

// abandon marks the record left by its block and reports whether no
// handler holds it (the caller releases it now).
func (g *genState) abandon() bool {
	g.abandoned = true
	return g.settled == g.admitted
}

// busy reports whether handlers admitted into the record are still using
// it.
func (g *genState) busy() bool { return g.settled != g.admitted }
