package bench

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"testing"
	"time"
)

// A row's profile marks the work between calls: go tool pprof finds what
// ran inside between under the label phase=between and leaves it out with
// -tagignore, what ran outside stays, and the trace holds the region.
func TestRowProfileMarksBetween(t *testing.T) {
	if _, ok := processTimes(); !ok {
		t.Skip("SKIPPED: no process CPU times on this platform to burn against")
	}
	prefix := filepath.Join(t.TempDir(), "rows", "p2-64KiB-switch-1KiB-r1") // a folder made on the way
	p, err := newRowProfile(prefix)
	if err != nil {
		t.Fatal(err)
	}
	p.between(func() { burnOutsideProfile(10 * time.Millisecond) }) // before start: not profiled, still run
	p.start()
	p.between(func() { burnBetweenCalls(300 * time.Millisecond) })
	burnInCall(300 * time.Millisecond)
	if err := p.stop(); err != nil {
		t.Fatal(err)
	}
	if err := p.stop(); err != nil {
		t.Fatalf("a second stop: %v", err)
	}
	cpu, tr := profileFiles(prefix)
	only := goTool(t, "pprof", "-top", "-tagfocus", "phase="+betweenPhase, cpu)
	without := goTool(t, "pprof", "-top", "-tagignore", "phase="+betweenPhase, cpu)
	if !strings.Contains(only, "burnBetweenCalls") || strings.Contains(only, "burnInCall") {
		t.Errorf("samples labelled phase=between:\n%s\nwant burnBetweenCalls alone", only)
	}
	if !strings.Contains(without, "burnInCall") || strings.Contains(without, "burnBetweenCalls") {
		t.Errorf("samples without the label:\n%s\nwant burnInCall alone", without)
	}
	if all := goTool(t, "pprof", "-top", cpu); strings.Contains(all, "burnOutsideProfile") {
		t.Errorf("the profile holds work from before start:\n%s", all)
	}
	if events := goTool(t, "trace", "-d=parsed", tr); !strings.Contains(events, `RegionBegin`) || !strings.Contains(events, `Type="`+betweenPhase+`"`) {
		t.Errorf("the trace has no %q region", betweenPhase)
	}
}

// No prefix takes no profile, and between still runs its work.
func TestRowProfileNone(t *testing.T) {
	p, err := newRowProfile("")
	if err != nil || p != nil {
		t.Fatalf("newRowProfile(\"\") = %v, %v; want nil, nil", p, err)
	}
	ran := false
	p.start()
	p.between(func() { ran = true })
	if err := p.stop(); err != nil || !ran {
		t.Fatalf("nil profile: stop %v, between ran %v", err, ran)
	}
}

// A prefix that cannot be written fails before the calls, naming the
// field.
func TestRowProfileUnwritable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := newRowProfile(filepath.Join(file, "row")); err == nil || !strings.Contains(err.Error(), "Config.Profile") {
		t.Fatalf("a prefix under a file: %v, want a profile error", err)
	}
}

// A profile that cannot start (a CPU profile or a trace already running
// in this process) says so at stop, and leaves nothing of its own running.
func TestRowProfileStartFails(t *testing.T) {
	if err := pprof.StartCPUProfile(io.Discard); err != nil {
		t.Fatal(err)
	}
	p, err := newRowProfile(filepath.Join(t.TempDir(), "cpu-busy"))
	if err != nil {
		t.Fatal(err)
	}
	p.start()
	pprof.StopCPUProfile()
	if err := p.stop(); err == nil || !strings.Contains(err.Error(), "Config.Profile") {
		t.Errorf("with a CPU profile running: stop %v, want the start's error", err)
	}

	if err := trace.Start(io.Discard); err != nil {
		t.Fatal(err)
	}
	defer trace.Stop()
	if p, err = newRowProfile(filepath.Join(t.TempDir(), "trace-busy")); err != nil {
		t.Fatal(err)
	}
	p.start()
	if err := pprof.StartCPUProfile(io.Discard); err != nil {
		t.Errorf("the CPU profile of a row whose trace failed is still running: %v", err)
	} else {
		pprof.StopCPUProfile()
	}
	if err := p.stop(); err == nil || !strings.Contains(err.Error(), "Config.Profile") {
		t.Errorf("with a trace running: stop %v, want the start's error", err)
	}
}

// goTool runs go tool args and returns its output.
func goTool(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"tool"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// The burners spend d of this process's CPU (not of the wall clock, so
// that a busy machine still leaves ~d/10 ms of samples), each under a name
// of its own in the profile.

//go:noinline
func burnBetweenCalls(d time.Duration) { burnCPU(d) }

//go:noinline
func burnInCall(d time.Duration) { burnCPU(d) }

//go:noinline
func burnOutsideProfile(d time.Duration) { burnCPU(d) }

var burnSink uint64

func burnCPU(d time.Duration) {
	from, _ := processTimes()
	x := burnSink
	for {
		for i := range 1 << 16 {
			x = x*6364136223846793005 + uint64(i)
		}
		now, _ := processTimes()
		if now.sub(from).user >= d {
			break
		}
	}
	burnSink = x
}
