package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"

	"golang.org/x/sync/errgroup"
)

// Procs runs each rank of a measurement as a process of its own: Exe with
// Args(c) for the rank's Config (Ranks 0, Rank and World set), which runs
// that one rank and prints its Result as one JSON object (`flare
// allreduce --json`). The command line is the CLI's: Args maps a Config to
// its flags.
type Procs struct {
	Exe    string
	Args   func(c Config) []string
	Stderr io.Writer // the rank processes' standard error
}

// run measures c with one process per rank, every call started on all of
// them at once (barrier.go): the call time of the row is the slowest
// rank's, the counts are summed, and it is verified if every rank
// verified. It also returns what this process spent over the measured
// calls (cpuSpan).
func (pr *Procs) run(ctx context.Context, c Config) (*Result, *cpuSpan, error) {
	_, p := c.localRanks()
	rc := c
	rc.Ranks, rc.World = 0, p
	if c.Algo == "ring" {
		rc.Peers = []string{"127.0.0.1:0"} // a ring of one listens, alone
		if p > 1 {
			var err error
			if rc.Peers, err = FreeTCPAddrs(p); err != nil {
				return nil, nil, err
			}
		}
	}
	prof, err := newRowProfile(c.Profile)
	if err != nil {
		return nil, nil, err
	}
	defer prof.stop()
	bar, err := newParentBarrier(p)
	if err != nil {
		return nil, nil, err
	}
	results := make([]Result, p)
	g, gctx := errgroup.WithContext(ctx)
	var cpu cpuSpan
	g.Go(func() error { return bar.run(c.Warmup+c.Iters, c.Warmup, &cpu, prof) })
	for r := range p {
		rc := rc
		rc.Rank = r
		files, env := bar.files(r)
		g.Go(func() error {
			var out bytes.Buffer
			cmd := exec.CommandContext(gctx, pr.Exe, pr.Args(rc)...)
			cmd.Stdout, cmd.Stderr = &out, pr.Stderr
			cmd.Env = append(rankEnv(), env)
			cmd.ExtraFiles = files
			err := cmd.Start()
			bar.started(r) // the child has its own copies now, or none
			if err == nil {
				err = cmd.Wait()
			}
			if err != nil {
				return fmt.Errorf("rank %d: %w", r, err)
			}
			if err := json.Unmarshal(out.Bytes(), &results[r]); err != nil {
				return fmt.Errorf("rank %d: reading its result %q: %w", r, out.String(), err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	agg := results[0]
	for _, r := range results[1:] {
		agg.MedianS = max(agg.MedianS, r.MedianS)
		agg.P99S = max(agg.P99S, r.P99S)
		agg.Retransmits += r.Retransmits
		agg.TxBytes += r.TxBytes
		agg.RxBytes += r.RxBytes
		agg.SpilledPairs += r.SpilledPairs
		agg.RanksUserS += r.RanksUserS
		agg.RanksSysS += r.RanksSysS
		agg.Verified = agg.Verified && r.Verified
	}
	agg.setBandwidth()
	return &agg, &cpu, nil
}

// FreeTCPAddrs finds n distinct loopback TCP addresses free now, for the
// ranks of a ring.
func FreeTCPAddrs(n int) ([]string, error) {
	addrs := make([]string, n)
	lns := make([]net.Listener, n)
	defer func() {
		for _, ln := range lns {
			if ln != nil {
				ln.Close()
			}
		}
	}()
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("ring ports: %w", err)
		}
		lns[i], addrs[i] = ln, ln.Addr().String()
	}
	return addrs, nil
}

// rankEnv is the environment of a rank process: this one's, with
// GOMAXPROCS=1 unless the user set it. A host process runs one allreduce
// loop; with P of them and a switch sharing a few cores, more threads per
// process only spin and steal each other's time.
func rankEnv() []string {
	env := os.Environ()
	if _, ok := os.LookupEnv("GOMAXPROCS"); !ok {
		env = append(env, "GOMAXPROCS="+rankGOMAXPROCS())
	}
	return env
}

// rankGOMAXPROCS is the GOMAXPROCS of every rank process, as the table
// says it: the user's, or 1.
func rankGOMAXPROCS() string {
	if v, ok := os.LookupEnv("GOMAXPROCS"); ok {
		return v
	}
	return "1"
}

// shareBox gives this process, which runs the switch and the relays while
// up to ranks rank processes (GOMAXPROCS=1 each, rankEnv) share the box
// with it, the CPUs the ranks leave: NumCPU − ranks, at least one, unless
// the user set GOMAXPROCS. More threads than that only take the ranks'
// CPUs and wake each other across them: on 2 CPUs with 8 ranks, P = 8,
// 16 MiB in 1 KiB packets, the switch took 502 ms with 2 and 365–380 ms
// with 1, the fan-out relay 346–370 and 285–311. It returns the undo.
func shareBox(ranks int) (undo func()) {
	if _, ok := os.LookupEnv("GOMAXPROCS"); ok {
		return func() {}
	}
	prev := runtime.GOMAXPROCS(max(1, runtime.NumCPU()-ranks))
	return func() { runtime.GOMAXPROCS(prev) }
}
