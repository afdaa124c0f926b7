package bench

import (
	"cmp"
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
	"github.com/flare-net/flare/internal/units"
	"github.com/flare-net/flare/models"
	"github.com/flare-net/flare/wire"
)

// Calibration is what `flare model calibrate` measured and predicted.
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
type Calibration struct {
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
	// U: the CPUs the process kept busy in the measured runs (its CPU
	// time over their wall time; 0 where it cannot be read). The utilization
	// law gives measured = U/D, so a prediction above the measurement with
	// U below A is the harness idling, not a wrong D.
	BusyCPUs float64 `json:"busy_cpus"`
	Error    float64 `json:"error"` // median over the rounds of (predicted − measured) / measured
	// The fastest and slowest time a cache line took between two CPUs
	// (lineTime), read before each round and after the last (0 with one
	// CPU). On a VM whose vCPUs moved apart during the calibration, D
	// moved between its runs with it.
	LineNSMin float64 `json:"cpu_line_ns_min"`
	LineNSMax float64 `json:"cpu_line_ns_max"`
}

// CalibrateConfig is one calibration: the harness run (hosts, design,
// vector), the rounds, and the wall time of one measured run.
type CalibrateConfig struct {
	Harness harness.Config
	Runs    int
	RunTime time.Duration
}

// Validate names the first field out of range, and the range.
func (c CalibrateConfig) Validate() error {
	switch {
	case c.Harness.Hosts < 2 || c.Harness.Hosts > 256:
		return fmt.Errorf("CalibrateConfig.Harness.Hosts = %d: must be in 2..256", c.Harness.Hosts)
	case c.Runs < 1 || c.Runs > 100:
		return fmt.Errorf("CalibrateConfig.Runs = %d: must be in 1..100", c.Runs)
	case c.RunTime <= 0 || c.RunTime > time.Minute:
		return fmt.Errorf("CalibrateConfig.RunTime = %v: must be in (0, 1m]", c.RunTime)
	}
	return nil
}

// Calibrate predicts the harness's packets/s and measures it, c.Runs
// rounds in turn. Every figure is the median over the rounds, and the
// error is the median of each round's error: a round's inputs and its
// measurement are a fraction of a second apart, so a change in the
// machine's load moves both.
func Calibrate(ctx context.Context, c CalibrateConfig) (Calibration, error) {
	if err := c.Validate(); err != nil {
		return Calibration{}, err
	}
	h := c.Harness
	k := hpu.Config{}.WithDefaults()
	g := runtime.GOMAXPROCS(0)
	inputs := calibrationInputs(h.DType, h.Hosts, h.Elements)
	cal := Calibration{
		Bytes: h.Elements * h.DType.Size(), Hosts: h.Hosts, DType: h.DType.String(),
		Cores: k.Clusters * k.CoresPerCluster, GOMAXPROCS: g, Runs: c.Runs,
	}
	// A first run warms up, a second sizes the runs to c.RunTime.
	h.Generations = 1
	var res *harness.Result
	for range 2 {
		var err error
		if res, err = harness.Run(ctx, h, inputs); err != nil {
			return cal, err
		}
	}
	cal.Algo = models.Design{Algo: res.Algo, Buffers: res.Buffers}.String()
	h.Generations = max(1, int(math.Ceil(c.RunTime.Seconds()/res.Elapsed.Seconds())))
	cal.Generations = h.Generations

	var rounds []calRound
	var lines []float64
	for range c.Runs {
		lines = append(lines, lineTime())
		r, err := calibrationRound(ctx, h, inputs, g)
		if err != nil {
			return cal, err
		}
		r.predict(float64(cal.Cores))
		rounds = append(rounds, r)
	}
	cal.summarise(rounds, append(lines, lineTime()))
	return cal, nil
}

// predict sets the round's predictions for K cores: the one-CPU cost's,
// min(A/(τ + h₁), K/τ), and min(A/D, K/τ) where D was measured (the
// one-CPU cost's where it was not).
func (r *calRound) predict(K float64) {
	r.serial = math.Min(r.cpus/(r.tauNs+r.hostNs1), K/r.tauNs) * 1e9
	r.predicted = r.serial
	if r.costNs > 0 {
		r.predicted = math.Min(r.cpus/r.costNs, K/r.tauNs) * 1e9
	}
}

// summarise sets the calibration's figures from its rounds (each the
// median over them, the measured range, the median error) and the cache
// line times read before each round and after the last.
func (cal *Calibration) summarise(rounds []calRound, lines []float64) {
	K, g := float64(cal.Cores), cal.GOMAXPROCS
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
	cal.MeasuredMin = slices.MinFunc(rounds, func(a, b calRound) int { return cmp.Compare(a.pps, b.pps) }).pps
	cal.MeasuredMax = slices.MaxFunc(rounds, func(a, b calRound) int { return cmp.Compare(a.pps, b.pps) }).pps
	cal.BusyCPUs = med(func(r calRound) float64 { return r.busy })
	cal.Error = med(func(r calRound) float64 { return (r.predicted - r.pps) / r.pps })
	cal.LineNSMin, cal.LineNSMax = slices.Min(lines), slices.Max(lines)
}

// calRound is one round of calibrate.
type calRound struct {
	cpus              float64 // A
	tauNs, tauCycles  float64 // τ, one CPU
	hostNs1           float64 // h₁, one CPU
	costNs            float64 // D, G CPUs; 0 where the process CPU time cannot be read
	serial, predicted float64
	pps               float64 // measured
	busy              float64 // U, the measured run; 0 where the process CPU time cannot be read
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

	cpu0, ok := ProcessCPU()
	if res, err = harness.Run(ctx, h, inputs); err != nil {
		return r, err
	}
	if cpu1, ok1 := ProcessCPU(); ok && ok1 {
		r.costNs = float64((cpu1 - cpu0).Nanoseconds()) / float64(res.Packets)
	}

	cpu0, ok = ProcessCPU()
	if res, err = harness.Run(ctx, h, inputs); err != nil {
		return r, err
	}
	r.pps = float64(res.Packets) / res.Elapsed.Seconds()
	if cpu1, ok1 := ProcessCPU(); ok && ok1 {
		r.busy = (cpu1 - cpu0).Seconds() / res.Elapsed.Seconds()
	}
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

// WriteCalibration writes a calibration as the table of `flare model
// calibrate`.
func WriteCalibration(w io.Writer, c Calibration) error {
	fmt.Fprintf(w, "# %s, %d hosts x %s of %s, window 64, K = %d cores, GOMAXPROCS %d; %d rounds, %d allreduces per run\n",
		c.Algo, c.Hosts, units.FormatSize(int64(c.Bytes)), c.DType, c.Cores, c.GOMAXPROCS, c.Runs, c.Generations)
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
	if c.BusyCPUs > 0 {
		fmt.Fprintf(tw, "CPUs busy U\t%.2f\tthe measured runs' process CPU time over their wall time (A - U: the harness idling)\n", c.BusyCPUs)
	}
	fmt.Fprintf(tw, "error\t%+.1f%%\t(predicted - measured) / measured, the median of the rounds'\n", 100*c.Error)
	if c.LineNSMax > 0 {
		fmt.Fprintf(tw, "cache line between CPUs\t%.0f..%.0f ns\tbefore each round and after: where a VM's vCPUs moved apart, D moved with them\n", c.LineNSMin, c.LineNSMax)
	}
	return tw.Flush()
}
