package bench

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flare-net/flare/wire"
)

// good is a valid configuration the cases below change one thing of.
func good() Config {
	return Config{Switch: "127.0.0.1:7470", Ranks: 4, Count: 1000, DType: wire.Float32, Op: wire.OpSum, Algo: "auto",
		Iters: 2, Warmup: 1, Timeout: time.Second, Density: 0.1, Overlap: 0.5, Storage: wire.StorageHash}
}

// Validate names the field out of range, and the range.
func TestConfigValidateNamesField(t *testing.T) {
	if err := good().Validate(); err != nil {
		t.Fatalf("good config: %v", err)
	}
	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Ranks = 2000 }, "Config.Ranks = 2000: must be in 1..1024"},
		{func(c *Config) { c.Ranks = 0 }, "give Config.Ranks N (all ranks here) or Config.Rank R with Config.World N"},
		{func(c *Config) { c.Ranks, c.Rank, c.World = 0, 3, 2 }, "Config.Rank = 3 with Config.World = 2: world must be in 1..65535 and rank in 0..world-1"},
		{func(c *Config) { c.Ranks, c.World, c.Algo = 0, 2, "ring" }, "give Config.Peers with 2 addresses"},
		{func(c *Config) { c.Peers = []string{"a"} }, "Config.Peers: only with Config.Algo = ring"},
		{func(c *Config) { c.Count = 0 }, "Config.Count = 0: must be in 1..1073741824 elements"},
		{func(c *Config) { c.DType = 0 }, "Config.DType = "},
		{func(c *Config) { c.Iters = 0 }, "Config.Iters = 0 with Config.Warmup = 1: want iters >= 1"},
		{func(c *Config) { c.Timeout = 0 }, "Config.Timeout = 0s: must be positive"},
		{func(c *Config) { c.Deadline = 1500 * time.Microsecond }, "Config.Deadline = 1.5ms: must be whole milliseconds in 1ms..65.535s"},
		{func(c *Config) { c.Deadline, c.Algo = 5*time.Millisecond, "tree" }, "Config.Deadline with Config.Algo = tree: bounded time works with the dense single-buffer design"},
		{func(c *Config) { c.TailRatio = 200 }, "Config.TailRatio = 200 with Config.TailMedian = 0s: want a ratio in 1..100 and a positive median"},
		{func(c *Config) { c.BlockElems = -1 }, "Config.BlockElems = -1: must be in 0..4294967295"},
		{func(c *Config) { c.DType, c.Op = wire.Float32, wire.OpXor }, "Config.Op: "},
		{func(c *Config) { c.Sparse, c.Density = true, 2 }, "Config.Density = 2: must be in (0, 1]"},
		{func(c *Config) { c.Sparse, c.Overlap = true, -1 }, "Config.Overlap = -1: must be in [0, 1]"},
		{func(c *Config) { c.Sparse, c.Op = true, wire.OpProd }, "Config.Op = prod with Config.Sparse: must be sum, min or max"},
		{func(c *Config) { c.Sparse, c.Algo = true, "tree" }, "Config.Algo = tree with Config.Sparse"},
		{func(c *Config) { c.Sparse, c.Storage = true, wire.StorageDense }, "Config.Storage = "},
		{func(c *Config) { c.Algo = "multi99" }, `Config.Algo = "multi99": want auto, single, multi2, multi4`},
		{func(c *Config) { c.Switch = "a:1,b:2,c:3,d:4,e:5" }, "Config.Switch with 5 leaf switches and 4 ranks: every leaf needs at least one rank"},
		{func(c *Config) { c.Switch = "a:1=2,b:2" }, "give =N on every entry or on none"},
		{func(c *Config) { c.Switch = "a:1=1,b:2=1" }, "the =N counts add up to 2 ranks, want 4"},
		{func(c *Config) { c.Switch, c.Deadline = "a:1,b:2", 5*time.Millisecond }, "Config.Switch with 2 leaf switches: bounded time (Config.Deadline) needs one switch"},
	} {
		c := good()
		tc.edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want %q", err, tc.want)
		}
	}
}

// Ranks are placed on leaves in contiguous blocks: equal shares, or each
// leaf's =N.
func TestPlace(t *testing.T) {
	for _, tc := range []struct {
		sw    string
		world int
		want  []string // per rank: leaf, local rank / local world
	}{
		{"a", 3, []string{"a 0/3", "a 1/3", "a 2/3"}},
		{"a,b", 4, []string{"a 0/2", "a 1/2", "b 0/2", "b 1/2"}},
		{"a,b", 5, []string{"a 0/2", "a 1/2", "b 0/3", "b 1/3", "b 2/3"}},
		{"a=1,b=3", 4, []string{"a 0/1", "b 0/3", "b 1/3", "b 2/3"}},
	} {
		c := Config{Switch: tc.sw}
		for r, want := range tc.want {
			sw, lr, lw := c.place(r, tc.world)
			if got := sw + " " + strconv.Itoa(lr) + "/" + strconv.Itoa(lw); got != want {
				t.Errorf("%s, world %d: rank %d at %s, want %s", tc.sw, tc.world, r, got, want)
			}
		}
	}
}
