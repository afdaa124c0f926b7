package bench

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// A row with a process per rank starts every call on every rank at once,
// as OSU's and IMB's benchmarks do with MPI_Barrier before each timed
// call: the parent (Procs) releases the call when every rank process has
// filled its inputs and checked the previous call's result. Without it a
// rank that finished checking first starts its clock while the others
// still check, and its time holds their checking (and the timeouts it
// draws meanwhile), which the relays, that check nothing, never pay.
// For the same reason no rank checks a result before every rank has
// finished the call: the parent releases the checking when all have, so
// that a rank that finished first does not take the CPU the ranks still
// receiving need (at 1 MiB, P = 8, that made a verified row 35–40%
// slower than the same row unverified).
//
// The rank process gets two pipes from its parent: it writes one byte to
// the second when ready for a call and reads one byte from the first to
// start it. The parent names their descriptors in barrierEnv.
const barrierEnv = "FLARE_BENCH_BARRIER_FDS"

// rankBarrier is a rank process's side: ready, then wait for the release.
type rankBarrier struct {
	release *os.File
	ready   *os.File
}

// barrierFromEnv opens this process's side when its parent gave it one; nil
// when it runs alone (flare allreduce started by hand).
func barrierFromEnv() (*rankBarrier, error) {
	v, ok := os.LookupEnv(barrierEnv)
	if !ok {
		return nil, nil
	}
	rs, ws, ok := strings.Cut(v, ",")
	r, err1 := strconv.Atoi(rs)
	w, err2 := strconv.Atoi(ws)
	if !ok || err1 != nil || err2 != nil || r < 3 || w < 3 {
		return nil, fmt.Errorf("%s=%q: want two descriptors R,W (3 and up)", barrierEnv, v)
	}
	release, err := pipeFile(r, "barrier-release")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", barrierEnv, err)
	}
	ready, err := pipeFile(w, "barrier-ready")
	if err != nil {
		release.Close()
		return nil, fmt.Errorf("%s: %w", barrierEnv, err)
	}
	return &rankBarrier{release: release, ready: ready}, nil
}

// finish says this rank has finished its last call, for the parent's
// reading of its own CPU (cpuSpan): the byte wait sends before a call.
func (b *rankBarrier) finish() error {
	var one [1]byte
	if _, err := pipe(b.ready).Write(one[:]); err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	return nil
}

// callDone says this rank has finished the call and returns when every
// rank has, for it to check its result.
func (b *rankBarrier) callDone() error { return b.wait() }

// wait says this rank is ready and returns when the parent starts the call.
func (b *rankBarrier) wait() error {
	if err := b.finish(); err != nil {
		return err
	}
	var one [1]byte
	if _, err := io.ReadFull(pipe(b.release), one[:]); err != nil {
		return fmt.Errorf("barrier: the parent ended the run: %w", err)
	}
	return nil
}

// parentBarrier is Procs' side: a ready pipe and a release pipe per rank.
type parentBarrier struct {
	ready   []*os.File    // read: one byte per rank ready
	release []*os.File    // write: one byte starts the rank's call
	child   [][2]*os.File // each rank's ends, release then ready, until it starts
}

// newParentBarrier makes the pipes of p rank processes.
func newParentBarrier(p int) (*parentBarrier, error) {
	b := &parentBarrier{}
	for range p {
		var f [4]*os.File
		var err error
		if f[0], f[1], err = os.Pipe(); err == nil {
			if f[2], f[3], err = os.Pipe(); err != nil {
				f[0].Close()
				f[1].Close()
			}
		}
		if err != nil {
			b.close()
			for r := range b.child {
				b.started(r)
			}
			return nil, fmt.Errorf("barrier: %w", err)
		}
		b.release, b.ready = append(b.release, f[1]), append(b.ready, f[2])
		b.child = append(b.child, [2]*os.File{f[0], f[3]})
	}
	return b, nil
}

// files is what rank r's process inherits, as ExtraFiles (fds 3 and 4),
// and env names them.
func (b *parentBarrier) files(r int) ([]*os.File, string) {
	return b.child[r][:], barrierEnv + "=3,4"
}

// started closes the parent's copies of rank r's ends once its process
// has started (or failed to), so that its exit reads as end of file.
func (b *parentBarrier) started(r int) {
	b.child[r][0].Close()
	b.child[r][1].Close()
}

// run releases calls calls, each when every rank is ready, and each
// call's checking when every rank has finished it (rankBarrier.callDone),
// and then waits for every rank to finish the last one (rankBarrier.finish). It
// reads this process's CPU into cpu as it releases call first and when
// every rank has finished, and takes the row's profile (prof, nil for
// none) over the same span. When a rank process ends before its calls are
// done, it closes every release pipe, so that the ranks still waiting end
// too, and returns nil: the rank's own exit says why (cpu is then not
// taken).
func (b *parentBarrier) run(calls, first int, cpu *cpuSpan, prof *rowProfile) error {
	defer b.close()
	for k := range calls {
		if !b.allReady() {
			return nil
		}
		if k == first {
			prof.start()
			cpu.start()
		}
		if !b.releaseAll() || !b.allReady() || !b.releaseAll() { // the call, then its checking
			return nil
		}
	}
	if b.allReady() {
		cpu.stop()
		return prof.stop()
	}
	return nil
}

// releaseAll writes one byte to every rank; false when one has ended.
func (b *parentBarrier) releaseAll() bool {
	var one [1]byte
	for _, f := range b.release {
		if _, err := pipe(f).Write(one[:]); err != nil {
			return false
		}
	}
	return true
}

// allReady reads one byte from every rank: each is ready for the next
// call, or has finished the last; false when one has ended instead.
func (b *parentBarrier) allReady() bool {
	var one [1]byte
	for _, f := range b.ready {
		if _, err := io.ReadFull(pipe(f), one[:]); err != nil {
			return false
		}
	}
	return true
}

// close closes the parent's ends.
func (b *parentBarrier) close() {
	for _, f := range append(b.ready, b.release...) {
		f.Close()
	}
}
