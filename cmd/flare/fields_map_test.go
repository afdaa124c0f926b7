package main

import (
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/internal/bench"
	swtch "github.com/flare-net/flare/switch"
	"github.com/flare-net/flare/testbed"
	"github.com/flare-net/flare/wire"
)

// A subcommand's flags set the library's fields its error map says they
// set: each flag given alone, with a value other than its default, changes
// that field and no other field the map names; and every flag that sets a
// field is in the map, so a library's error names the flag the user gave
// (withFlags), not a Go field.

// otherValues are values, other than the default, for the flags whose
// default cannot be moved by its type alone.
var otherValues = map[string][]string{
	"--listen": {"127.0.0.1:7471"}, "--admin": {"off"}, "--packet": {"2KiB"}, "--max-memory": {"64MiB"},
	"--l1": {"64KiB"}, "--pcap": {"x.pcap"}, "--pcap-max": {"2MiB"}, "--parent": {"127.0.0.1:7472"},
	"--admission": {"registered"}, "--admin-secret-file": {"secret"}, "--multicast": {"239.1.1.0/24"},
	"--multicast-interface": {"10.1.2.3"}, "--switch": {"127.0.0.1:7473"}, "--dtype": {"int8"}, "--op": {"max"},
	"--algo": {"single"}, "--peers": {"127.0.0.1:1,127.0.0.1:2"}, "--token": {"7"}, "--job": {"9"},
	"--storage": {"array", "--sparse"}, "--count": {"3"}, "--paths": {"ring"}, "--bytes": {"64KiB"},
	"--densities": {"0.5"}, "--profile": {"prof"}, "--ranks": {"3"},
}

// otherValue is the arguments that give flag f a value other than its
// default: values' (a command's own), else otherValues', else one its
// type gives.
func otherValue(t *testing.T, fs *pflag.FlagSet, values map[string][]string, f string) []string {
	t.Helper()
	if v, ok := values[f]; ok {
		return append([]string{f}, v...)
	}
	if v, ok := otherValues[f]; ok {
		return append([]string{f}, v...)
	}
	fl := fs.Lookup(strings.TrimPrefix(f, "--"))
	if fl == nil {
		t.Fatalf("%s: no such flag", f)
	}
	switch fl.Value.Type() {
	case "bool":
		def, _ := strconv.ParseBool(fl.DefValue)
		return []string{f + "=" + strconv.FormatBool(!def)}
	case "int":
		def, _ := strconv.Atoi(fl.DefValue)
		return []string{f, strconv.Itoa(def + 1)}
	case "float64":
		def, _ := strconv.ParseFloat(fl.DefValue, 64)
		return []string{f, strconv.FormatFloat(def/2+0.125, 'g', -1, 64)}
	case "duration":
		def, _ := time.ParseDuration(fl.DefValue)
		return []string{f, (def + time.Second).String()}
	}
	t.Fatalf("%s: a %s flag needs a value in otherValues", f, fl.Value.Type())
	return nil
}

// field is the value at a field path (HPU.SubsetS) of struct v.
func field(v reflect.Value, path string) reflect.Value {
	for _, name := range strings.Split(path, ".") {
		v = v.FieldByName(name)
	}
	return v
}

