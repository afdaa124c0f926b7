package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/internal/harness"
	"github.com/flare-net/flare/models"
	"github.com/flare-net/flare/wire"
)

// calibration is what `flare model calibrate` measured and predicted.
//
// The in-process harness (harness.Run) is CPU-bound: P host
// goroutines build and submit packets and K core goroutines run the
// handlers, all on the same G = GOMAXPROCS CPUs. So its packets/s follow
// from what a packet costs (the utilization law, X = U/D):
//
//	predicted = min(A/D, K/τ)
//
// where
//
//   - τ is the handler's time per packet, the unit's own measurement
//     (hpu.Stats.TauNs) with the harness on one CPU, where nothing runs in
//     parallel and no other goroutine interrupts a handler;
//   - D = τ + h is the CPU time per packet with the harness on G CPUs
//     (the process's CPU time over the packets of a calibration run): the
//     handler, and h for the hosts, the scheduler and what running on
//     several CPUs adds (waking a core on another CPU, cache lines moving
//     between CPUs: D is 20–90% above τ + h₁ on this machine's two);
//   - A is the CPUs the process gets now, min(G, measured by spinning): on
//     a machine shared with other work it is less than G. The harness,
//     which sleeps and wakes, then gets less than spinning goroutines do,
//     and the prediction runs high;
//   - K/τ: the K cores cannot do better.
//
// Two simpler predictions are printed next to it: the naive min(K, G)/τ,
// which takes the hosts as free (several times too high), and
// min(A/(τ + h₁), K/τ) with the cost measured on one CPU (too high by the
// parallel overhead when A > 1; the prediction where the process CPU time
// cannot be read).
type calibration struct {
	Algo        string  `json:"algo"`
	Bytes       int     `json:"bytes"`
	Hosts       int     `json:"hosts"`
	DType       string  `json:"dtype"`
	Cores       int     `json:"cores"`      // K
	GOMAXPROCS  int     `json:"gomaxprocs"` // G
	CPUs        float64 `json:"cpus"`       // A: CPUs available, by spinning
	Runs        int     `json:"runs"`
	Generations int     `json:"generations"` // allreduces per run
	TauNs       float64 `json:"tau_ns"`      // τ: handler time per packet, one CPU
	TauCycles   float64 `json:"tau_cycles"`  // the same handlers' PsPIN cycles per packet
	HostNs1     float64 `json:"host_ns_one_cpu"`
	CostNs      float64 `json:"cost_ns"` // D: CPU time per packet on G CPUs (0: not measurable here)
	HostNs      float64 `json:"host_ns"` // h = D − τ
	NaivePPS    float64 `json:"naive_pps"`
	SerialPPS   float64 `json:"one_cpu_cost_pps"`
	Predicted   float64 `json:"predicted_pps"`
	Measured    float64 `json:"measured_pps"`
	MeasuredMin float64 `json:"measured_min_pps"`
	MeasuredMax float64 `json:"measured_max_pps"`
	Error       float64 `json:"error"` // median over the rounds of (predicted − measured) / measured
}

// calibrateConfig is what the flags ask for.
type calibrateConfig struct {
	harness harness.Config
	runs    int
	runTime time.Duration // target wall time of one measured run
}

func runModelCalibrate(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlags("model calibrate", "Measure this machine's real per-packet handler time tau through the real-time processing\n"+
		"unit (the in-process harness on one CPU, tau from the unit's statistics), predict the\n"+
		"harness's packets/s on GOMAXPROCS CPUs, run it and print predicted against measured.\n"+
		"predicted = min(A/D, K/tau): D = tau + h is a packet's CPU time on GOMAXPROCS CPUs (h: the\n"+
		"hosts, the scheduler, and the cost of running on several CPUs), A the CPUs this process gets\n"+
		"(GOMAXPROCS, less what other work takes), K the unit's cores. --runs rounds each measure all\n"+
		"of these and the harness in turn; each figure, and the error, is the median over the rounds.",
		"  flare model calibrate\n"+
			"  flare model calibrate --algo tree --bytes 256KiB --hosts 16 --format json\n", stdout)
	algo := fs.String("algo", "auto", "design: auto (the paper's choice by size), single, multi2, multi4 or tree")
	size := fs.String("bytes", "1MiB", "vector per host")
	hosts := fs.Int("hosts", 8, "hosts P")
	dtype := fs.String("dtype", "int32", "element type")
	runs := fs.Int("runs", 5, "rounds, each measuring A, tau, D and the packets/s once; the medians are reported")
	runTime := fs.Duration("run-time", 150*time.Millisecond, "wall time of one run (whole allreduces are repeated to fill it)")
	format := fs.String("format", "table", "table or json")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkFormat(*format, "table", "json"); err != nil {
		return err
	}
	var c calibrateConfig
	h := &c.harness
	d, err := models.ParseDesign(*algo)
	if err != nil {
		return flagError("--algo", err)
	}
	h.Algo, h.Buffers = d.Algo, d.Buffers
	if h.DType, err = wire.ParseDType(*dtype); err != nil {
		return flagError("--dtype", err)
	}
	n, err := sizeFlag("bytes", *size)
	if err != nil {
		return err
	}
	if es := int64(h.DType.Size()); n%es != 0 || n > 64<<20 {
		return flagError("--bytes", fmt.Errorf("%s: must be a multiple of the %s size (%d) up to 64MiB", *size, h.DType, es))
	}
	if *hosts < 2 || *hosts > 256 {
		return flagError("--hosts", fmt.Errorf("%d: must be in 2..256", *hosts))
	}
	if *runs < 1 || *runs > 100 {
		return flagError("--runs", fmt.Errorf("%d: must be in 1..100", *runs))
	}
	if *runTime <= 0 || *runTime > time.Minute {
		return flagError("--run-time", fmt.Errorf("%v: must be in (0, 1m]", *runTime))
	}
	h.Hosts, h.Op, h.Elements, h.Window = *hosts, wire.OpSum, int(n)/h.DType.Size(), 64
	c.runs, c.runTime = *runs, *runTime
	cal, err := calibrate(ctx, c)
	if err != nil {
		return err
	}
	if *format == "json" {
		return writeJSONLines(stdout, []calibration{cal})
	}
	return writeCalibration(stdout, cal)
}

