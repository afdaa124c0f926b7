package bench

import (
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flare-net/flare/internal/harness"
)

// A round's predictions: the one-CPU cost's min(A/(τ + h₁), K/τ), and
// min(A/D, K/τ) where D was measured, each bound by the cores where
// they are the fewer.
func TestCalibrationPredict(t *testing.T) {
	for _, tc := range []struct {
		r                 calRound
		K                 float64
		serial, predicted float64
	}{
		{calRound{cpus: 2, tauNs: 100, hostNs1: 400, costNs: 300}, 4, 4e6, 2e9 / 300},
		{calRound{cpus: 2, tauNs: 100, hostNs1: 400}, 4, 4e6, 4e6}, // D not readable
		{calRound{cpus: 2, tauNs: 1000, costNs: 600}, 1, 1e6, 1e6}, // the one core binds
	} {
		r := tc.r
		r.predict(tc.K)
		if !closeTo(r.serial, tc.serial) || !closeTo(r.predicted, tc.predicted) {
			t.Errorf("%+v, K = %v: one-CPU %v, predicted %v packets/s; want %v, %v", tc.r, tc.K, r.serial, r.predicted, tc.serial, tc.predicted)
		}
	}
}

// closeTo reports whether got is want within a part in 10¹².
func closeTo(got, want float64) bool { return math.Abs(got-want) <= 1e-12*math.Abs(want) }

// A calibration's figures are the medians over its rounds; its error the
// median of the rounds' errors (here 0.2, where the medians' own would
// give 0.125); the measured range the rounds' extremes; h = D − τ.
func TestCalibrationSummarise(t *testing.T) {
	rounds := []calRound{
		{cpus: 1.5, tauNs: 100, tauCycles: 1000, hostNs1: 300, costNs: 250, serial: 10, predicted: 18, pps: 16, busy: 1.2},
		{cpus: 2, tauNs: 120, tauCycles: 1100, hostNs1: 280, costNs: 260, serial: 30, predicted: 12, pps: 10, busy: 1.6},
		{cpus: 1.8, tauNs: 90, tauCycles: 1050, hostNs1: 320, costNs: 240, serial: 20, predicted: 30, pps: 20, busy: 1.4},
	}
	cal := Calibration{Cores: 8, GOMAXPROCS: 2}
	cal.summarise(rounds, []float64{50, 30, 70, 40})
	for _, f := range []struct {
		name      string
		got, want float64
	}{
		{"CPUs", cal.CPUs, 1.8}, {"TauNs", cal.TauNs, 100}, {"TauCycles", cal.TauCycles, 1050}, {"HostNs1", cal.HostNs1, 300},
		{"CostNs", cal.CostNs, 250}, {"HostNs", cal.HostNs, 150}, {"NaivePPS", cal.NaivePPS, 2e7}, {"SerialPPS", cal.SerialPPS, 20},
		{"Predicted", cal.Predicted, 18}, {"Measured", cal.Measured, 16}, {"MeasuredMin", cal.MeasuredMin, 10},
		{"MeasuredMax", cal.MeasuredMax, 20}, {"BusyCPUs", cal.BusyCPUs, 1.4}, {"Error", cal.Error, 0.2},
		{"LineNSMin", cal.LineNSMin, 30}, {"LineNSMax", cal.LineNSMax, 70},
	} {
		if !closeTo(f.got, f.want) {
			t.Errorf("%s = %v, want %v", f.name, f.got, f.want)
		}
	}
	for i := range rounds {
		rounds[i].costNs = 0 // the process CPU time cannot be read
	}
	cal = Calibration{Cores: 8, GOMAXPROCS: 16}
	cal.summarise(rounds, []float64{0})
	if cal.CostNs != 0 || cal.HostNs != 0 || !closeTo(cal.NaivePPS, 8e7) {
		t.Errorf("no D: cost %v, h %v, naive %v; want 0, 0 and the 8 cores' 8e7", cal.CostNs, cal.HostNs, cal.NaivePPS)
	}
}

// The median of an odd count is the middle one, of an even count the mean
// of the two middle ones, of none 0; the input keeps its order.
func TestMedianFloat(t *testing.T) {
	in := []float64{4, 1, 3, 2}
	for _, tc := range []struct {
		x    []float64
		want float64
	}{{nil, 0}, {[]float64{3, 1, 2}, 2}, {in, 2.5}, {[]float64{7}, 7}} {
		if got := medianFloat(tc.x); got != tc.want {
			t.Errorf("medianFloat(%v) = %v, want %v", tc.x, got, tc.want)
		}
	}
	if !slices.Equal(in, []float64{4, 1, 3, 2}) {
		t.Errorf("medianFloat reordered its input: %v", in)
	}
}

// The calibration's ranges: each end allowed, one past it refused by name.
func TestCalibrateConfigValidate(t *testing.T) {
	ok := CalibrateConfig{Harness: harness.Config{Hosts: 2}, Runs: 1, RunTime: time.Nanosecond}
	for _, c := range []CalibrateConfig{ok, {Harness: harness.Config{Hosts: 256}, Runs: 100, RunTime: time.Minute}} {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	for _, tc := range []struct {
		set  func(*CalibrateConfig)
		want string
	}{
		{func(c *CalibrateConfig) { c.Harness.Hosts = 1 }, "Harness.Hosts = 1: must be in 2..256"},
		{func(c *CalibrateConfig) { c.Harness.Hosts = 257 }, "Harness.Hosts = 257"},
		{func(c *CalibrateConfig) { c.Runs = 0 }, "Runs = 0: must be in 1..100"},
		{func(c *CalibrateConfig) { c.Runs = 101 }, "Runs = 101"},
		{func(c *CalibrateConfig) { c.RunTime = 0 }, "RunTime = 0s: must be in (0, 1m]"},
		{func(c *CalibrateConfig) { c.RunTime = time.Minute + time.Nanosecond }, "RunTime = 1m0.000000001s"},
	} {
		c := ok
		tc.set(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want an error with %q", err, tc.want)
		}
	}
}

// The table says D where it was measured and that it was not otherwise;
// the busy CPUs and the cache line times only where they were read.
func TestWriteCalibration(t *testing.T) {
	c := Calibration{Algo: "single", Hosts: 4, Bytes: 1 << 20, DType: "float32", Cores: 256, GOMAXPROCS: 2, Runs: 3, Generations: 5,
		TauNs: 100, TauCycles: 1100, HostNs1: 300, CostNs: 250, HostNs: 150, CPUs: 1.9, Predicted: 18, Measured: 16, BusyCPUs: 1.4,
		Error: 0.2, LineNSMin: 30, LineNSMax: 70}
	var out strings.Builder
	if err := WriteCalibration(&out, c); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# single, 4 hosts x 1MiB of float32, window 64, K = 256 cores, GOMAXPROCS 2; 3 rounds, 5 allreduces per run",
		"process CPU time per packet on 2 CPUs (h = 150 ns)", "CPUs busy U", "+20.0%", "30..70 ns"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	c.CostNs, c.BusyCPUs, c.LineNSMax = 0, 0, 0
	out.Reset()
	if err := WriteCalibration(&out, c); err != nil {
		t.Fatal(err)
	}
	if text := out.String(); !regexp.MustCompile(`cost D +unknown`).MatchString(text) || strings.Contains(text, "CPUs busy") || strings.Contains(text, "cache line") {
		t.Errorf("no D, U or line times:\n%s", text)
	}
}