// checkFlagsSetFields parses each flag of m alone into a fresh value
// through parse, which returns it, and compares it with the defaults'
// parse. notFields are the flags that set no field of the map's type;
// derived, the fields a flag may change besides its own (a default that
// follows it); values, the command's own values for flags.
func checkFlagsSetFields[T any](t *testing.T, m fields, notFields []string, derived, values map[string][]string, parse func(t *testing.T, args []string) (*pflag.FlagSet, T)) {
	fs, want := parse(t, nil)
	mapped := map[string]bool{}
	for path, f := range m.flags {
		mapped[f] = true
		args := otherValue(t, fs, values, f)
		_, got := parse(t, args)
		for other := range m.flags {
			g, w := field(reflect.ValueOf(got), other), field(reflect.ValueOf(want), other)
			if !g.IsValid() {
				t.Fatalf("%s.%s: no such field", m.typ, other)
			}
			same := reflect.DeepEqual(g.Interface(), w.Interface())
			if !same && slices.Contains(derived[f], other) {
				continue
			}
			if same == (other == path) {
				verb := "did not change"
				if !same {
					verb = "changed"
				}
				t.Errorf("%v: %s.%s %s (%v, default %v); the map says %s sets %s.%s", args, m.typ, other, verb, g, w, f, m.typ, path)
			}
		}
	}
	fs.VisitAll(func(fl *pflag.Flag) {
		if f := "--" + fl.Name; !mapped[f] && !slices.Contains(notFields, f) {
			t.Errorf("%s sets no field of %s in the map: add it (or to the flags that set none)", f, m.typ)
		}
	})
}

// parsedFlags parses args as command cmd's flags, which add registers,
// and runs the resolve step add returns (nil: none), failing the test on
// an error.
func parsedFlags(t *testing.T, cmd string, args []string, add func(fs *pflag.FlagSet) (resolve func() error)) *pflag.FlagSet {
	t.Helper()
	fs := newFlags(cmd, "", "", io.Discard)
	resolve := add(fs)
	if err := parse(fs, args); err != nil {
		t.Fatalf("flare %s %q: %v", cmd, args, err)
	}
	if resolve != nil {
		if err := resolve(); err != nil {
			t.Fatalf("flare %s %q: %v", cmd, args, err)
		}
	}
	return fs
}

// parsedSwitch is flare switch's Config from args.
func parsedSwitch(t *testing.T, args []string) (*pflag.FlagSet, swtch.Config) {
	var cfg swtch.Config
	fs := parsedFlags(t, "switch", args, func(fs *pflag.FlagSet) func() error {
		sf := addSwitchFlags(fs, &cfg)
		return func() error { return sf.resolve(&cfg, io.Discard) }
	})
	return fs, cfg
}

// parsedAllReduce is flare allreduce's Config from args, its token
// resolved as runAllReduce does when --token is given.
func parsedAllReduce(t *testing.T, args []string) (*pflag.FlagSet, bench.Config) {
	var c bench.Config
	fs := parsedFlags(t, "allreduce", args, func(fs *pflag.FlagSet) func() error {
		a := addAllReduceFlags(fs, &c)
		return func() error {
			if err := a.resolve(fs, &c); err != nil || !fs.Changed("token") {
				return err
			}
			return resolveToken(&c, *a.token, true, "")
		}
	})
	return fs, c
}

// parsedBench is flare bench's Suite from args.
func parsedBench(t *testing.T, args []string) (*pflag.FlagSet, bench.Suite) {
	var s bench.Suite
	fs := parsedFlags(t, "bench", args, func(fs *pflag.FlagSet) func() error {
		b := addBenchFlags(fs, &s)
		return func() error { return b.resolve(fs, &s, io.Discard) }
	})
	return fs, s
}

func TestSwitchFlagsSetTheirFields(t *testing.T) {
	checkFlagsSetFields(t, switchFlags, []string{"--help", "--log-level"}, nil, nil, parsedSwitch)
}

func TestAllReduceFlagsSetTheirFields(t *testing.T) {
	// --bytes sets Count (as does --count); a vector's default length is
	// 1 MiB of its dtype; --storage is a sparse job's (given with
	// --sparse), and a sparse job's default storage is hash; ranks in one
	// process do not busy-poll by default.
	derived := map[string][]string{"--dtype": {"Count"}, "--sparse": {"Storage"}, "--storage": {"Sparse"}, "--ranks": {"BusyPoll"}}
	checkFlagsSetFields(t, configFlags, []string{"--help", "--json", "--cpuprofile", "--bytes"}, derived, nil, parsedAllReduce)
}