// calibrate predicts the harness's packets/s and measures it, c.runs
// rounds in turn. Every figure is the median over the rounds, and the
// error is the median of each round's error: a round's inputs and its
// measurement are a fraction of a second apart, so a change in the
// machine's load moves both.
func calibrate(ctx context.Context, c calibrateConfig) (calibration, error) {
	h := c.harness
	k := hpu.Config{}.WithDefaults()
	g := runtime.GOMAXPROCS(0)
	inputs := calibrationInputs(h.DType, h.Hosts, h.Elements)
	cal := calibration{
		Bytes: h.Elements * h.DType.Size(), Hosts: h.Hosts, DType: h.DType.String(),
		Cores: k.Clusters * k.CoresPerCluster, GOMAXPROCS: g, Runs: c.runs,
	}
	// A first run warms up, a second sizes the runs to c.runTime.
	h.Generations = 1
	var res *harness.Result
	for range 2 {
		var err error
		if res, err = harness.Run(ctx, h, inputs); err != nil {
			return cal, err
		}
	}
	cal.Algo = models.Design{Algo: res.Algo, Buffers: res.Buffers}.String()
	h.Generations = max(1, int(math.Ceil(c.runTime.Seconds()/res.Elapsed.Seconds())))
	cal.Generations = h.Generations

	K := float64(cal.Cores)
	var rounds []calRound
	for range c.runs {
		r, err := calibrationRound(ctx, h, inputs, g)
		if err != nil {
			return cal, err
		}
		r.serial = math.Min(r.cpus/(r.tauNs+r.hostNs1), K/r.tauNs) * 1e9
		r.predicted = r.serial
		if r.costNs > 0 {
			r.predicted = math.Min(r.cpus/r.costNs, K/r.tauNs) * 1e9
		}
		rounds = append(rounds, r)
	}
	med := func(f func(calRound) float64) float64 {
		x := make([]float64, len(rounds))
		for i, r := range rounds {
			x[i] = f(r)
		}
		return medianFloat(x)
	}
	cal.CPUs = med(func(r calRound) float64 { return r.cpus })
	cal.TauNs = med(func(r calRound) float64 { return r.tauNs })
	cal.TauCycles = med(func(r calRound) float64 { return r.tauCycles })
	cal.HostNs1 = med(func(r calRound) float64 { return r.hostNs1 })
	if cal.CostNs = med(func(r calRound) float64 { return r.costNs }); cal.CostNs > 0 {
		cal.HostNs = cal.CostNs - cal.TauNs
	}
	cal.NaivePPS = math.Min(K, float64(g)) / cal.TauNs * 1e9
	cal.SerialPPS = med(func(r calRound) float64 { return r.serial })
	cal.Predicted = med(func(r calRound) float64 { return r.predicted })
	cal.Measured = med(func(r calRound) float64 { return r.pps })
	cal.MeasuredMin = slices.MinFunc(rounds, func(a, b calRound) int { return cmpFloat(a.pps, b.pps) }).pps
	cal.MeasuredMax = slices.MaxFunc(rounds, func(a, b calRound) int { return cmpFloat(a.pps, b.pps) }).pps
	cal.Error = med(func(r calRound) float64 { return (r.predicted - r.pps) / r.pps })
	return cal, nil
}

// calRound is one round of calibrate.
type calRound struct {
	cpus              float64 // A
	tauNs, tauCycles  float64 // τ, one CPU
	hostNs1           float64 // h₁, one CPU
	costNs            float64 // D, G CPUs; 0 where the process CPU time cannot be read
	serial, predicted float64
	pps               float64 // measured
}

