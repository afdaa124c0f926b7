package main

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/flare-net/flare/wire"
	"github.com/spf13/pflag"
)

// newFlags makes a subcommand's flag set: errors are returned, not fatal,
// and --help prints the usage with examples to stdout.
func newFlags(name, synopsis, examples string, stdout io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.SortFlags = false
	fs.Usage = func() {
		fmt.Fprintf(stdout, "usage: flare %s [flags]\n\n%s\n\nflags:\n%s", name, synopsis, fs.FlagUsages())
		if examples != "" {
			fmt.Fprintf(stdout, "\nexamples:\n%s", examples)
		}
	}
	return fs
}

// parseSize reads a byte count: 1000, 64KiB, 16MiB, 1GiB (also KB/MB/GB
// as powers of 1000), under 8 EiB: a count whose bytes would not fit an
// int64 is refused, not wrapped.
func parseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("size %q: want a count of bytes under 8EiB, such as 1000, 64KiB or 16MiB", s)
	}
	return n * mult, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func flagError(flag string, err error) error { return fmt.Errorf("%s: %w", flag, err) }

func usageError(fs *pflag.FlagSet, format string, args ...any) error {
	return fmt.Errorf("%s: %s (see 'flare %s --help')", fs.Name(), fmt.Sprintf(format, args...), fs.Name())
}

// elementFlags are --dtype and --op, the element type and operator of the
// commands that run allreduces (allreduce, bench).
type elementFlags struct{ dtype, op *string }

// addElementFlags registers --dtype and --op, float32 sum by default.
func addElementFlags(fs *pflag.FlagSet) elementFlags {
	return elementFlags{
		dtype: fs.String("dtype", "float32", "int8, int16, int32, int64, float32, float64, bfloat16 or float16"),
		op:    fs.String("op", "sum", "sum, min, max, prod, and, or or xor"),
	}
}

// parse reads the two flags, naming the one that is off.
func (f elementFlags) parse() (wire.DType, wire.Op, error) {
	dt, err := wire.ParseDType(*f.dtype)
	if err != nil {
		return 0, 0, flagError("--dtype", err)
	}
	op, err := wire.ParseOp(*f.op)
	if err != nil {
		return 0, 0, flagError("--op", err)
	}
	return dt, op, nil
}

// busyPollUsage is the --busy-poll flag's help, where every command that
// opens UDP sockets gives it.
const busyPollUsage = "how long a socket with nothing to read keeps polling, yielding the CPU between polls, before it sleeps\n" +
	"(0..10ms; 0 sleeps at once): on a box whose CPUs the switch and the ranks share, a CPU that sleeps\n" +
	"between a call's datagrams costs a wake-up of 20-100 µs on a virtual machine"
