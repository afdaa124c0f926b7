package bench

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/hostlib"
	"github.com/flare-net/flare/proto"
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

// Each end of every range is allowed, and one past it refused.
func TestConfigLimitsAllowed(t *testing.T) {
	var maxBlock uint64 = math.MaxUint32 // a variable: the constant overflows a 32-bit int
	for _, tc := range []struct {
		name string
		edit func(*Config)
	}{
		{"one rank", func(c *Config) { c.Ranks = 1 }},
		{"the most ranks", func(c *Config) { c.Ranks = MaxRanks }},
		{"one element", func(c *Config) { c.Count = 1 }},
		{"the most elements", func(c *Config) { c.Count = MaxCount }},
		{"no warm-up", func(c *Config) { c.Warmup = 0 }},
		{"the shortest deadline", func(c *Config) { c.Deadline, c.Algo = time.Millisecond, "single" }},
		{"the longest deadline", func(c *Config) { c.Deadline = 65535 * time.Millisecond }},
		{"no tail", func(c *Config) { c.TailRatio, c.TailMedian = 1, time.Millisecond }},
		{"the longest tail", func(c *Config) { c.TailRatio, c.TailMedian = 100, time.Millisecond }},
		{"no busy poll", func(c *Config) { c.BusyPoll = 0 }},
		{"the longest busy poll", func(c *Config) { c.BusyPoll = conn.MaxBusyPoll }},
		{"one rank of one", func(c *Config) { c.Ranks, c.Rank, c.World = 0, 0, 1 }},
		{"the last rank of the largest world", func(c *Config) { c.Ranks, c.Rank, c.World = 0, hostlib.MaxWorld-1, hostlib.MaxWorld }},
		{"every index", func(c *Config) { c.Sparse, c.Density = true, 1 }},
		{"no shared indices", func(c *Config) { c.Sparse, c.Overlap = true, 0 }},
		{"all indices shared", func(c *Config) { c.Sparse, c.Overlap = true, 1 }},
		{"sparse min", func(c *Config) { c.Sparse, c.Op = true, wire.OpMin }},
		{"sparse max", func(c *Config) { c.Sparse, c.Op = true, wire.OpMax }},
		{"a sparse ring stores nothing", func(c *Config) { c.Sparse, c.Algo, c.Storage = true, "ring", 0 }},
		{"one rank a leaf", func(c *Config) { c.Switch = "a:1,b:2,c:3,d:4" }},
		{"two buffers", func(c *Config) { c.Algo = "multi2" }},
		{"the most buffers", func(c *Config) { c.Algo = "multi" + strconv.Itoa(proto.MaxBuffers) }},
		{"the largest block", func(c *Config) {
			if strconv.IntSize == 64 { // a 32-bit int holds no 2^32-1: the case is the good config there
				c.BlockElems = int(maxBlock)
			}
		}},
	} {
		c := good()
		tc.edit(&c)
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Ranks = -1 }, "Config.Ranks = -1"},
		{func(c *Config) { c.Ranks = MaxRanks + 1 }, "Config.Ranks = 1025"},
		{func(c *Config) { c.Count = MaxCount + 1 }, "Config.Count = 1073741825"},
		{func(c *Config) { c.Warmup = -1 }, "Config.Warmup = -1"},
		{func(c *Config) { c.Deadline = 65536 * time.Millisecond }, "Config.Deadline = 1m5.536s"},
		{func(c *Config) { c.Deadline = 500 * time.Microsecond }, "Config.Deadline = 500µs"},
		{func(c *Config) { c.Deadline, c.Sparse = 5*time.Millisecond, true }, "Config.Deadline with Config.Algo = auto"},
		{func(c *Config) { c.TailRatio, c.TailMedian = 0.5, time.Millisecond }, "Config.TailRatio = 0.5"},
		{func(c *Config) { c.TailRatio, c.TailMedian = 101, time.Millisecond }, "Config.TailRatio = 101"},
		{func(c *Config) { c.TailRatio = 2 }, "Config.TailRatio = 2 with Config.TailMedian = 0s"},
		{func(c *Config) { c.BusyPoll = -1 }, "Config.BusyPoll = -1ns"},
		{func(c *Config) { c.BusyPoll = conn.MaxBusyPoll + 1 }, "Config.BusyPoll = 10.000001ms"},
		{func(c *Config) { c.Ranks, c.Rank, c.World = 0, 0, hostlib.MaxWorld+1 }, "Config.World = 65536"},
		{func(c *Config) { c.Ranks, c.Rank, c.World = 0, -1, 2 }, "Config.Rank = -1"},
		{func(c *Config) { c.Ranks, c.Rank, c.World = 0, 2, 2 }, "Config.Rank = 2 with Config.World = 2"},
		{func(c *Config) { c.Sparse, c.Density = true, 0 }, "Config.Density = 0"},
		{func(c *Config) { c.Sparse, c.Reproducible = true, true }, "with Config.Sparse: sparse jobs use"},
		{func(c *Config) { c.Algo, c.Peers = "ring", []string{"a:1", "b:1", "c:1", "d:1"} }, "Config.Peers: only with"},
		{func(c *Config) { c.Ranks, c.World, c.Algo, c.Peers = 0, 2, "ring", []string{"a:1", "b:1", "c:1"} }, "give Config.Peers with 2 addresses"},
		{func(c *Config) { c.Switch = "a:1=0,b:2=4" }, `Config.Switch entry "a:1=0": =N must be a rank count >= 1`},
		{func(c *Config) { c.Algo = "multi1" }, `Config.Algo = "multi1"`},
		{func(c *Config) { c.Algo = "multi" + strconv.Itoa(proto.MaxBuffers+1) }, `Config.Algo = "multi65"`},
	} {
		c := good()
		tc.edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want %q", err, tc.want)
		}
	}
}

// Every rank of every small shape has one place: the leaves' blocks are
// contiguous, in order, their sizes at most one apart, and each block's
// local ranks are 0..n-1 of n.
func TestPlaceEqualShares(t *testing.T) {
	for leaves := 1; leaves <= 6; leaves++ {
		names := make([]string, leaves)
		for i := range names {
			names[i] = "s" + strconv.Itoa(i)
		}
		c := Config{Switch: strings.Join(names, ",")}
		for world := leaves; world <= 20; world++ {
			leaf, next, size := 0, 0, 0
			lo, hi := world, 0
			for r := range world {
				sw, lr, lw := c.place(r, world)
				if r > 0 && lr == 0 { // the next leaf's block: this one's must be whole
					if next != size || leaf+1 >= leaves {
						t.Fatalf("%d leaves, world %d: rank %d starts a block after %d of %s's %d", leaves, world, r, next, names[leaf], size)
					}
					leaf, next = leaf+1, 0
				}
				if sw != names[leaf] || lr != next || (next > 0 && lw != size) {
					t.Fatalf("%d leaves, world %d: rank %d at %s %d/%d, want %s %d/%d", leaves, world, r, sw, lr, lw, names[leaf], next, size)
				}
				if next == 0 {
					size, lo, hi = lw, min(lo, lw), max(hi, lw)
				}
				next++
			}
			if leaf != leaves-1 || next != size || hi-lo > 1 {
				t.Errorf("%d leaves, world %d: %d blocks, the last %d of %d, sizes %d..%d", leaves, world, leaf+1, next, size, lo, hi)
			}
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
