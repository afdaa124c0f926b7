package swtch

import (
	"testing"

	"github.com/flare-net/flare/hpu"
)

// newFixtureUnit is a VirtualUnit of s's shape that emits through s and
// gives packets back to s.done, as s's own unit would, each handler a
// batch of its core's (s.Flush gives back what the packet held): the
// fixtures run accepted packets' handlers on it, one at a time, in
// virtual time.
func newFixtureUnit(t *testing.T, s *Switch) *hpu.VirtualUnit {
	t.Helper()
	done := func(p *hpu.Packet, core int) {
		s.done(p, core)
		s.Flush(core)
	}
	u, err := hpu.NewVirtual(s.unit.Config(), s, done)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(u.Close)
	return u
}

// runOnUnit runs p's handler on u from cycle at (or the unit's present
// cycle, if later) until it has returned and p is given back.
func runOnUnit(t *testing.T, u *hpu.VirtualUnit, p *hpu.Packet, at int64) {
	t.Helper()
	p.Arrival = max(at, u.Now())
	if err := u.Submit(p); err != nil {
		t.Fatal(err)
	}
	if err := u.Run(); err != nil {
		t.Fatal(err)
	}
}