// calibrationRound measures A, then τ and h₁ on one CPU, then D on g
// CPUs, then the packets/s on g CPUs, each run a separate harness run.
func calibrationRound(ctx context.Context, h harness.Config, inputs [][]byte, g int) (calRound, error) {
	var r calRound
	r.cpus = availableCPUs(g, 30*time.Millisecond)
	// On one CPU nothing runs in parallel and the CPU never idles (the
	// harness is CPU-bound), so the wall time per packet is τ + h₁.
	prev := runtime.GOMAXPROCS(1)
	res, err := harness.Run(ctx, h, inputs)
	runtime.GOMAXPROCS(prev)
	if err != nil {
		return r, err
	}
	r.tauNs, r.tauCycles = res.HPU.TauNs(), res.HPU.TauCycles()
	r.hostNs1 = float64(res.Elapsed.Nanoseconds())/float64(res.Packets) - r.tauNs

	cpu0, ok := processCPU()
	if res, err = harness.Run(ctx, h, inputs); err != nil {
		return r, err
	}
	if cpu1, ok1 := processCPU(); ok && ok1 {
		r.costNs = float64((cpu1 - cpu0).Nanoseconds()) / float64(res.Packets)
	}

	if res, err = harness.Run(ctx, h, inputs); err != nil {
		return r, err
	}
	r.pps = float64(res.Packets) / res.Elapsed.Seconds()
	return r, nil
}

// calibrationInputs are P vectors of small values (sums never overflow,
// and float sums stay exact).
func calibrationInputs(dt wire.DType, hosts, elems int) [][]byte {
	in := make([][]byte, hosts)
	es := dt.Size()
	for i := range in {
		b := make([]byte, elems*es)
		for j := 0; j < elems; j++ {
			putValue(dt, b[j*es:], int64((i+j)%7))
		}
		in[i] = b
	}
	return in
}

func medianFloat(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// availableCPUs estimates how many of g CPUs this process gets now: g
// goroutines spinning together against one alone, for d each.
func availableCPUs(g int, d time.Duration) float64 {
	one := spinRounds(1, d)
	if g == 1 || one == 0 {
		return 1
	}
	return math.Max(1, math.Min(float64(g), spinRounds(g, d)/one))
}

var spinSink atomic.Uint64

// spinRounds runs n goroutines of pure arithmetic for d and returns their total
// rounds per second.
func spinRounds(n int, d time.Duration) float64 {
	var stop atomic.Bool
	var rounds atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x, r := uint64(1), int64(0)
			for !stop.Load() {
				for range 1024 {
					x = x*6364136223846793005 + 1442695040888963407
				}
				r++
			}
			spinSink.Add(x)
			rounds.Add(r)
		}()
	}
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	return float64(rounds.Load()) / time.Since(start).Seconds()
}

func writeCalibration(w io.Writer, c calibration) error {
	fmt.Fprintf(w, "# %s, %d hosts x %s of %s, window 64, K = %d cores, GOMAXPROCS %d; %d rounds, %d allreduces per run\n",
		c.Algo, c.Hosts, formatSize(int64(c.Bytes)), c.DType, c.Cores, c.GOMAXPROCS, c.Runs, c.Generations)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "handler time tau\t%.0f ns/packet\tthe unit's statistics, one CPU (%.0f PsPIN cycles)\n", c.TauNs, c.TauCycles)
	fmt.Fprintf(tw, "host time h1\t%.0f ns/packet\tone CPU: wall time per packet - tau\n", c.HostNs1)
	if c.CostNs > 0 {
		fmt.Fprintf(tw, "cost D = tau + h\t%.0f ns/packet\tprocess CPU time per packet on %d CPUs (h = %.0f ns)\n", c.CostNs, c.GOMAXPROCS, c.HostNs)
	} else {
		fmt.Fprintf(tw, "cost D\tunknown\tthe process CPU time cannot be read here: predicted = one-CPU cost\n")
	}
	fmt.Fprintf(tw, "CPUs available A\t%.2f\tof GOMAXPROCS %d, by spinning\n", c.CPUs, c.GOMAXPROCS)
	fmt.Fprintf(tw, "naive\t%.0f packets/s\tmin(K, GOMAXPROCS)/tau: the hosts taken as free\n", c.NaivePPS)
	fmt.Fprintf(tw, "one-CPU cost\t%.0f packets/s\tmin(A/(tau + h1), K/tau)\n", c.SerialPPS)
	fmt.Fprintf(tw, "predicted\t%.0f packets/s\tmin(A/D, K/tau)\n", c.Predicted)
	fmt.Fprintf(tw, "measured\t%.0f packets/s\tmedian (%.0f..%.0f)\n", c.Measured, c.MeasuredMin, c.MeasuredMax)
	fmt.Fprintf(tw, "error\t%+.1f%%\t(predicted - measured) / measured, the median of the rounds'\n", 100*c.Error)
	return tw.Flush()
}
