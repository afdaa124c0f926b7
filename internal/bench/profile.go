package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
)

// A row's profile: this process's CPU profile and Go execution trace over
// the row's measured calls (Config.Profile, flare bench --profile). With
// a process per rank this process holds only the embedded switch or the
// relay the row goes through (and the barrier, idle between calls), so
// the profile is the server's; with the ranks in this process it is
// theirs and the server's together, and the work between calls (the
// inputs' fill and the results' check) is marked: the CPU profile labels
// it phase=between (go tool pprof -tagignore phase=between leaves it
// out) and the trace puts it in a region of that name.

// betweenPhase is the label and the trace region of the work between
// calls.
const betweenPhase = "between"

// profileFiles are the files a row's profile prefix names: the CPU
// profile (go tool pprof) and the execution trace (go tool trace).
func profileFiles(prefix string) (cpu, trace string) {
	return prefix + ".cpu.pprof", prefix + ".trace"
}

// rowProfile is one row's profile being taken; nil takes none, and every
// method is then a no-op.
type rowProfile struct {
	cpu, trace      *os.File
	running, closed bool
	err             error
}

// newRowProfile creates the files of prefix (none when prefix is ""), so
// that a path that cannot be written fails the row before its calls.
func newRowProfile(prefix string) (*rowProfile, error) {
	if prefix == "" {
		return nil, nil
	}
	cpuPath, tracePath := profileFiles(prefix)
	if err := os.MkdirAll(filepath.Dir(prefix), 0o755); err != nil {
		return nil, fmt.Errorf("Config.Profile %s: %w", prefix, err)
	}
	cpu, err := os.Create(cpuPath)
	if err != nil {
		return nil, fmt.Errorf("Config.Profile %s: %w", prefix, err)
	}
	tr, err := os.Create(tracePath)
	if err != nil {
		cpu.Close()
		return nil, fmt.Errorf("Config.Profile %s: %w", prefix, err)
	}
	return &rowProfile{cpu: cpu, trace: tr}, nil
}

// start begins the CPU profile and the trace, as the first measured call
// starts.
func (p *rowProfile) start() {
	if p == nil || p.running || p.err != nil {
		return
	}
	if err := pprof.StartCPUProfile(p.cpu); err != nil {
		p.err = fmt.Errorf("Config.Profile: %w", err)
		return
	}
	if err := trace.Start(p.trace); err != nil {
		pprof.StopCPUProfile()
		p.err = fmt.Errorf("Config.Profile: %w", err)
		return
	}
	p.running = true
}

// between runs f, the work between two measured calls, marked as such
// while the profile runs.
func (p *rowProfile) between(f func()) {
	if p == nil || !p.running {
		f()
		return
	}
	pprof.Do(context.Background(), pprof.Labels("phase", betweenPhase), func(ctx context.Context) {
		trace.WithRegion(ctx, betweenPhase, f)
	})
}

// stop ends the profile and closes its files, once; it says what went
// wrong since newRowProfile.
func (p *rowProfile) stop() error {
	if p == nil || p.closed {
		return nil
	}
	if p.running {
		trace.Stop()
		pprof.StopCPUProfile()
		p.running = false
	}
	p.closed = true
	return errors.Join(p.err, p.cpu.Close(), p.trace.Close())
}
