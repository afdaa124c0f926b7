package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"
)

// Run measures c: it joins the ranks, runs c.Warmup then c.Iters calls
// (each filled, timed and checked), and summarises the measured ones.
func Run(ctx context.Context, c Config) (*Result, error) {
	m, err := start(ctx, c)
	if err != nil {
		return nil, err
	}
	defer m.close()
	if err := m.run(ctx); err != nil {
		return nil, err
	}
	return m.result(), nil
}

// measurement is one configuration's calls on its joined ranks.
type measurement struct {
	c       Config
	ranks   ranks
	p       *payload
	waited  []time.Duration // each local rank's last call, from its own start
	times   []float64       // the measured calls, seconds
	cpu     cpuSpan         // this process over the measured calls alone (Result.RanksUserS)
	partial int             // bounded time: partial blocks over the measured calls
	missed  int             // and the contributions they missed
	// before and after are the ranks' counters around the measured calls.
	before, after []traffic
	// settle, when set, runs just before each of those readings: it waits
	// for the traffic of the calls before it to end (the tree's link
	// counters).
	settle func()
	// barrier, in a rank process of Procs, starts each call when every
	// rank is ready for it, and its checking when every rank has finished
	// it (barrier.go).
	barrier *rankBarrier
}

// start validates c and joins its ranks (join).
func start(ctx context.Context, c Config) (*measurement, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	r, err := join(ctx, c)
	if err != nil {
		return nil, err
	}
	m := &measurement{c: c, ranks: r, p: newPayload(c)}
	m.waited = make([]time.Duration, len(m.p.local))
	if c.Ranks == 0 {
		if m.barrier, err = barrierFromEnv(); err != nil {
			r.close()
			return nil, err
		}
	}
	return m, nil
}

func (m *measurement) close() { m.ranks.close() }

// run is the loop every measurement runs: warmup then measured calls, each
// with its inputs filled, timed under the call timeout, and its results
// checked; the counters are read around the measured calls, and the
// row's profile (Config.Profile) taken over them.
func (m *measurement) run(ctx context.Context) (err error) {
	c := m.c
	prof, err := newRowProfile(c.Profile)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, prof.stop()) }()
	for it := range c.Warmup + c.Iters {
		measured := it >= c.Warmup
		if it == c.Warmup {
			m.before = m.read()
		}
		prof.between(func() { m.p.fill(it) })
		if m.barrier != nil {
			if err := m.barrier.wait(); err != nil {
				return fmt.Errorf("call %d: %w", it, err)
			}
		}
		if measured {
			prof.start()
			m.cpu.start()
		}
		el, err := m.call(ctx, it)
		if measured {
			m.cpu.stop()
		}
		if err != nil {
			return fmt.Errorf("call %d: %w", it, err)
		}
		if m.barrier != nil {
			if err := m.barrier.callDone(); err != nil {
				return fmt.Errorf("call %d: %w", it, err)
			}
		}
		var partial, missed int
		prof.between(func() { partial, missed, err = m.p.check(it, m.ranks.contributors) })
		if err != nil {
			return err
		}
		if measured {
			m.times = append(m.times, el.Seconds())
			m.partial, m.missed = m.partial+partial, m.missed+missed
		}
	}
	if err := prof.stop(); err != nil {
		return err
	}
	m.after = m.read()
	if m.barrier != nil {
		return m.barrier.finish()
	}
	return nil
}

func (m *measurement) read() []traffic {
	if m.settle != nil {
		m.settle()
	}
	return m.ranks.traffic()
}

// call runs call it on every local rank at once under the call timeout:
// each rank first waits out its injected delay. It returns the call's
// time: the wall time, or with an injected tail the longest any rank
// waited from its own delayed start (what a straggler costs the others).
func (m *measurement) call(ctx context.Context, it int) (time.Duration, error) {
	cctx, cancel := context.WithTimeout(ctx, m.c.Timeout)
	defer cancel()
	g, gctx := errgroup.WithContext(cctx)
	start := time.Now()
	for i, r := range m.p.local {
		g.Go(func() error {
			m.c.straggle(r, it)
			t0 := time.Now()
			err := m.ranks.reduce(gctx, i, m.p)
			m.waited[i] = time.Since(t0)
			return err
		})
	}
	err := g.Wait()
	el := time.Since(start)
	if m.c.TailRatio > 0 {
		el = slices.Max(m.waited)
	}
	return el, err
}

// straggle waits out rank's injected delay before its call it (tailDelay).
func (c *Config) straggle(rank, it int) {
	if c.TailRatio == 0 {
		return
	}
	time.Sleep(c.tailDelay(rank, it))
}

// tailDelay is rank's delay before its call it, drawn (deterministically
// for the rank and call) from a lognormal with median TailMedian and
// p99/p50 = TailRatio: the injected tail of a bounded-time evaluation.
func (c *Config) tailDelay(rank, it int) time.Duration {
	rng := rand.New(rand.NewPCG(uint64(rank)+1, uint64(it)))
	sigma := math.Log(c.TailRatio) / 2.326 // the 99th percentile of N(0,1)
	return time.Duration(float64(c.TailMedian) * math.Exp(sigma*rng.NormFloat64()))
}

// measured is the sum over the local ranks of the counters' change over
// the measured calls.
func (m *measurement) measured() traffic {
	b, a := sum(m.before), sum(m.after)
	return traffic{tx: a.tx - b.tx, rx: a.rx - b.rx, packetsTx: a.packetsTx - b.packetsTx, packetsRx: a.packetsRx - b.packetsRx,
		retransmits: a.retransmits - b.retransmits, spilled: a.spilled - b.spilled}
}

// result summarises the measured calls.
func (m *measurement) result() *Result {
	c := m.c
	local, world := c.localRanks()
	res := &Result{Ranks: world, Bytes: int64(c.Count * c.DType.Size()), DType: c.DType.String(), Op: c.Op.String(),
		Algo: m.ranks.algo(), Iters: c.Iters, Verified: c.Verify, TailRatio: c.TailRatio,
		Retransmits: int64(sum(m.after).retransmits)}
	if !c.Sparse {
		res.PacketBytes = m.ranks.packetBytes(c.DType)
	}
	if c.Sparse {
		res.Density, res.Storage = c.Density, c.Storage.String()
		if c.Algo == "ring" {
			res.Storage = "host"
		}
	}
	d, iters := m.measured(), int64(c.Iters)
	res.TxBytes, res.RxBytes, res.SpilledPairs = int64(d.tx)/iters, int64(d.rx)/iters, int64(d.spilled)/iters
	if c.Deadline > 0 {
		res.DeadlineMS = float64(c.Deadline) / float64(time.Millisecond)
		res.PartialBlocks = int64(m.partial) / iters
		res.DroppedFraction = float64(m.missed) / float64(c.Iters*len(local)*world*m.ranks.blocks())
	}
	res.RanksUserS, res.RanksSysS = m.cpu.perCall(c.Iters)
	res.summarise(m.times)
	return res
}