func TestBenchFlagsSetTheirFields(t *testing.T) {
	peers := filepath.Join(t.TempDir(), "peers.json")
	if err := os.WriteFile(peers, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	values := map[string][]string{"--peers": {peers}, "--peer": {"x=true"}, "--tree": {"2x2"}, "--ranks": {"3"}, "--packet": {"2KiB"}}
	// A sparse bench measures the switch alone unless --paths says; a tree
	// runs in this process, its own switches at their own packet size, so
	// neither the ranks' busy poll nor --packet applies.
	derived := map[string][]string{"--sparse": {"Paths"}, "--tree": {"Packets", "BusyPoll"}}
	checkFlagsSetFields(t, suiteFlags, []string{"--help", "--procs"}, derived, values, parsedBench)
}

// A bench's rank process gets the bench's call: allreduceArgs' command
// line parses back to the Config it was made from, in every field it
// carries.
func TestAllReduceArgsRoundTrip(t *testing.T) {
	for _, c := range []bench.Config{
		{Switch: "127.0.0.1:7471", Rank: 2, World: 5, Job: 9, Token: 0xfeed, Count: 1000, DType: wire.Int16, Op: wire.OpMax,
			Algo: "multi4", Iters: 7, Warmup: 3, Timeout: 9 * time.Second, BusyPoll: 20 * time.Microsecond, Verify: true, Multicast: true,
			Density: 0.01, Overlap: 0.5, TailMedian: 2 * time.Millisecond}, // what a dense call does not carry: the flags' defaults
		{Switch: "127.0.0.1:7472", Rank: 0, World: 2, Job: 1, Token: 1, Count: 64, DType: wire.Float64, Op: wire.OpSum, Algo: "ring",
			Iters: 1, Timeout: time.Second, Sparse: true, Density: 0.25, Overlap: 0.75, Storage: wire.StorageArray,
			Peers: []string{"127.0.0.1:1", "127.0.0.1:2"}, TailMedian: 2 * time.Millisecond},
	} {
		args := allreduceArgs(c)
		_, got := parsedAllReduce(t, args[1:])
		if !reflect.DeepEqual(got, c) {
			t.Errorf("%q parses to\n%+v, want\n%+v", args, got, c)
		}
	}
}

// --bytes is the vector's size in bytes, whatever its dtype: the call's
// Count is that many bytes of elements.
func TestAllReduceBytes(t *testing.T) {
	for _, dt := range wire.DTypes {
		_, c := parsedAllReduce(t, []string{"--ranks", "2", "--bytes", "64KiB", "--dtype", dt.String()})
		if want := 64 << 10 / dt.Size(); c.Count != want {
			t.Errorf("--bytes 64KiB --dtype %s: %d elements, want %d", dt, c.Count, want)
		}
	}
}

// parsedTestbed is flare testbed's Config from args.
func parsedTestbed(t *testing.T, args []string) (*pflag.FlagSet, testbed.Config) {
	var c testbed.Config
	fs := parsedFlags(t, "testbed", args, func(fs *pflag.FlagSet) func() error {
		tf := addTestbedFlags(fs, &c)
		return func() error { return tf.resolve(fs, &c) }
	})
	return fs, c
}

// The testbed's flags, --tree's two fields and --switch-args apart.
func TestTestbedFlagsSetTheirFields(t *testing.T) {
	m := fields{testbedFlags.typ, maps.Clone(testbedFlags.flags)}
	delete(m.flags, "Leaves")
	delete(m.flags, "PerLeaf")
	values := map[string][]string{"--link": {"2Gbit"}, "--uplink": {"300Mbit", "--tree", "2x2"}, "--loss": {"1%"}} // --uplink needs a tree
	checkFlagsSetFields(t, m, []string{"--help", "--tree", "--switch-args", "--sweep-link", "--sweep-packets", "--json"}, nil, values, parsedTestbed)

	_, c := parsedTestbed(t, []string{"--tree", "4x3", "--switch-args", " --clusters 2  --cores 4 ", "--loss", "2.5%"})
	if c.Leaves != 4 || c.PerLeaf != 3 || !slices.Equal(c.SwitchArgs, []string{"--clusters", "2", "--cores", "4"}) || c.Loss != 0.025 {
		t.Errorf("--tree 4x3 --switch-args ' --clusters 2  --cores 4 ' --loss 2.5%%: %d leaves of %d hosts, switch args %q, loss %v",
			c.Leaves, c.PerLeaf, c.SwitchArgs, c.Loss)
	}
}

// parsedCalibrate is flare model calibrate's CalibrateConfig from args.
func parsedCalibrate(t *testing.T, args []string) (*pflag.FlagSet, bench.CalibrateConfig) {
	var c bench.CalibrateConfig
	fs := parsedFlags(t, "model calibrate", args, func(fs *pflag.FlagSet) func() error {
		a := addCalibrateFlags(fs, &c)
		return func() error { return a.resolve(&c) }
	})
	return fs, c
}

// flare model calibrate's flags, each to the harness's or the rounds'
// field it sets (calibrateFlags names those a Calibrate error may name).
func TestCalibrateFlagsSetTheirFields(t *testing.T) {
	m := fields{"CalibrateConfig", map[string]string{"Harness.Algo": "--algo", "Harness.Elements": "--bytes", "Harness.DType": "--dtype",
		"Harness.Hosts": "--hosts", "Runs": "--runs", "RunTime": "--run-time"}}
	for field, flag := range calibrateFlags.flags {
		if m.flags[field] != flag {
			t.Errorf("calibrateFlags maps %s to %s; the flags map it to %s", field, flag, m.flags[field])
		}
	}
	// The vector's elements are --bytes of the dtype's size.
	derived := map[string][]string{"--dtype": {"Harness.Elements"}}
	checkFlagsSetFields(t, m, []string{"--help", "--format"}, derived, nil, parsedCalibrate)
	if _, c := parsedCalibrate(t, []string{"--algo", "multi4", "--bytes", "64KiB", "--dtype", "float64"}); c.Harness.Buffers != 4 || c.Harness.Elements != 8192 {
		t.Errorf("--algo multi4 --bytes 64KiB --dtype float64: %d buffers, %d elements; want 4, 8192", c.Harness.Buffers, c.Harness.Elements)
	}
}

// What flare bench's flags resolve beyond their own fields: --sparse
// measures the switch alone unless --paths says; a tree with its ranks
// in this process, and a daemon's run whose --packet sizes the relays
// alone, are taken; ranks as processes busy-poll by default and write
// their errors where the bench does, ranks in this process do neither.
func TestBenchResolve(t *testing.T) {
	if _, s := parsedBench(t, []string{"--sparse", "--paths", "ring"}); !slices.Equal(s.Paths, []string{"ring"}) {
		t.Errorf("--sparse --paths ring: paths %v", s.Paths)
	}
	if _, s := parsedBench(t, []string{"--tree", "2x2", "--procs=false"}); s.Tree.Leaves != 2 || s.Procs != nil {
		t.Errorf("--tree 2x2 --procs=false: tree %v, procs %v", s.Tree, s.Procs)
	}
	if _, s := parsedBench(t, []string{"--switch", "127.0.0.1:1", "--packet", "2KiB", "--paths", "relay"}); !slices.Equal(s.Packets, []int{2048}) {
		t.Errorf("--switch with --packet 2KiB --paths relay: packets %v", s.Packets)
	}
	if _, s := parsedBench(t, nil); s.BusyPoll != conn.DefaultBusyPoll || s.Procs == nil || s.Procs.Stderr == nil {
		t.Errorf("defaults: busy poll %v, procs %+v; want %v, rank processes with the bench's stderr", s.BusyPoll, s.Procs, conn.DefaultBusyPoll)
	}
	if _, s := parsedBench(t, []string{"--procs=false"}); s.BusyPoll != 0 || s.Procs != nil {
		t.Errorf("--procs=false: busy poll %v, procs %+v; want 0, none", s.BusyPoll, s.Procs)
	}
}
