package testbed

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/flare-net/flare/wire"
)

// Paths a run can measure.
const (
	PathSwitch     = "switch"      // in-network dense through the switch(es)
	PathRing       = "ring"        // the host ring baseline over the same links (TCP)
	PathSparse     = "sparse"      // in-network sparse (hash storage), one row per density
	PathHostSparse = "host-sparse" // the host sparse baseline, one row per density
)

// The window sized from the link's rate (Config.Window): WindowTime of the
// rate in frames, at least MinWindow blocks, but never more than
// MaxQueueTime of the rate (and at least 4 blocks).
const (
	WindowTime   = 1500 * time.Microsecond
	MinWindow    = 32
	MaxQueueTime = 10 * time.Millisecond
)

// rateWindow is the window for the link's rate and the packet size.
func (c *Config) rateWindow() int {
	frames := func(d time.Duration) int {
		return int(c.LinkBps / 8 * d.Seconds() / float64(c.PacketBytes+wire.HeaderLen+udpIPHeaders+ethHeader))
	}
	return max(4, min(max(frames(WindowTime), MinWindow), frames(MaxQueueTime)))
}

// Limits of a run.
const (
	MaxHosts   = 64 // host namespaces (and processes) in one run
	MinRateBps = 1e6
	MaxRateBps = 100e9
)

// Config is one emulated cluster and what to run on it. The zero values
// of the optional fields take the defaults (withDefaults).
type Config struct {
	// Hosts is P on a single switch; with Leaves > 0 it is ignored and the
	// cluster is a two-level tree of Leaves leaf switches with PerLeaf
	// hosts each under one root.
	Hosts           int
	Leaves, PerLeaf int
	LinkBps         float64 // every host link, each direction, bits/s
	UplinkBps       float64 // every leaf-root link (tree only; 0: LinkBps)
	Loss            float64 // fraction of IPv4 packets dropped on every link, each direction, in [0, 0.5]
	Bytes           int64   // vector per host
	PacketBytes     int     // the switch's payload per packet (0: 1 KiB)
	DType           wire.DType
	Iters, Warmup   int
	Paths           []string  // of PathSwitch, PathRing, PathSparse, PathHostSparse (nil: switch and ring)
	Densities       []float64 // for the sparse paths
	Overlap         float64   // sparse: the share of indices all hosts have in common
	Timeout         time.Duration
	MTU             int    // of every veth (0: 9000, so 8 KiB packets are not fragmented)
	Exe             string // the flare binary every daemon and host runs
	// Window is the blocks in flight per host the switch grants (0:
	// rateWindow). The daemon cannot know the link's rate, so the testbed
	// sizes it in time: enough to keep the link busy through the
	// switches' turnaround, and short, since a window beyond what the
	// daemon's queues turn around sets off retransmissions that feed on
	// themselves. Measured on this shared 2-core box: 4 hosts at
	// 200 Mbit/s, 16 MiB: 32 blocks (1.4 ms) 1.00× ideal, 128 blocks
	// 1.28×, 512 blocks 2.65× with 317,000 retransmissions; 8 hosts at
	// 1 Gbit/s: 170 blocks 4.9×, 1024 blocks 20× (1.4 million); a 4x4
	// tree at 50 Mbit/s: 8 blocks 5.3×, 32 blocks 1.33×, 128 blocks 10×;
	// 32 blocks of 8 KiB at 100 Mbit/s (21 ms of the link, over the
	// hosts' 20 ms timeout) 1.72×.
	Window int
	// SwitchArgs are extra flags for every `flare switch` (e.g. --clusters).
	SwitchArgs []string
	// Log, when set, gets one line per step (built, started, path done).
	Log io.Writer
}

// Tree reports whether the cluster is a two-level tree.
func (c *Config) Tree() bool { return c.Leaves > 0 }

// World is the number of hosts.
func (c *Config) World() int {
	if c.Tree() {
		return c.Leaves * c.PerLeaf
	}
	return c.Hosts
}

// Shape names the cluster: "8" hosts on one switch or "4x4".
func (c *Config) Shape() string {
	if c.Tree() {
		return fmt.Sprintf("%dx%d", c.Leaves, c.PerLeaf)
	}
	return strconv.Itoa(c.Hosts)
}

func (c Config) withDefaults() Config {
	if c.PacketBytes == 0 {
		c.PacketBytes = 1024
	}
	if c.DType == 0 {
		c.DType = wire.Float32
	}
	if c.Iters == 0 {
		c.Iters = 3
	}
	if c.Paths == nil {
		c.Paths = []string{PathSwitch, PathRing}
	}
	if c.Timeout == 0 {
		c.Timeout = 60 * time.Second
	}
	if c.MTU == 0 {
		c.MTU = 9000
	}
	if c.Window == 0 {
		c.Window = c.rateWindow()
	}
	if c.Tree() && c.UplinkBps == 0 {
		c.UplinkBps = c.LinkBps
	}
	return c
}

