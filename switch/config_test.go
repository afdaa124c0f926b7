package swtch

import (
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/hpu"
)

// memConns is a group of n in-memory conns on one address.
func memConns(t *testing.T, n int) []conn.Conn {
	cs, err := conn.NewMemNetwork().ListenGroup(netip.AddrPort{}, conn.GroupConfig{Sockets: n})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// Readers' default: one per CPU up to the clusters on a UDP port, one per
// conn of a group, one for a single conn.
func TestConfigReadersDefault(t *testing.T) {
	c := Config{}
	c.HPU.Clusters = 1
	if got := c.WithDefaults().Readers; got != 1 {
		t.Errorf("1 cluster: %d readers, want 1", got)
	}
	if got, want := (Config{}).WithDefaults().Readers, min(runtime.GOMAXPROCS(0), 4); got != want {
		t.Errorf("default: %d readers, want min(GOMAXPROCS, 4 clusters) = %d", got, want)
	}
	if got := (Config{Conns: memConns(t, 3)}).WithDefaults().Readers; got != 3 {
		t.Errorf("3 conns: %d readers", got)
	}
	if got := (Config{Conn: memConns(t, 1)[0]}).WithDefaults().Readers; got != 1 {
		t.Errorf("one conn: %d readers", got)
	}
	// The unit borrows idle cores when its submitters, the readers, take
	// every CPU: it must know how many there are.
	if got := (Config{Conns: memConns(t, 3)}).WithDefaults().HPU.Submitters; got != 3 {
		t.Errorf("3 readers: the unit counts %d submitters, want 3", got)
	}
	if got := (Config{Conns: memConns(t, 3), SharedCPUs: true}).WithDefaults().HPU.Submitters; got != 3 {
		t.Errorf("3 readers sharing the CPUs: the unit counts %d submitters, want 3", got)
	}
	if got := (Config{}).WithDefaults().SteerRun; got != 1 {
		t.Errorf("the default steering run is %d blocks, want 1", got)
	}
	c = Config{Readers: 2}
	c.HPU.Submitters = 7
	if got := c.WithDefaults().HPU.Submitters; got != 7 {
		t.Errorf("Config.HPU.Submitters = 7 set: defaults made it %d", got)
	}
}

// A switch's goroutines yield to the goroutines on their own P, whether
// the hosts share its process or not.
func TestConfigLocalYield(t *testing.T) {
	for _, c := range []Config{{}, {SharedCPUs: true}} {
		if !c.WithDefaults().HPU.LocalYield {
			t.Errorf("SharedCPUs %v: the unit yields with runtime.Gosched; want local yields", c.SharedCPUs)
		}
	}
}

// Every setting out of range is refused by Validate with the Config field
// that holds it and the range it must be in (the CLI maps the field to its
// flag).
func TestConfigValidateNamesField(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Listen = "nowhere" }, `Config.Listen = "nowhere": want HOST:PORT`},
		{func(c *Config) { c.Admin = "x" }, `Config.Admin = "x": want HOST:PORT`},
		{func(c *Config) { c.PacketBytes = 1000 + 4 }, "Config.PacketBytes = 1004: must be a multiple of 8 in 8..8192 bytes"},
		{func(c *Config) { c.PacketBytes = 8192 + 8 }, "Config.PacketBytes = 8200: must be a multiple of 8 in 8..8192 bytes"},
		{func(c *Config) { c.MaxJobs = MaxJobsLimit + 1 }, "Config.MaxJobs = 65537: must be in 1..65536"},
		{func(c *Config) { c.MaxMemory = 1<<20 - 1 }, "Config.MaxMemory = 1048575: must be in 1MiB..1TiB"},
		{func(c *Config) { c.MaxMemory = 1<<40 + 1 }, "Config.MaxMemory = 1099511627777: must be in 1MiB..1TiB"},
		{func(c *Config) { c.JoinTimeout = 100*time.Millisecond - 1 }, "Config.JoinTimeout = 99.999999ms: must be in 100ms..1h"},
		{func(c *Config) { c.JoinTimeout = time.Hour + 1 }, "Config.JoinTimeout = 1h0m0.000000001s: must be in 100ms..1h"},
		{func(c *Config) { c.JobIdle = 24*time.Hour + 1 }, "Config.JobIdle = 24h0m0.000000001s: must be in 1s..24h"},
		{func(c *Config) { c.Window = MaxWindow + 1 }, "Config.Window = 65537: must be in 0..65536"},
		{func(c *Config) { c.JoinRate = MaxJoinRate + 1 }, "Config.JoinRate = 1000001: must be in 1..1000000 per second"},
		{func(c *Config) { c.PcapMax = 1<<10 - 1 }, "Config.PcapMax = 1023: must be in 1KiB..1TiB"},
		{func(c *Config) { c.Parent, c.ChildIndex = "127.0.0.1:7470", 65536 }, "Config.ChildIndex = 65536: must be in 0..65535"},
		{func(c *Config) { c.Children = 65537 }, "Config.Children = 65537: must be in 0..65536"},
		{func(c *Config) { c.Children, c.LocalHosts = 65000, 537 }, "Config.LocalHosts = 537: must be in 0..536 (with Config.Children = 65000"},
		{func(c *Config) { c.LocalHosts, c.Children = -1, 2 }, "Config.LocalHosts = -1: must be in 0..65534"},
		{func(c *Config) { c.MaxJobs = 1 << 17 }, "Config.MaxJobs = 131072: must be in 1..65536"},
		{func(c *Config) { c.MaxMemory = 1 << 10 }, "Config.MaxMemory = 1024: must be in 1MiB..1TiB"},
		{func(c *Config) { c.MaxJobs, c.MaxPending = 4, 5 }, "Config.MaxPending = 5: must be in 1..4 (Config.MaxJobs)"},
		{func(c *Config) { c.MaxPending, c.MaxPendingPerSource = 4, 5 }, "Config.MaxPendingPerSource = 5: must be in 1..4 (Config.MaxPending)"},
		{func(c *Config) { c.JoinTimeout = 1 }, "Config.JoinTimeout = 1ns: must be in 100ms..1h"},
		{func(c *Config) { c.JobIdle = 1 }, "Config.JobIdle = 1ns: must be in 1s..24h"},
		{func(c *Config) { c.Window = -1 }, "Config.Window = -1: must be in 0..65536 (0: sized by the packet size and the members)"},
		{func(c *Config) { c.JoinRate = -1 }, "Config.JoinRate = -1: must be in 1..1000000 per second"},
		{func(c *Config) { c.PcapMax = 1 }, "Config.PcapMax = 1: must be in 1KiB..1TiB"},
		{func(c *Config) { c.Parent = "up" }, `Config.Parent = "up": want the parent switch's data address HOST:PORT`},
		{func(c *Config) { c.ChildIndex = -1 }, "Config.ChildIndex = -1: must be in 0..65535"},
		{func(c *Config) { c.ChildIndex = 3 }, "Config.ChildIndex = 3 without Config.Parent"},
		{func(c *Config) { c.Children = -1 }, "Config.Children = -1: must be in 0..65536"},
		{func(c *Config) { c.LocalHosts = 2 }, "Config.LocalHosts = 2 without Config.Children"},
		{func(c *Config) { c.Children, c.LocalHosts = 65000, 1000 }, "Config.LocalHosts = 1000: must be in 0..536 (with Config.Children = 65000"},
		{func(c *Config) { c.HPU.Clusters = -1 }, "Config.HPU.Clusters: clusters = -1: must be in 1..1024"},
		{func(c *Config) { c.HPU.CoresPerCluster = 1000 }, "Config.HPU.CoresPerCluster: cores per cluster = 1000: must be in 1..256"},
		{func(c *Config) { c.HPU.QueueDepth = -3 }, "Config.HPU.QueueDepth: queue depth = -3: must be in 1.."},
		{func(c *Config) { c.HPU.SubsetS = 9 }, "Config.HPU.SubsetS: policy S = 9: must be in 1..8"},
		{func(c *Config) { c.HPU.L1Bytes = hpu.MaxL1Bytes + 1 }, "Config.HPU.L1Bytes: L1 = 1073741825 bytes: must be in"},
		{func(c *Config) { c.HPU.Submitters = 5000 }, "Config.HPU.Submitters: submitters = 5000: must be in 0..1024"},
		{func(c *Config) { c.Socket.BatchSize = -1 }, "Config.Socket.BatchSize: batch size = -1: must be in 1..1024"},
		{func(c *Config) { c.Readers = -1 }, "Config.Readers = -1: must be in 1..256"},
		{func(c *Config) { c.Readers = 257 }, "Config.Readers = 257: must be in 1..256"},
		{func(c *Config) { c.SteerRun = -1 }, "Config.SteerRun = -1: must be a power of two in 1..1024 blocks"},
		{func(c *Config) { c.SteerRun = 48 }, "Config.SteerRun = 48: must be a power of two in 1..1024 blocks"},
		{func(c *Config) { c.SteerRun = 2048 }, "Config.SteerRun = 2048: must be a power of two in 1..1024 blocks"},
		{func(c *Config) { c.Conn, c.Readers = memConns(t, 1)[0], 2 }, "Config.Readers = 2 with Config.Conn: one conn has one reader"},
		{func(c *Config) { c.Conns, c.Readers = memConns(t, 2), 3 }, "Config.Readers = 3 with 2 Config.Conns: one reader per conn"},
		{func(c *Config) { c.Conn, c.Conns = memConns(t, 1)[0], memConns(t, 2) }, "Config.Conn and Config.Conns (2 conns) are both set"},
		{func(c *Config) { c.Conns = []conn.Conn{nil} }, "Config.Conns[0] is nil"},
		{func(c *Config) { c.Multicast = netip.MustParsePrefix("10.0.0.0/24") }, "Config.Multicast = 10.0.0.0/24: must be IPv4 multicast groups in 224.0.0.0/4"},
		{func(c *Config) { c.Multicast = netip.MustParsePrefix("224.0.0.0/28") }, "Config.Multicast = 224.0.0.0/28: must be IPv4 multicast groups in 224.0.0.0/4 outside 224.0.0.0/24"},
		{func(c *Config) { c.Multicast = netip.MustParsePrefix("ff05::/120") }, "Config.Multicast = ff05::/120: must be IPv4 multicast"},
		{func(c *Config) { c.Multicast, c.MulticastPort = netip.MustParsePrefix("239.1.2.0/24"), 70000 }, "Config.MulticastPort = 70000: must be in 1..65535"},
		{func(c *Config) { c.Multicast, c.MulticastPort = netip.MustParsePrefix("239.1.2.0/24"), -1 }, "Config.MulticastPort = -1: must be in 1..65535"},
		{func(c *Config) { c.Multicast, c.Conn = netip.MustParsePrefix("239.1.2.0/24"), memConns(t, 1)[0] }, "multicast results need the switch's own UDP sockets"},
		{func(c *Config) { c.Multicast, c.Listen = netip.MustParsePrefix("239.1.2.0/24"), "0.0.0.0:0" }, `Config.Multicast = 239.1.2.0/24 with Config.Listen = "0.0.0.0:0": set Config.Socket.MulticastInterface`},
		{func(c *Config) {
			c.Multicast, c.Socket.MulticastInterface = netip.MustParsePrefix("239.1.2.0/24"), netip.MustParseAddr("239.1.1.1")
		}, "Config.Socket.MulticastInterface: multicast interface = 239.1.1.1: must be an IPv4 unicast address"},
		{func(c *Config) { c.MulticastPort = 7471 }, "Config.MulticastPort = 7471 without Config.Multicast"},
		{func(c *Config) { c.Socket.MulticastInterface = netip.MustParseAddr("10.0.0.1") }, "Config.Socket.MulticastInterface = 10.0.0.1 without Config.Multicast"},
	} {
		c := Config{Listen: "127.0.0.1:0"}
		tc.edit(&c)
		if err := c.WithDefaults().Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want %q", err, tc.want)
		}
	}
	if err := (Config{Listen: "127.0.0.1:0"}).WithDefaults().Validate(); err != nil {
		t.Errorf("the defaults: %v", err)
	}
}

