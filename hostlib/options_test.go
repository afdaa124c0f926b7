package hostlib

import (
	"math"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/wire"
)

// goodOptions are options Join's checks take: a float32 sum of 100
// elements, rank 0 of 4. (No switch answers there: a check that lets its
// case through fails that case in a fifth of a second.)
var goodOptions = Options{Switch: "127.0.0.1:1", World: 4, DType: wire.Float32, Op: wire.OpSum, Elements: 100, JoinTimeout: 200 * time.Millisecond}

// Join refuses every option out of range before it sends anything, with
// the field, its value and what it may be.
func TestOptionsChecks(t *testing.T) {
	memConn, err := conn.NewMemNetwork().Listen(netip.MustParseAddrPort("127.0.0.1:9"))
	if err != nil {
		t.Fatal(err)
	}
	defer memConn.Close()
	sparse := func(o *Options) { o.Sparse = true }
	tests := []struct {
		edit func(*Options)
		want string
	}{
		{func(o *Options) { o.Switch = "" }, "Switch is empty"},
		{func(o *Options) { o.World = 0 }, "World = 0: must be in 1..65535"},
		{func(o *Options) { o.World = MaxWorld + 1 }, "World = 65536: must be in 1..65535"},
		{func(o *Options) { o.Rank = 4 }, "Rank = 4: must be in 0..3"},
		{func(o *Options) { o.Rank = -1 }, "Rank = -1"},
		{func(o *Options) { o.DType = 0 }, "DType = dtype(0)"},
		{func(o *Options) { o.Op = 9 }, "Op = op(9)"},
		{func(o *Options) { o.Op = wire.OpXor }, "Op = xor: not defined on float32"},
		{func(o *Options) { o.Elements = 0 }, "Elements = 0"},
		{func(o *Options) { o.Elements = math.MaxInt/4 + 1 }, "must be in 1..2305843009213693951 for float32"},
		{func(o *Options) { o.Algo = 7 }, "Algo = algo(7)"},
		{func(o *Options) { o.Buffers = 256 }, "Buffers = 256: must be in 0..255"},
		{func(o *Options) { o.Buffers = -1 }, "Buffers = -1: must be in 0..255"},
		{func(o *Options) { o.Reproducible, o.Algo = true, wire.AlgoMulti }, "only the tree design is reproducible"},
		{func(o *Options) { o.Reproducible, o.Algo = true, wire.AlgoSingle }, "only the tree design is reproducible"},
		{func(o *Options) { o.PacketElems = 2243 }, "PacketElems = 2243: must be in 0..2242"},
		{func(o *Options) { o.PacketElems = -1 }, "PacketElems = -1: must be in 0..2242"},
		{func(o *Options) { sparse(o); o.Op = wire.OpProd }, "Op = prod with Sparse: must be sum, min or max"},
		{func(o *Options) { sparse(o); o.Algo = wire.AlgoTree }, "Algo = tree, Reproducible = false with Sparse"},
		{func(o *Options) { sparse(o); o.Reproducible = true }, "Algo = auto, Reproducible = true with Sparse"},
		{func(o *Options) { sparse(o); o.Storage = 3 }, "Storage = storage(3) with Sparse: must be hash or array"},
		{func(o *Options) { sparse(o); o.PacketElems = 10 }, "PacketElems = 10 with Sparse: the switch sets pairs per packet"},
		{func(o *Options) { sparse(o); o.BlockElems = -1 }, "BlockElems = -1: must be in 0..4294967295"},
		{func(o *Options) { o.Storage = wire.StorageHash }, "Storage = hash, BlockElems = 0: only for sparse jobs"},
		{func(o *Options) { o.BlockElems = 64 }, "Storage = dense, BlockElems = 64: only for sparse jobs"},
		{func(o *Options) { o.BlockDeadline = -time.Millisecond }, "BlockDeadline = -1ms: must be 0 (exact) or whole milliseconds in 1ms..1m5.535s"},
		{func(o *Options) { o.BlockDeadline = 65536 * time.Millisecond }, "BlockDeadline = 1m5.536s: must be 0"},
		{func(o *Options) { o.BlockDeadline = 1500 * time.Microsecond }, "BlockDeadline = 1.5ms: must be 0"},
		{func(o *Options) { o.BlockDeadline = time.Microsecond }, "BlockDeadline = 1µs: must be 0"},
		{func(o *Options) { o.BlockDeadline, o.Algo = time.Millisecond, wire.AlgoMulti }, "bounded time works with the dense single-buffer design only"},
		{func(o *Options) { o.BlockDeadline, o.Algo = time.Millisecond, wire.AlgoTree }, "bounded time works with the dense single-buffer design only"},
		{func(o *Options) { o.BlockDeadline, o.Reproducible = time.Millisecond, true }, "bounded time works with the dense single-buffer design only"},
		{func(o *Options) { o.BlockDeadline = time.Millisecond; sparse(o) }, "bounded time works with the dense single-buffer design only"},
		{func(o *Options) { o.Timeout = -1 }, "Timeout = -1ns"},
		{func(o *Options) { o.JoinTimeout = -1 }, "JoinTimeout = -1ns"},
		{func(o *Options) { o.BusyPoll = -time.Microsecond }, "BusyPoll = -1µs: must be in 0..10ms"},
		{func(o *Options) { o.BusyPoll = conn.MaxBusyPoll + 1 }, "BusyPoll = 10.000001ms: must be in 0..10ms"},
		{func(o *Options) { o.Multicast, o.Conn = true, memConn }, "Multicast with Conn: multicast results need the session's own UDP sockets"},
		{func(o *Options) { o.Multicast, o.Switch = true, "[::1]:1" }, "multicast results are IPv4 only"},
	}
	for _, tt := range tests {
		o := goodOptions
		tt.edit(&o)
		_, err := Join(t.Context(), o)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Join: %v; want an error containing %q", err, tt.want)
		}
	}
}

