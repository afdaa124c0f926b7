package swtch

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/flare-net/flare/wire"
)

// The drop metric's labels: the wire's reasons and the switch's, every
// one present from the start (a bounded label set a dashboard can rely
// on, whatever socket the switch reads), each counting what was added
// under it, n at a time; a decode error counts under its wire reason,
// wrapped or not; a reason outside the set is a bug and panics.
func TestDropCounters(t *testing.T) {
	want := []string{"short", "version", "type", "flags", "dtype", "op", "length", "body", "other",
		"unknown-job", "token", "not-admitted", "not-member", "unexpected-type", "shutdown", "send-error", "refused-join", "oversize"}
	d := newDropCounters()
	if got := slices.Sorted(maps.Keys(d.snapshot())); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Fatalf("labels %v, want %v", got, want)
	}
	for i, r := range want {
		d.addN(r, int64(i))
		d.add(r)
	}
	d.addWire(fmt.Errorf("job 3: %w", wire.ErrLength))
	for i, r := range want {
		n := int64(i + 1)
		if r == wire.ReasonLength {
			n++
		}
		if got := d.snapshot()[r]; got != n {
			t.Errorf("%s: %d drops, want %d", r, got, n)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("a drop under a reason outside the set did not panic")
		}
	}()
	d.add("cosmic-ray")
}

// A reason counter counts each reason apart, reads 0 for one outside its
// set, lists its set in order, and panics on an event of a reason
// outside it.
func TestReasonCounters(t *testing.T) {
	names := []string{"full", "slow", "bad"}
	c := newReasonCounters("join", names)
	for i, r := range names {
		for range i + 1 {
			c.add(r)
		}
	}
	var listed []string
	c.each(func(r string, n int64) {
		listed = append(listed, fmt.Sprintf("%s=%d", r, n))
	})
	if want := []string{"full=1", "slow=2", "bad=3"}; !slices.Equal(listed, want) {
		t.Errorf("each: %v, want %v", listed, want)
	}
	if c.get("slow") != 2 || c.get("nosuch") != 0 {
		t.Errorf("get: slow %d, nosuch %d; want 2, 0", c.get("slow"), c.get("nosuch"))
	}
	defer func() {
		if r := recover(); fmt.Sprint(r) != "swtch: unknown join reason cosmic-ray" {
			t.Errorf("an event of a reason outside the set: recovered %v, want a panic naming it", r)
		}
	}()
	c.add("cosmic-ray")
}
