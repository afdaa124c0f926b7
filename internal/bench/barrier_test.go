package bench

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// rankSides gives each rank of b its side as a rank process would open it,
// from the ends the parent hands over.
func rankSides(t *testing.T, b *parentBarrier) []*rankBarrier {
	t.Helper()
	sides := make([]*rankBarrier, len(b.child))
	for r := range sides {
		files, env := b.files(r)
		if env != barrierEnv+"=3,4" || len(files) != 2 {
			t.Fatalf("rank %d: files %v, env %q", r, files, env)
		}
		sides[r] = &rankBarrier{release: files[0], ready: files[1]}
	}
	return sides
}

// No rank starts call k before every rank is ready for it, and none
// checks call k's result before every rank has finished the call: a rank
// that is slow to get ready, or slow in its call, holds the others' start
// and their checking, call after call. The parent's run returns once
// every rank has finished the last call, with its CPU reading taken.
func TestBarrierStartsEveryCallTogether(t *testing.T) {
	const ranks, rounds = 4, 5
	b, err := newParentBarrier(ranks)
	if err != nil {
		t.Fatal(err)
	}
	sides := rankSides(t, b)
	done := make(chan error, 1)
	var cpu cpuSpan
	go func() { done <- b.run(rounds, 1, &cpu, nil) }()
	var ready, called [rounds]atomic.Int32
	var wg sync.WaitGroup
	for r, side := range sides {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range rounds {
				if r == ranks-1 {
					time.Sleep(5 * time.Millisecond) // the slow rank, in its checking
				}
				ready[k].Add(1)
				if err := side.wait(); err != nil {
					t.Errorf("rank %d, call %d: %v", r, k, err)
					return
				}
				if n := ready[k].Load(); n != ranks {
					t.Errorf("rank %d started call %d with %d of %d ranks ready", r, k, n, ranks)
				}
				if r == 0 {
					time.Sleep(5 * time.Millisecond) // the slow rank, in its call
				}
				called[k].Add(1)
				if err := side.callDone(); err != nil {
					t.Errorf("rank %d, call %d done: %v", r, k, err)
					return
				}
				if n := called[k].Load(); n != ranks {
					t.Errorf("rank %d checked call %d with %d of %d ranks through it", r, k, n, ranks)
				}
			}
			if err := side.finish(); err != nil {
				t.Errorf("rank %d, finishing: %v", r, err)
			}
		}()
	}
	wg.Wait()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, readable := processTimes(); cpu.ok != readable || cpu.spent.user < 0 || cpu.spent.sys < 0 {
		t.Errorf("CPU over calls 1..%d: %+v, want it taken (where this system reads it: %v)", rounds-1, cpu, readable)
	}
}

// A rank process that ends early ends the others' wait with an error
// instead of leaving them blocked, and the parent's side returns.
func TestBarrierRankEndingEarlyReleasesTheOthers(t *testing.T) {
	b, err := newParentBarrier(3)
	if err != nil {
		t.Fatal(err)
	}
	sides := rankSides(t, b)
	done := make(chan error, 1)
	var cpu cpuSpan
	go func() { done <- b.run(10, 0, &cpu, nil) }()
	// Rank 2 "exits": its ends close, as the kernel closes them.
	sides[2].release.Close()
	sides[2].ready.Close()
	errs := make(chan error, 2)
	for _, side := range sides[:2] {
		go func() { errs <- side.wait() }()
	}
	for range 2 {
		select {
		case err := <-errs:
			if err == nil {
				t.Fatal("a rank started a call its dead peer never got ready for")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a rank still waits on the barrier after its peer ended")
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if cpu.ok {
		t.Errorf("CPU %+v taken over calls that never ran", cpu)
	}
}

// A rank started by hand has no barrier; a malformed or low descriptor
// pair in the variable is refused, naming it and the form it wants.
func TestBarrierFromEnvRefuses(t *testing.T) {
	t.Setenv(barrierEnv, "") // restored after the test
	os.Unsetenv(barrierEnv)
	if b, err := barrierFromEnv(); b != nil || err != nil {
		t.Fatalf("with no %s: %v, %v, want no barrier", barrierEnv, b, err)
	}
	for _, v := range []string{"", "3", "3;4", "x,4", "3,y", "2,4", "4,1", "-3,4"} {
		t.Setenv(barrierEnv, v)
		b, err := barrierFromEnv()
		if want := fmt.Sprintf("%s=%q: want two descriptors R,W (3 and up)", barrierEnv, v); b != nil || err == nil || err.Error() != want {
			t.Errorf("%s=%q: %v, %v, want %q", barrierEnv, v, b, err, want)
		}
	}
}
