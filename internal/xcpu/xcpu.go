// Package xcpu measures how long a cache line takes to move from one CPU
// to another: the price of every hand-off between goroutines on
// different CPUs (a queue's slot, a counter, a woken goroutine's state).
// On a VM it is not a constant of the machine. The two vCPUs of the
// boxes this project is measured on were sometimes near each other (a
// line in about 45 ns) and sometimes far apart (about 190 ns), for
// minutes at a time, and a path that hands packets across CPUs costs
// about twice the CPU a packet in the far spells. Benchmarks that compare
// one CPU with two report it, so that a ratio can be read with the
// placement it was measured under.
package xcpu

import (
	"errors"
	"runtime"
	"sync/atomic"
	"time"
)

// Trials and RoundTrips are LineTransfer's measurement: the fastest of
// Trials runs of RoundTrips round trips (about 2 ms each where a line
// takes 100 ns).
const (
	Trials     = 3
	RoundTrips = 10000
)

// ErrOneCPU is LineTransfer's error where the process may run on only
// one CPU (its affinity mask).
var ErrOneCPU = errors.New("xcpu: the process may run on one CPU only")

// errStall is a trial's error where the other side did not answer within
// 5 s: its thread was not scheduled (another process holds the CPU).
var errStall = errors.New("xcpu: the other CPU did not answer within 5 s (is it busy?)")

// LineTransfer is the one-way time of a cache line between the first two
// CPUs the process may run on: two threads, each pinned to one of them,
// pass a counter back and forth, and the time of a round trip is halved.
// It is the fastest of Trials runs, so that what another process's
// preemption adds is left out. Measure it while the process is otherwise
// idle: it keeps two CPUs busy for a few milliseconds. Where GOMAXPROCS is
// 1 (a daemon given one P), it is 2 for the measurement and 1 again after.
func LineTransfer() (time.Duration, error) {
	a, b, err := twoCPUs()
	if err != nil {
		return 0, err
	}
	if procs := runtime.GOMAXPROCS(0); procs < 2 {
		runtime.GOMAXPROCS(2)
		defer runtime.GOMAXPROCS(procs)
	}
	best := time.Duration(-1)
	for range Trials {
		d, err := trial(a, b)
		if err != nil {
			return 0, err
		}
		if best < 0 || d < best {
			best = d
		}
	}
	return best, nil
}

// trial passes a counter RoundTrips times from a thread on CPU a to one on
// b and back, and returns the one-way time. Each side's goroutine stays
// locked to its thread, so that the thread, pinned, ends with it.
func trial(a, b int) (time.Duration, error) {
	var line struct {
		_ [64]byte
		n atomic.Int64 // a stores the odd values, b the even ones
		_ [64]byte
	}
	var stalled, started atomic.Bool
	giveUp := time.Now().Add(5 * time.Second)
	// wait spins until the counter is v, or gives up on a stall.
	wait := func(v int64) bool {
		for spins := 1; line.n.Load() != v; spins++ {
			if spins&0xffff == 0 && (stalled.Load() || time.Now().After(giveUp)) {
				stalled.Store(true)
				return false
			}
		}
		return true
	}
	ready := make(chan error, 2)
	// pinned pins the calling side's thread to cpu and says so on ready.
	pinned := func(cpu int) bool {
		err := pin(cpu)
		ready <- err
		return err == nil
	}
	// pass passes the counter on at each of this side's turns from first.
	pass := func(first int64) bool {
		for v := first; v < 2*RoundTrips; v += 2 {
			if !wait(v) {
				return false
			}
			line.n.Store(v + 1)
		}
		return true
	}
	done := make(chan time.Duration, 1)
	go func() {
		if !pinned(a) {
			return
		}
		for !started.Load() {
		}
		start := time.Now()
		if pass(0) && wait(2*RoundTrips) {
			done <- time.Since(start)
		}
	}()
	go func() {
		if pinned(b) {
			pass(1)
		}
	}()
	for range 2 {
		if err := <-ready; err != nil {
			stalled.Store(true)
			started.Store(true)
			return 0, err
		}
	}
	started.Store(true)
	timeout := time.NewTimer(6 * time.Second)
	defer timeout.Stop()
	select {
	case d := <-done:
		return d / (2 * RoundTrips), nil
	case <-timeout.C:
		stalled.Store(true)
		return 0, errStall
	}
}
