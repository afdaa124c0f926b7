package testbed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/flare-net/flare/hostlib"
	"github.com/flare-net/flare/internal/bench"
)

// Check reports what this machine lacks for a run with loss (or without):
// root, and the tools ip (iproute2), tc (iproute2), sysctl (procps) and,
// for loss, nft (nftables). The error names every missing piece.
func Check(loss bool) error {
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root (network namespaces, veth pairs and qdiscs need CAP_NET_ADMIN; run as root)")
	}
	tools := [][2]string{{"ip", "iproute2"}, {"tc", "iproute2"}, {"sysctl", "procps"}}
	if loss {
		tools = append(tools, [2]string{"nft", "nftables"})
	}
	for _, t := range tools {
		if _, err := exec.LookPath(t[0]); err != nil {
			missing = append(missing, fmt.Sprintf("%s (Debian package %s)", t[0], t[1]))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("testbed: this machine lacks %s", strings.Join(missing, ", "))
	}
	return nil
}

// Run builds the cluster, runs every path of cfg on it (one process per
// host, in its namespace), and tears everything down before it returns,
// on success, error or a cancelled ctx alike. The rows come in path
// order (the sparse paths once per density), vs_ring filled from the
// ring's row.
func Run(ctx context.Context, cfg Config) (rows []Row, err error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := Check(cfg.Loss > 0); err != nil {
		return nil, err
	}
	for _, ns := range SweepStale(Kind) {
		cfg.logf("deleted namespace %s, left by a run that is gone", ns)
	}
	c, err := build(cfg)
	defer func() {
		if terr := c.teardown(); terr != nil {
			err = errors.Join(err, fmt.Errorf("testbed teardown: %w", terr))
		}
	}()
	if err != nil {
		return nil, fmt.Errorf("testbed: building the cluster: %w", err)
	}
	cfg.logf("built %s: %d namespaces, %d links of %s (prefix %s)", cfg.Shape(), len(c.made), len(c.links), FormatRate(cfg.LinkBps), c.prefix)
	if err := c.startDaemons(ctx); err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}
	job := uint32(100)
	for _, path := range cfg.Paths {
		densities := []float64{0}
		if path == PathSparse || path == PathHostSparse {
			densities = cfg.Densities
		}
		for _, d := range densities {
			job++
			r, err := c.runPath(ctx, path, d, job)
			if err != nil {
				return rows, fmt.Errorf("testbed %s %s: %w", cfg.Shape(), path, err)
			}
			cfg.logf("%s density %g: median %.2f ms, ideal %.2f ms (%.2f×), cpu busy %.2f, switch cpu %.2f", path, d,
				r.MedianS*1e3, r.IdealS*1e3, r.OfIdeal, r.CPUBusy, r.SwitchCPU)
			rows = append(rows, r)
		}
	}
	setVsRing(rows)
	return rows, nil
}

// setVsRing fills every row's vs_ring from the ring row (dense paths) or
// the host sparse row of the same density (sparse paths).
func setVsRing(rows []Row) {
	base := map[float64]float64{}
	for _, r := range rows {
		if r.Path == PathRing || r.Path == PathHostSparse {
			base[r.Density] = r.MedianS
		}
	}
	for i := range rows {
		if b, ok := base[rows[i].Density]; ok && rows[i].MedianS > 0 {
			rows[i].VsRing = b / rows[i].MedianS
		}
	}
}

func (c *Config) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, "testbed: "+format+"\n", args...)
	}
}

// hostResult is one host's `flare allreduce --json` row (bench.Result,
// the type that prints it) and the CPU its process used.
type hostResult struct {
	bench.Result
	cpu float64 // CPU seconds per second the process used over its life
}

// hostCPU is the most CPU seconds per second any host process used.
func hostCPU(results []hostResult) float64 {
	m := 0.0
	for _, h := range results {
		m = max(m, h.cpu)
	}
	return m
}

