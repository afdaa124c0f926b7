package yield

import (
	"runtime"
	"sync/atomic"
	"testing"
)

// With one P, a goroutine that spins on Local until another sets a flag
// sees it set after a yield or two: Local runs the other goroutine on its
// P. A spin that gave the P up only to the runtime's preemption (every 10
// ms) would turn millions of times first.
func TestLocalRunsTheOthers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var set atomic.Bool
	go set.Store(true)
	n := 0
	for !set.Load() {
		n++
		Local()
	}
	if n > 100 {
		t.Fatalf("the other goroutine ran after %d yields on one P; want a few", n)
	}
	t.Logf("the other goroutine ran after %d yields", n)
}
