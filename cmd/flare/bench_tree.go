package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/flare-net/flare/internal/bench"
)

// parseTreeShape reads --tree LEAVESxHOSTS, "4x4".
func parseTreeShape(s string) (bench.TreeShape, error) {
	l, h, ok := strings.Cut(strings.ToLower(strings.TrimSpace(s)), "x")
	leaves, err1 := strconv.Atoi(strings.TrimSpace(l))
	hosts, err2 := strconv.Atoi(strings.TrimSpace(h))
	if !ok || err1 != nil || err2 != nil {
		return bench.TreeShape{}, fmt.Errorf("--tree %q: want LEAVESxHOSTS, such as 4x4 (4 leaf switches of 4 hosts under one root)", s)
	}
	t := bench.TreeShape{Leaves: leaves, Hosts: hosts}
	if err := t.Validate(); err != nil {
		return bench.TreeShape{}, fmt.Errorf("--tree %q: %w", s, err)
	}
	return t, nil
}