// hostRun is how one launch of the hosts calls: the verifying launch
// makes one checked call, the timed one its warmup and iterations
// unchecked.
type hostRun struct {
	iters, warmup int
	verify        bool
}

// hostArgs is `flare allreduce` for rank r of one path.
func (c *cluster) hostArgs(path string, density float64, job uint32, token uint64, r int, hr hostRun) []string {
	cfg := c.cfg
	args := []string{cfg.Exe, "allreduce", "--switch", c.switches, "--rank", strconv.Itoa(r), "--world", strconv.Itoa(cfg.World()),
		"--job", strconv.FormatUint(uint64(job), 10), "--token", strconv.FormatUint(token, 10),
		"--count", strconv.FormatInt(cfg.Bytes/int64(cfg.DType.Size()), 10), "--dtype", cfg.DType.String(),
		"--iters", strconv.Itoa(hr.iters), "--warmup", strconv.Itoa(hr.warmup), "--timeout", cfg.Timeout.String(), "--json"}
	if hr.verify {
		args = append(args, "--verify")
	}
	if path == PathRing || path == PathHostSparse {
		peers := make([]string, cfg.World())
		for g := range peers {
			peers[g] = hostLinkNet(g) + "2:" + ringPort
		}
		args = append(args, "--algo", "ring", "--peers", strings.Join(peers, ","))
	}
	if path == PathSparse || path == PathHostSparse {
		args = append(args, "--sparse", "--density", strconv.FormatFloat(density, 'g', -1, 64),
			"--overlap", strconv.FormatFloat(cfg.Overlap, 'g', -1, 64))
	}
	if cfg.Loss > 0 {
		args = append(args, "--no-offload")
	}
	return args
}

// runPath runs one allreduce path on every host at once, each host a
// process in its namespace: first one call that checks every element on
// every host, then the timed calls unchecked. Checking costs each host
// the hashing of all P inputs, and on a few shared cores the hosts that
// check late hold up the others' next call, which then times the
// checking, not the links (P = 8, 16 MiB at 1 Gbit/s: 8.6× ideal
// checked, against 2.2× for the ring). The row takes its times, the
// links' counters and the CPU use from the timed launch, Verified from
// the checked one.
func (c *cluster) runPath(ctx context.Context, path string, density float64, job uint32) (Row, error) {
	checked, err := c.launch(ctx, path, density, job, hostRun{iters: 1, verify: true})
	if err != nil {
		return Row{}, fmt.Errorf("verified call: %w", err)
	}
	before, err := c.linkStats()
	if err != nil {
		return Row{}, err
	}
	cpu0 := takeCPU(c.daemonPIDs())
	results, err := c.launch(ctx, path, density, job+1<<16, hostRun{iters: c.cfg.Iters, warmup: c.cfg.Warmup})
	cpuHosts := hostCPU(results)
	if err != nil {
		return Row{}, err
	}
	cpu1 := takeCPU(c.daemonPIDs())
	after, err := c.linkStats()
	if err != nil {
		return Row{}, err
	}
	row := c.row(path, density, results)
	row.Verified = true
	for _, h := range checked {
		row.Verified = row.Verified && h.Verified
	}
	row.CPUBusy, row.SwitchCPU, row.SwitchThreadCPU = cpuUse(cpu0, cpu1)
	row.HostCPU = cpuHosts
	c.linkRow(&row, before, after)
	c.cfg.ideal(&row, c.cfg.modelRows(density))
	row.CPUBound = row.cpuBound()
	return row, nil
}

