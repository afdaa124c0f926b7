package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
)

// peerRows are the rows of host-based allreduce libraries measured apart
// (make bench-peers: peers/mpi_allreduce.c as mpi-tcp, peers/gloo_ring.cc
// as gloo-ring), read from `flare bench --peers FILE` to be printed in the
// same table, with the same ratios, as the paths flare measures.
type peerRows struct {
	rows []benchRow
	used []bool // printed in a (P, size) group of this run
}

// readPeerRows reads FILE: one `flare bench --json` row per line (blank
// lines skipped), each with a path of its own (not one flare measures), a
// world size, a vector size and positive times.
func readPeerRows(name string) (*peerRows, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("--peers: %w", err)
	}
	defer f.Close()
	return parsePeerRows(f, name)
}

func parsePeerRows(r io.Reader, name string) (*peerRows, error) {
	p := &peerRows{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var row benchRow
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&row); err != nil {
			return nil, fmt.Errorf("--peers %s line %d: not a flare bench --json row: %w", name, line, err)
		}
		if err := checkPeerRow(&row); err != nil {
			return nil, fmt.Errorf("--peers %s line %d: %w", name, line, err)
		}
		p.rows = append(p.rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--peers %s: %w", name, err)
	}
	p.used = make([]bool, len(p.rows))
	return p, nil
}

// checkPeerRow checks the fields the table reads.
func checkPeerRow(r *benchRow) error {
	switch {
	case r.Path == "" || r.Path == "switch" || r.Path == "ring" || r.Path == "relay" || r.Path == "fanout":
		return fmt.Errorf("path %q: want a peer's own name (mpi-tcp, gloo-ring), not empty or one flare bench measures", r.Path)
	case r.Ranks < 1 || r.Ranks > 1024:
		return fmt.Errorf("ranks %d: must be in 1..1024", r.Ranks)
	case r.Bytes < 1 || r.Bytes > 1<<30:
		return fmt.Errorf("bytes %d: must be in 1..1GiB", r.Bytes)
	case !(r.MedianS > 0) || math.IsInf(r.MedianS, 0) || !(r.P99S >= r.MedianS) || math.IsInf(r.P99S, 0):
		return fmt.Errorf("median_s %v p99_s %v: want a positive median and p99 >= median", r.MedianS, r.P99S)
	case r.PacketBytes != 0:
		return fmt.Errorf("packet_bytes %d: a peer sends no switch packets, want 0", r.PacketBytes)
	}
	return nil
}

// at returns the rows of world size ranks, vector size size, dtype and
// op, and marks them printed.
func (p *peerRows) at(ranks int, size int64, dtype, op string) []benchRow {
	if p == nil {
		return nil
	}
	var out []benchRow
	for i, r := range p.rows {
		if r.Ranks == ranks && r.Bytes == size && r.DType == dtype && r.Op == op {
			out = append(out, r)
			p.used[i] = true
		}
	}
	return out
}

// unused counts the rows no group of this run printed.
func (p *peerRows) unused() int {
	n := 0
	if p != nil {
		for _, u := range p.used {
			if !u {
				n++
			}
		}
	}
	return n
}
