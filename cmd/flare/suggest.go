package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// parse parses a subcommand's flags; an unknown flag's error names the
// closest valid one.
func parse(fs *pflag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if err == nil {
		return nil
	}
	msg := err.Error()
	name, ok := strings.CutPrefix(msg, "unknown flag: --")
	if !ok {
		return err
	}
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	if s := closest(name, names); s != "" {
		return fmt.Errorf("%s: unknown flag --%s; did you mean --%s? (see 'flare %s --help')", fs.Name(), name, s, fs.Name())
	}
	return fmt.Errorf("%s: unknown flag --%s (see 'flare %s --help')", fs.Name(), name, fs.Name())
}

// closest returns the candidate nearest to s by edit distance, or "" when
// none is near enough to be a plausible typo (at most a third of its
// length, and at least 2, edits away) and none starts with s.
func closest(s string, candidates []string) string {
	best, bestD := "", len(s)/3
	bestD = max(bestD, 2)
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestD || (d == bestD && best == "") {
			best, bestD = c, d
		}
	}
	if best == "" {
		for _, c := range candidates {
			if len(s) >= 3 && strings.HasPrefix(c, s) {
				return c
			}
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
