package swtch

import (
	"fmt"
	"sync/atomic"

	"github.com/flare-net/flare/handlers"
	"github.com/flare-net/flare/wire"
)

// memBudget is the host memory all jobs together may hold besides their
// L1 quotas (Config.MaxMemory): stored results, block tables, contributor
// bitmaps and block states, sparse streams, member tables and pending
// joins. Admission reserves a job's footprint, computed from its shape
// before anything is allocated (handlers' Footprint), and refuses the job
// when it does not fit; the job's end gives it back.
type memBudget struct {
	limit    int64
	reserved atomic.Int64
}

// reserve takes n bytes if they fit, and reports whether they did.
func (b *memBudget) reserve(n int64) bool {
	for {
		cur := b.reserved.Load()
		if n < 0 || cur+n > b.limit {
			return false
		}
		if b.reserved.CompareAndSwap(cur, cur+n) {
			return true
		}
	}
}

func (b *memBudget) release(n int64) { b.reserved.Add(-n) }

func (b *memBudget) free() int64 { return b.limit - b.reserved.Load() }

// refuseMemory is the refusal of what needs bytes of host memory when the
// budget has less free.
func (s *Switch) refuseMemory(job uint32, what string, bytes int64) *joinError {
	return refuseFor(refusalHostMemory, wire.CodeRefusedMemory, "job %d: %s needs %s of host memory; the switch allows %s for all jobs (%s), %s of it free now",
		job, what, sizeText(bytes), sizeText(s.budget.limit), s.cfg.setting("MaxMemory"), sizeText(max(s.budget.free(), 0)))
}

// jobFootprint is a job's host memory by part, for the budget and for the
// refusal's text.
type jobFootprint struct {
	handlers.Footprint
	Members int64
}

func (f jobFootprint) total() int64 { return f.Footprint.Total() + f.Members }

// refuseFootprint is the refusal of a job whose footprint does not fit:
// it names the largest part, the total, and what the switch allows.
func (s *Switch) refuseFootprint(job uint32, f jobFootprint) *joinError {
	parts := []struct {
		name  string
		bytes int64
	}{{"result storage", f.Results}, {"block table", f.Blocks}, {"block state", f.Work}, {"member table", f.Members}}
	big := 0
	for i, p := range parts {
		if p.bytes > parts[big].bytes {
			big = i
		}
	}
	hint := "other jobs hold the rest: retry when they end"
	if f.total() > s.budget.limit {
		hint = "ask for fewer elements, more elements per packet, or a larger " + s.cfg.setting("MaxMemory")
	}
	return refuseFor(refusalHostMemory, wire.CodeRefusedMemory, "job %d needs %s of %s (%s of host memory in all); the switch allows %s for all jobs (%s), %s of it free: %s",
		job, sizeText(parts[big].bytes), parts[big].name, sizeText(f.total()), sizeText(s.budget.limit), s.cfg.setting("MaxMemory"), sizeText(max(s.budget.free(), 0)), hint)
}

// sizeText writes a byte count for people: "64 GiB", "1.5 GiB", "300 B".
func sizeText(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift {
			v := float64(n) / float64(int64(1)<<u.shift)
			if n%(1<<u.shift) == 0 || v >= 100 {
				return fmt.Sprintf("%.0f %s", v, u.name)
			}
			return fmt.Sprintf("%.1f %s", v, u.name)
		}
	}
	return fmt.Sprintf("%d B", n)
}

// Refusal reasons beyond the wire codes' names (joinError.reason).
const (
	refusalHostMemory = "host-memory"      // the memory budget (Config.MaxMemory)
	refusalJoinRate   = "join-rate"        // the join token bucket (Config.JoinRate)
	refusalOverflow   = "field-overflow"   // a count the protocol's fields cannot carry
	refusalVersion    = "protocol-version" // a join of an earlier protocol version (refuseOldJoin)
)

// refusalReasons is the label set of flare_join_refusals_total.
var refusalReasons = func() []string {
	r := []string{refusalHostMemory, refusalJoinRate, refusalOverflow, refusalVersion}
	for c := wire.CodeRefusedMemory; c.Valid(); c++ {
		r = append(r, c.String())
	}
	return r
}()
