package testbed

import (
	"strings"
	"testing"
)

// validate takes the good configuration and every edge of every range,
// and refuses a value past one (or out of its set), naming the field.
func TestValidateEdges(t *testing.T) {
	good := Config{Hosts: 4, LinkBps: 200e6, Bytes: 1 << 20, Exe: "flare"}
	if g := good.withDefaults(); g.validate() != nil {
		t.Fatalf("good config: %v", g.validate())
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		bad  string // the field named, or "" where the edge is taken
	}{
		{"the most hosts", func(c *Config) { c.Hosts = MaxHosts }, ""},
		{"a leaf of one host", func(c *Config) { c.Leaves, c.PerLeaf = 2, 1 }, ""},
		{"a tree of the most hosts", func(c *Config) { c.Leaves, c.PerLeaf = 8, 8 }, ""},
		{"the longest vector", func(c *Config) { c.Bytes = 1 << 30 }, ""},
		{"past the longest vector", func(c *Config) { c.Bytes = 1<<30 + 4 }, "Config.Bytes"},
		{"the largest packet", func(c *Config) { c.PacketBytes = 8192 }, ""},
		{"past the largest packet", func(c *Config) { c.PacketBytes = 8200 }, "Config.PacketBytes"},
		{"the least MTU for 1 KiB packets", func(c *Config) { c.MTU = 1280 }, ""},
		{"an MTU without room for the Flare header", func(c *Config) { c.PacketBytes, c.MTU = 4096, 4096+28+31 }, "Config.MTU"},
		{"an MTU that just holds the packet", func(c *Config) { c.PacketBytes, c.MTU = 4096, 4096+28+32 }, ""},
		{"the largest MTU", func(c *Config) { c.MTU = 65000 }, ""},
		{"past the largest MTU", func(c *Config) { c.MTU = 65001 }, "Config.MTU"},
		{"half the packets lost", func(c *Config) { c.Loss = 0.5 }, ""},
		{"a negative warmup", func(c *Config) { c.Warmup = -1 }, "Config.Warmup"},
		{"a negative window", func(c *Config) { c.Window = -1 }, "Config.Window"},
		{"the largest window", func(c *Config) { c.Window = 1 << 16 }, ""},
		{"every index shared", func(c *Config) { c.Overlap = 1 }, ""},
		{"past every index shared", func(c *Config) { c.Overlap = 1.01 }, "Config.Overlap"},
		{"a density of 0", func(c *Config) { c.Paths, c.Densities = []string{PathSparse}, []float64{0} }, "Config.Densities"},
		{"a density of 1", func(c *Config) { c.Paths, c.Densities = []string{PathHostSparse}, []float64{1} }, ""},
		{"the slowest link", func(c *Config) { c.LinkBps = MinRateBps }, ""},
		{"the fastest link", func(c *Config) { c.LinkBps = MaxRateBps }, ""},
		{"a bad Hosts", func(c *Config) { c.Hosts = 1 }, "Hosts"},
		{"a bad Hosts", func(c *Config) { c.Hosts = MaxHosts + 1 }, "Hosts"},
		{"a tree of one leaf", func(c *Config) { c.Leaves, c.PerLeaf = 1, 4 }, "Config.Leaves = 1 with Config.PerLeaf = 4"},
		{"a tree of 72 hosts", func(c *Config) { c.Leaves, c.PerLeaf = 9, 8 }, "Config.Leaves = 9 with Config.PerLeaf = 8"},
		{"a bad LinkBps", func(c *Config) { c.LinkBps = 10 }, "LinkBps"},
		{"a bad UplinkBps", func(c *Config) { c.Leaves, c.PerLeaf, c.UplinkBps = 2, 2, 1e12 }, "UplinkBps"},
		{"a bad Bytes", func(c *Config) { c.Bytes = 2 }, "Bytes"},
		{"a bad PacketBytes", func(c *Config) { c.PacketBytes = 1000 + 4 }, "PacketBytes"},
		{"a bad MTU", func(c *Config) { c.PacketBytes, c.MTU = 8192, 1500 }, "MTU"},
		{"a bad Loss", func(c *Config) { c.Loss = 0.9 }, "Loss"},
		{"a bad Iters", func(c *Config) { c.Iters = -1 }, "Iters"},
		{"a bad Exe", func(c *Config) { c.Exe = "" }, "Exe"},
		{"a bad Paths", func(c *Config) { c.Paths = []string{"relay"} }, "Paths"},
		{"a sparse path without densities", func(c *Config) { c.Paths = []string{PathSparse} }, "Densities"},
		{"a bad Densities", func(c *Config) { c.Paths, c.Densities = []string{PathSparse}, []float64{2} }, "Densities"},
		{"a bad Window", func(c *Config) { c.Window = 1 << 17 }, "Window"},
	} {
		c := good
		tc.edit(&c)
		c = c.withDefaults()
		err := c.validate()
		if tc.bad == "" && err != nil || tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)) {
			t.Errorf("%s: validate() = %v, want an error naming %q", tc.name, err, tc.bad)
		}
	}
}

// Rates print in the largest unit that leaves a number of 1 or more, as
// tc writes them, and an infinite rate is refused.
func TestFormatRateUnits(t *testing.T) {
	for bps, want := range map[float64]string{999: "999bit", 1e3: "1kbit", 1500: "1.5kbit", 1e6: "1Mbit", 1e9: "1Gbit", 2.5e10: "25Gbit"} {
		if got := FormatRate(bps); got != want {
			t.Errorf("FormatRate(%g) = %q, want %q", bps, got, want)
		}
	}
	for _, s := range []string{"1e400", "inf", "+Infgbit"} {
		if v, err := ParseRate(s); err == nil {
			t.Errorf("ParseRate(%q) = %g, want it refused", s, v)
		}
	}
}
