package main

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

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
// as powers of 1000).
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
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q: want a count of bytes such as 1000, 64KiB or 16MiB", s)
	}
	return n * mult, nil
}

// formatSize prints n as the largest exact binary unit.
func formatSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
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

// humanBytes prints a byte count with one decimal in the largest binary
// unit that keeps it at least 1.
func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
