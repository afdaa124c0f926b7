package testbed

import (
	"math"
	"strings"
	"testing"

	"github.com/flare-net/flare/internal/schematest"
	"github.com/flare-net/flare/models"
)

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{"200Mbit": 200e6, "1Gbit": 1e9, "2.5gbit": 2.5e9, "500kbit": 500e3,
		"1e9": 1e9, "100mbps": 100e6, " 10G ": 10e9} {
		if got, err := ParseRate(in); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "fast", "-1Mbit", "0", "Mbit", "1Tbit"} {
		if _, err := ParseRate(in); err == nil {
			t.Errorf("ParseRate(%q): no error", in)
		}
	}
	for _, r := range []float64{1e6, 200e6, 2.5e9, 10e9} {
		if got, err := ParseRate(FormatRate(r)); err != nil || got != r {
			t.Errorf("ParseRate(FormatRate(%v)) = %v, %v", r, got, err)
		}
	}
}

func TestSweepRates(t *testing.T) {
	got, err := SweepRates(100e6, 10e9)
	want := []float64{100e6, 200e6, 500e6, 1e9, 2e9, 5e9, 10e9}
	if err != nil || len(got) != len(want) {
		t.Fatalf("SweepRates(100Mbit, 10Gbit) = %v, %v; want %v", got, err, want)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1 {
			t.Fatalf("SweepRates(100Mbit, 10Gbit) = %v, want %v", got, want)
		}
	}
	if got, _ := SweepRates(300e6, 300e6); len(got) != 1 {
		t.Errorf("SweepRates(300Mbit, 300Mbit) = %v, want the one rate", got)
	}
	if _, err := SweepRates(1e9, 100e6); err == nil {
		t.Error("SweepRates(1Gbit, 100Mbit): no error")
	}
}

// The ideal is the model's time plus the headers' share of the link: at
// 1 KiB packets the Flare, UDP, IP and Ethernet headers add 82 bytes a
// packet; the model's own in-network time is payload over the rate plus
// its latency.
func TestIdeal(t *testing.T) {
	c := Config{Hosts: 8, LinkBps: 1e9, Bytes: 16 << 20, Exe: "flare"}.withDefaults()
	model := c.modelRows(0)
	r := Row{Path: PathSwitch, MedianS: 0.190}
	c.ideal(&r, model)
	payload := float64(16<<20) * 8 / 1e9
	if d := model[models.AlgInNetworkDense].TimeS - payload; d < 0 || d > 1e-4 {
		t.Fatalf("model in-network time %v, want the payload's %v plus a latency under 100 µs", model[models.AlgInNetworkDense].TimeS, payload)
	}
	frames := float64(16<<10) * (1024 + 32 + 8 + 20 + 14) * 8 / 1e9
	if d := r.IdealS - model[models.AlgInNetworkDense].TimeS - (frames - payload); math.Abs(d) > 1e-9 {
		t.Errorf("ideal %v: want the model's %v plus %v of headers", r.IdealS, r.ModelS, frames-payload)
	}
	if r.OfIdeal != r.MedianS/r.IdealS || math.Abs(r.ModelVsRing-2*7.0/8) > 0.01 {
		t.Errorf("of ideal %v, model vs ring %v (want about 2(P-1)/P = 1.75)", r.OfIdeal, r.ModelVsRing)
	}
	r.CPUBusy = 0.95
	if !r.cpuBound() {
		t.Error("1.3× ideal on a saturated machine: not CPU-bound")
	}
	r.CPUBusy, r.SwitchCPU = 0.5, 0.2
	if r.cpuBound() {
		t.Error("1.3× ideal on an idle machine: CPU-bound")
	}
}

func TestRateWindow(t *testing.T) {
	for _, tc := range []struct {
		rate   float64
		packet int
		want   int
	}{
		{100e6, 1024, 32}, // 1.5 ms is 17 frames: the floor
		{100e6, 8192, 15}, // 32 would be 21 ms of the link: 10 ms
		{1e9, 1024, 170},  // 1.5 ms
		{1e6, 8192, 4},    // the last floor
		{10e9, 8192, 226}, // 1.5 ms
	} {
		c := Config{LinkBps: tc.rate, PacketBytes: tc.packet}
		if got := c.rateWindow(); got != tc.want {
			t.Errorf("%s, %d-byte packets: window %d, want %d", FormatRate(tc.rate), tc.packet, got, tc.want)
		}
	}
}

// A testbed row has a fixed schema, as bench rows do: every field is
// written, zero or not.
func TestRowHasFixedSchema(t *testing.T) {
	for _, v := range []any{Row{}, SweepRow{}, Capacity{}, LinkStat{}} {
		schematest.Fixed(t, v)
	}
}

// The tables: a line per path with its link bytes, the model command of
// the setting, and the sweep's answer per packet size.
func TestTables(t *testing.T) {
	cfg := Config{Hosts: 4, LinkBps: 200e6, Bytes: 4 << 20, Exe: "flare"}.withDefaults()
	rows := []Row{{Path: PathSwitch, Ranks: 4, Bytes: 4 << 20, Algo: "single", MedianS: 0.2, Topology: "4", LinkBps: 200e6,
		PacketBytes: 1024, Window: 32, Links: []LinkStat{{Link: "h0", UpBytes: 4 << 20, DownBytes: 4 << 20, UpUtil: 0.9, DownUtil: 0.8, Drops: 3}}}}
	var b strings.Builder
	WriteTable(&b, cfg, rows)
	WriteTable(&b, cfg, nil)
	for _, want := range []string{"Flare testbed: 4 hosts (4), 4MiB per host, 200Mbit links, 1024-byte packets, window 32 blocks",
		"switch", "h0 4.0 MiB/4.0 MiB 90%/80% (3 dropped)", "model: flare model collectives --hosts 4 --bytes 4MiB --dtype float32 --link-gbps 0.2 --topology single"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	WriteCapacity(&b, Capacity{PacketBytes: 1024, HeldBps: 400e6, FailedBps: 800e6, FailedOfIdeal: 1.4, FailedCPU: true})
	WriteCapacity(&b, Capacity{PacketBytes: 8192})
	if want := "capacity at 1024-byte packets: 400Mbit (800Mbit: 1.40× ideal, CPU-bound)\ncapacity at 8192-byte packets: none\n"; b.String() != want {
		t.Errorf("capacities %q, want %q", b.String(), want)
	}
}