// The ends of every range Validate checks are allowed, alone and with the
// other fields' defaults: a small job table takes pending limits that fit
// it, and a check moved by one toward refusing shows as a refusal of what
// the docs allow.
func TestConfigLimitsAllowed(t *testing.T) {
	mc := func(c *Config) {
		c.Multicast, c.Socket.MulticastInterface = netip.MustParsePrefix("239.1.2.0/24"), netip.MustParseAddr("127.0.0.1")
	}
	for i, edit := range []func(*Config){
		func(c *Config) { c.PacketBytes = 8 },
		func(c *Config) { c.PacketBytes = 8192 },
		func(c *Config) { c.MaxJobs = 1 },
		func(c *Config) { c.MaxJobs = 4 },
		func(c *Config) { c.MaxJobs = MaxJobsLimit },
		func(c *Config) { c.MaxMemory = 1 << 20 },
		func(c *Config) { c.MaxMemory = 1 << 40 },
		func(c *Config) { c.MaxJobs, c.MaxPending = 5, 5 },
		func(c *Config) { c.MaxPending = 2 },
		func(c *Config) { c.MaxPending, c.MaxPendingPerSource = 3, 3 },
		func(c *Config) { c.JoinTimeout = 100 * time.Millisecond },
		func(c *Config) { c.JoinTimeout = time.Hour },
		func(c *Config) { c.JobIdle = time.Second },
		func(c *Config) { c.JobIdle = 24 * time.Hour },
		func(c *Config) { c.Window = MaxWindow },
		func(c *Config) { c.JoinRate = 1 },
		func(c *Config) { c.JoinRate = MaxJoinRate },
		func(c *Config) { c.PcapMax = 1 << 10 },
		func(c *Config) { c.PcapMax = 1 << 40 },
		func(c *Config) { c.Readers = 1 },
		func(c *Config) { c.Readers = conn.MaxGroup },
		func(c *Config) { c.SteerRun = MaxSteerRun },
		func(c *Config) { c.Parent, c.ChildIndex = "127.0.0.1:7470", 65535 },
		func(c *Config) { c.Children = 65536 },
		func(c *Config) { c.Children, c.LocalHosts = 65000, 536 },
		func(c *Config) { mc(c) },
		func(c *Config) { mc(c); c.MulticastPort = 1 },
		func(c *Config) { mc(c); c.MulticastPort = 65535 },
	} {
		c := Config{Listen: "127.0.0.1:0"}
		edit(&c)
		if err := c.WithDefaults().Validate(); err != nil {
			t.Errorf("case %d: %v; want it allowed", i, err)
		}
	}
}

