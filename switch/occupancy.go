package swtch

import (
	"context"
	"time"
)

// Working memory over time. The L1 buffers in use are sampled every
// occupancySample while a job is in the table (every occupancyIdle
// otherwise) and integrated into buffer-seconds, so that the mean working
// memory over any interval is the counter's rate: what Little's law
// predicts as M × (blocks per second) × (block latency), the latter two
// from flare_blocks_completed_total and flare_block_latency_seconds_total.
const (
	occupancySample = time.Millisecond
	occupancyIdle   = 100 * time.Millisecond
)

// sampleOccupancy integrates the buffers in use (each sample holds until
// the next) into s.bufferNs until ctx ends.
func (s *Switch) sampleOccupancy(ctx context.Context) {
	mem := s.unit.Memory()
	last, inUse := time.Now(), int64(0)
	t := time.NewTimer(occupancySample)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s.bufferNs.Add(inUse * now.Sub(last).Nanoseconds())
			last, inUse = now, int64(mem.InUse())
			if inUse > 0 || len(s.jobs.all()) > 0 {
				t.Reset(occupancySample)
			} else {
				t.Reset(occupancyIdle)
			}
		}
	}
}
