package handlers

import (
	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/wire"
)

// Expire is bounded-time mode's clock tick (DenseConfig.Deadline): a
// handler the daemon submits to the processing unit every so often, with
// the present time in the packet's Arrival. It releases every block whose
// deadline has passed without all its contributions: the single buffer
// holds the partial aggregate, which goes out like a result but marked
// FlagPartial, with the number of contributors in Child so that hosts can
// rescale (an average over the contributors, say). The block is then done:
// late packets of it are duplicates, answered with the partial result
// when they are retransmissions. Running on a core like any handler, it
// takes each block's lock and charges its work.
func (d *Dense) Expire(t *hpu.Task) {
	if d.cfg.Deadline <= 0 {
		return
	}
	now := t.Pkt.Arrival
	for i := range uint32(d.nblocks) {
		b := d.block(i)
		if e := b.expires.Load(); e == 0 || now < e {
			continue
		}
		t.Lock(&b.lock)
		if e := b.expires.Load(); b.state != blockActive || e == 0 || now < e || b.work.bufs[0] == nil {
			t.Unlock(&b.lock)
			continue
		}
		// Single-buffer handlers aggregate under the lock: every admitted
		// packet has settled, and the work leaves the block whole.
		w, gen, count := b.work, b.gen, int(b.work.gs.admitted)
		b.complete()
		b.expires.Store(0)
		t.Unlock(&b.lock)
		d.release(t, w, gen, i, count)
	}
}

// release emits block blk's partial aggregate of generation gen, count
// contributions, and returns its memory.
func (d *Dense) release(t *hpu.Task, w *work, gen, blk uint32, count int) {
	n := d.blockElems(int(blk))
	h := wire.Header{
		Version: wire.Version, Type: wire.TypeResult, Flags: wire.FlagPartial, Job: d.cfg.Job, Token: d.cfg.Token,
		Generation: gen, Block: blk, Child: uint16(count), DType: d.cfg.DType, Op: d.cfg.Op, Count: uint32(n),
	}
	payload := w.bufs[0].Data[:n*d.esize]
	t.ChargeCopy(len(payload))
	d.emitResult(t, &h, payload, uint16(count))
	d.Stats.Partial.Add(1)
	d.Stats.Missed.Add(int64(d.cfg.Children - count))
	d.Stats.Completed.Add(w.shard, 1)
	d.releaseWork(w)
}