// validated is goodOptions changed by edit, with their defaults, and what
// Join's checks say of them.
func validated(edit func(*Options)) (Options, error) {
	o := goodOptions
	edit(&o)
	o = o.withDefaults()
	return o, o.validate()
}

// The ends of every range Join checks are allowed, so that a check moved
// by one toward refusing shows here as a refusal of what the docs allow.
func TestOptionsLimitsAllowed(t *testing.T) {
	sparse := func(o *Options) { o.Sparse = true }
	for _, edit := range []func(*Options){
		func(o *Options) { o.World, o.Rank = MaxWorld, MaxWorld-1 },
		func(o *Options) { o.World, o.Rank = 1, 0 },
		func(o *Options) { o.Elements = math.MaxInt / 4 },
		func(o *Options) { o.Elements, o.DType = math.MaxInt, wire.Int8 },
		func(o *Options) { o.Algo, o.Buffers = wire.AlgoMulti, MaxBuffers },
		func(o *Options) { o.PacketElems = 2242 },
		func(o *Options) { o.PacketElems, o.DType = 1121, wire.Float64 },
		func(o *Options) { o.Reproducible = true },
		func(o *Options) { o.Reproducible, o.Algo = true, wire.AlgoTree },
		func(o *Options) { sparse(o) },
		func(o *Options) { sparse(o); o.Op, o.Algo, o.Buffers = wire.OpMax, wire.AlgoMulti, 4 },
		func(o *Options) { sparse(o); o.Op, o.Storage = wire.OpMin, wire.StorageArray },
		func(o *Options) { o.BlockDeadline = time.Millisecond },
		func(o *Options) { o.BlockDeadline, o.Algo = 65535*time.Millisecond, wire.AlgoSingle },
		func(o *Options) { o.BusyPoll = conn.MaxBusyPoll },
		func(o *Options) { o.Multicast = true },
	} {
		if o, err := validated(edit); err != nil {
			t.Errorf("%+v: %v; want it allowed", o, err)
		}
	}
	o := (Options{Sparse: true}).withDefaults()
	if o.Storage != wire.StorageHash {
		t.Errorf("a sparse job's default storage is %v, want hash", o.Storage)
	}
}

// The bounds at 2^32 (a job's blocks, a sparse block's range), which an
// int holds only where it is 64 bits wide.
func TestOptionsWideBounds(t *testing.T) {
	if strconv.IntSize < 64 {
		t.Skip("2^32 is past a 32-bit int")
	}
	one := int64(1)
	two32 := int(one << 32) // (not a constant, so that this compiles for 32-bit targets too)
	for _, tc := range []struct {
		edit func(*Options)
		want string // "" where allowed
	}{
		{func(o *Options) { o.PacketElems, o.Elements = 1, two32 }, "PacketElems = 1: 4294967296 elements would make 4294967296 blocks; a job has at most 4294967295"},
		{func(o *Options) { o.PacketElems, o.Elements = 1, two32-1 }, ""},
		{func(o *Options) { o.Sparse, o.BlockElems = true, two32 }, "BlockElems = 4294967296: must be in 0..4294967295"},
		{func(o *Options) { o.Sparse, o.BlockElems = true, two32-1 }, ""},
	} {
		if o, err := validated(tc.edit); (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v; want %q", o, err, tc.want)
		}
	}
}

// A switch's address without a port takes the default port; an IPv4
// address written as IPv6 becomes IPv4 (the switch answers from that);
// a name is looked up.
func TestResolveSwitch(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1":             "127.0.0.1:7470",
		"10.1.2.3:9000":         "10.1.2.3:9000",
		"[::ffff:127.0.0.1]:80": "127.0.0.1:80",
		"::1":                   "[::1]:7470",
		"localhost:5":           "127.0.0.1:5",
	} {
		got, err := resolveSwitch(in)
		if in == "localhost:5" && got.Addr().Is6() && got.Addr().IsLoopback() {
			continue // a box whose localhost is ::1 first
		}
		if err != nil || got.String() != want {
			t.Errorf("resolveSwitch(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
}

// A session with a switch on its own box binds the loopback, where no one
// from outside can send it results; with a switch elsewhere it binds every
// address.
func TestListenAddr(t *testing.T) {
	for sw, want := range map[string]string{
		"127.0.0.1:7470":   "127.0.0.1:0",
		"127.9.9.9:7470":   "127.0.0.1:0",
		"[::1]:7470":       "[::1]:0",
		"10.0.0.1:7470":    ":0",
		"[2001:db8::1]:70": ":0",
	} {
		if got := listenAddr(netip.MustParseAddrPort(sw)); got != want {
			t.Errorf("listenAddr(%s) = %s, want %s", sw, got, want)
		}
	}
}