// The default memory budget is DefaultMaxMemory, a quarter of a smaller
// machine's memory, and never below the 1 MiB Validate allows.
func TestDefaultMaxMemory(t *testing.T) {
	for _, tc := range []struct{ machine, want int64 }{
		{0, DefaultMaxMemory}, // unknown
		{24 << 30, DefaultMaxMemory},
		{4 << 30, DefaultMaxMemory},
		{2 << 30, 512 << 20},
		{1 << 20, 1 << 20},
	} {
		if got := defaultMaxMemory(tc.machine); got != tc.want {
			t.Errorf("a machine of %d bytes: %d, want %d", tc.machine, got, tc.want)
		}
	}
}

// TestDefaultWindowFor: the default window aims at DefaultWindowBytes a
// host and DefaultWindowPackets over the members, never below
// DefaultWindow nor above MaxWindow; a configured window is kept.
func TestDefaultWindowFor(t *testing.T) {
	for _, tc := range []struct{ world, block, want int }{
		{8, 1024, 256},  // 256 KiB a host, 2048 in all
		{4, 1024, 256},  // bytes bound
		{16, 1024, 128}, // members bound
		{64, 1024, DefaultWindow},
		{1000, 1024, DefaultWindow},
		{8, 8192, DefaultWindow}, // 32 by bytes: the floor
		{2, 64, 1024},
		{1, 8, 2048},
		{0, 0, 2048}, // nonsense sizes do not divide by zero
	} {
		if got := DefaultWindowFor(tc.world, tc.block); got != tc.want {
			t.Errorf("DefaultWindowFor(%d members, %d B blocks) = %d, want %d", tc.world, tc.block, got, tc.want)
		}
	}
	c := Config{Window: 10}
	if got := c.windowFor(8, 1024); got != 10 {
		t.Errorf("Config.Window 10: window %d", got)
	}
	c.Window = 0
	if got := c.windowFor(16, 1024); got != 128 {
		t.Errorf("Config.Window 0: window %d, want DefaultWindowFor's 128", got)
	}
}