// validate names the first field out of range, and the range.
func (c *Config) validate() error {
	rate := func(field string, v float64) error {
		if !(v >= MinRateBps && v <= MaxRateBps) {
			return fmt.Errorf("testbed: Config.%s = %g bit/s: must be in %s..%s", field, v, FormatRate(MinRateBps), FormatRate(MaxRateBps))
		}
		return nil
	}
	switch {
	case c.Tree() && (c.Leaves < 2 || c.PerLeaf < 1 || c.World() > MaxHosts):
		return fmt.Errorf("testbed: Config.Leaves = %d with Config.PerLeaf = %d: want 2 or more leaves, 1 or more hosts each, %d hosts at most", c.Leaves, c.PerLeaf, MaxHosts)
	case !c.Tree() && (c.Hosts < 2 || c.Hosts > MaxHosts):
		return fmt.Errorf("testbed: Config.Hosts = %d: must be in 2..%d", c.Hosts, MaxHosts)
	case c.Bytes < int64(c.DType.Size()) || c.Bytes > 1<<30:
		return fmt.Errorf("testbed: Config.Bytes = %d: must be in %d..1GiB", c.Bytes, c.DType.Size())
	case c.PacketBytes < 8 || c.PacketBytes > 8192 || c.PacketBytes%8 != 0:
		return fmt.Errorf("testbed: Config.PacketBytes = %d: must be a multiple of 8 in 8..8192", c.PacketBytes)
	case c.MTU < 1280 || c.MTU > 65000 || c.MTU < c.PacketBytes+wire.HeaderLen+udpIPHeaders:
		return fmt.Errorf("testbed: Config.MTU = %d: must be in 1280..65000 and hold a %d-byte packet with its headers", c.MTU, c.PacketBytes)
	case !(c.Loss >= 0 && c.Loss <= 0.5):
		return fmt.Errorf("testbed: Config.Loss = %g: must be a fraction in [0, 0.5]", c.Loss)
	case c.Iters < 1 || c.Warmup < 0:
		return fmt.Errorf("testbed: Config.Iters = %d with Config.Warmup = %d: want iters >= 1 and warmup >= 0", c.Iters, c.Warmup)
	case c.Window < 1 || c.Window > 1<<16:
		return fmt.Errorf("testbed: Config.Window = %d: must be in 1..65536 blocks", c.Window)
	case c.Exe == "":
		return errors.New("testbed: Config.Exe is empty: give the flare binary the daemons and hosts run")
	case !(c.Overlap >= 0 && c.Overlap <= 1):
		return fmt.Errorf("testbed: Config.Overlap = %g: must be in [0, 1]", c.Overlap)
	}
	if err := rate("LinkBps", c.LinkBps); err != nil {
		return err
	}
	if c.Tree() {
		if err := rate("UplinkBps", c.UplinkBps); err != nil {
			return err
		}
	}
	sparse := false
	for _, p := range c.Paths {
		switch p {
		case PathSwitch, PathRing:
		case PathSparse, PathHostSparse:
			sparse = true
		default:
			return fmt.Errorf("testbed: Config.Paths %q: want %s, %s, %s or %s", p, PathSwitch, PathRing, PathSparse, PathHostSparse)
		}
	}
	if sparse && len(c.Densities) == 0 {
		return errors.New("testbed: Config.Paths has a sparse path but Config.Densities is empty")
	}
	for _, d := range c.Densities {
		if !(d > 0 && d <= 1) {
			return fmt.Errorf("testbed: Config.Densities %g: each must be in (0, 1]", d)
		}
	}
	return nil
}

// ParseRate reads a link rate as tc writes them: a number with an optional
// unit bit, kbit, mbit, gbit (any case; k/M/G, and bps the same as bit),
// such as 200Mbit, 1Gbit, 2.5gbit or 1e9.
func ParseRate(s string) (float64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "bps"), "bit")
	mult := 1.0
	switch {
	case strings.HasSuffix(t, "k"):
		mult, t = 1e3, strings.TrimSuffix(t, "k")
	case strings.HasSuffix(t, "m"):
		mult, t = 1e6, strings.TrimSuffix(t, "m")
	case strings.HasSuffix(t, "g"):
		mult, t = 1e9, strings.TrimSuffix(t, "g")
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("rate %q: want a positive number with an optional unit kbit, Mbit or Gbit (e.g. 200Mbit)", s)
	}
	return v * mult, nil
}

// FormatRate writes bits/s the way ParseRate reads them.
func FormatRate(bps float64) string {
	switch {
	case bps >= 1e9:
		return strconv.FormatFloat(bps/1e9, 'g', 4, 64) + "Gbit"
	case bps >= 1e6:
		return strconv.FormatFloat(bps/1e6, 'g', 4, 64) + "Mbit"
	case bps >= 1e3:
		return strconv.FormatFloat(bps/1e3, 'g', 4, 64) + "kbit"
	}
	return strconv.FormatFloat(bps, 'g', 4, 64) + "bit"
}
