//go:build unix

package bench

import (
	"testing"
	"time"
)

// A loop spends user time, not system time; ProcessCPU is both together,
// and never less than an earlier reading's.
func TestProcessTimes(t *testing.T) {
	from, ok := processTimes()
	if !ok {
		t.Fatal("getrusage failed")
	}
	burnCPU(30 * time.Millisecond)
	to, _ := processTimes()
	d := to.sub(from)
	if d.user < 30*time.Millisecond || d.sys >= d.user {
		t.Errorf("a 30 ms loop: %v user, %v system", d.user, d.sys)
	}
	if all, ok := ProcessCPU(); !ok || all < to.user+to.sys {
		t.Errorf("ProcessCPU %v, %t after a reading of %v user and %v system", all, ok, to.user, to.sys)
	}
}