// launch starts every host's process for one job and collects their
// results.
func (c *cluster) launch(ctx context.Context, path string, density float64, job uint32, hr hostRun) ([]hostResult, error) {
	token := hostlib.NewToken()
	results := make([]hostResult, c.cfg.World())
	g, gctx := errgroup.WithContext(ctx)
	for r := range results {
		g.Go(func() error {
			var out, errb bytes.Buffer
			cmd := commandIn(gctx, c.hostNS[r], c.hostArgs(path, density, job, token, r, hr)...)
			cmd.Stdout, cmd.Stderr = &out, &errb
			cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
			start := time.Now()
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("host %d: %w: %s", r, err, lastLines(errb.String(), 5))
			}
			if wall := time.Since(start).Seconds(); wall > 0 {
				ps := cmd.ProcessState
				results[r].cpu = (ps.UserTime() + ps.SystemTime()).Seconds() / wall
			}
			if err := json.Unmarshal(out.Bytes(), &results[r]); err != nil {
				return fmt.Errorf("host %d: reading its result %q: %w", r, out.String(), err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("stopped: %w", context.Cause(ctx))
		}
		return nil, err
	}
	return results, nil
}

// row folds the hosts' results: the slowest host's times, the sums of
// the counts, verified only if every host verified.
func (c *cluster) row(path string, density float64, results []hostResult) Row {
	a := results[0]
	r := Row{Path: path, Ranks: a.Ranks, Bytes: a.Bytes, DType: a.DType, Op: a.Op, Algo: a.Algo, Iters: a.Iters, Rounds: 1,
		Density: density, Storage: a.Storage, LinkBytesFrom: "tc", Topology: c.cfg.Shape(),
		LinkBps: c.cfg.LinkBps, PacketBytes: c.cfg.PacketBytes, Window: c.cfg.Window, Loss: c.cfg.Loss}
	if c.cfg.Tree() {
		r.UplinkBps = c.cfg.UplinkBps
	}
	for _, h := range results {
		r.MedianS, r.P99S = max(r.MedianS, h.MedianS), max(r.P99S, h.P99S)
		r.Retransmits += h.Retransmits
		r.TxBytes += h.TxBytes
		r.RxBytes += h.RxBytes
		r.SpilledPairs += h.SpilledPairs
		r.RanksUserS += h.RanksUserS
		r.RanksSysS += h.RanksSysS
	}
	if r.MedianS > 0 {
		r.AlgbwGBps = float64(r.Bytes) / r.MedianS / 1e9
		r.BusbwGBps = bench.Busbw(r.AlgbwGBps, r.Ranks)
	}
	return r
}

// linkStats reads both directions' counters of every link, and with loss
// what each end's loss rule dropped.
func (c *cluster) linkStats() ([][2]qdiscStats, error) {
	s := make([][2]qdiscStats, len(c.links))
	for i, l := range c.links {
		for d, e := range []end{l.a, l.b} {
			q, err := egress(e.ns, e.dev)
			if err != nil {
				return nil, err
			}
			if c.cfg.Loss > 0 {
				if q.Lost, err = lossDrops(e.ns, e.dev); err != nil {
					return nil, err
				}
			}
			s[i][d] = q
		}
	}
	return s, nil
}

// linkRow fills the row's per-link traffic and the host links' means.
func (c *cluster) linkRow(r *Row, before, after [][2]qdiscStats) {
	calls := float64(c.cfg.Iters + c.cfg.Warmup)
	hosts := float64(c.cfg.World())
	for i, l := range c.links {
		up := float64(after[i][0].Bytes-before[i][0].Bytes) / calls
		down := float64(after[i][1].Bytes-before[i][1].Bytes) / calls
		st := LinkStat{Link: l.name, UpBytes: up, DownBytes: down,
			Drops: after[i][0].Drops - before[i][0].Drops + after[i][1].Drops - before[i][1].Drops,
			Lost:  after[i][0].Lost - before[i][0].Lost + after[i][1].Lost - before[i][1].Lost}
		if r.MedianS > 0 {
			st.UpUtil, st.DownUtil = up*8/(l.rateBps*r.MedianS), down*8/(l.rateBps*r.MedianS)
		}
		r.Links = append(r.Links, st)
		if i < c.cfg.World() {
			r.HostUpBytes += up / hosts
			r.HostDownBytes += down / hosts
		}
	}
}

// lastLines is the last n lines of s, for an error message.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
