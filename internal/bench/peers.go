package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
)

// Peers are the rows of host-based allreduce libraries measured apart
// (make bench-peers: peers/mpi_allreduce.c as mpi-tcp, peers/gloo_ring.cc
// as gloo-ring), printed in a Suite's table, with the same ratios, beside
// the paths it measures (Suite.Peers).
type Peers struct {
	rows []Row
	used []bool // printed in a (P, size) group of a run
}

// ReadPeers reads the file name: one `flare bench --json` row per line
// (blank lines skipped), each with a path of its own (not one flare
// measures), a world size, a vector size and positive times.
func ReadPeers(name string) (*Peers, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParsePeers(f, name)
}

// ParsePeers reads ReadPeers' rows from r, the file name for its errors.
func ParsePeers(r io.Reader, name string) (*Peers, error) {
	p := &Peers{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var row Row
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&row); err != nil {
			return nil, fmt.Errorf("%s line %d: not a flare bench --json row: %w", name, line, err)
		}
		if err := CheckPeerRow(&row); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", name, line, err)
		}
		p.rows = append(p.rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p.used = make([]bool, len(p.rows))
	return p, nil
}

// CheckPeerRow checks the fields of a peer's row the table reads.
func CheckPeerRow(r *Row) error {
	if err := checkPeerName(r.Path); err != nil {
		return err
	}
	switch {
	case r.Ranks < 1 || r.Ranks > MaxRanks:
		return fmt.Errorf("ranks %d: must be in 1..%d", r.Ranks, MaxRanks)
	case r.Bytes < 1 || r.Bytes > 1<<30:
		return fmt.Errorf("bytes %d: must be in 1..1GiB", r.Bytes)
	case !(r.MedianS > 0) || math.IsInf(r.MedianS, 0) || !(r.P99S >= r.MedianS) || math.IsInf(r.P99S, 0):
		return fmt.Errorf("median_s %v p99_s %v: want a positive median and p99 >= median", r.MedianS, r.P99S)
	case r.PacketBytes != 0:
		return fmt.Errorf("packet_bytes %d: a peer sends no switch packets, want 0", r.PacketBytes)
	}
	return nil
}

// checkPeerName refuses a peer's path that is empty or one flare bench
// measures itself.
func checkPeerName(path string) error {
	if path == "" || ThroughSwitch(path) || path == PathRing || isRelay(path) {
		return fmt.Errorf("path %q: want a peer's own name (mpi-tcp, gloo-ring), not empty or one flare bench measures", path)
	}
	return nil
}

// at returns the rows of world size ranks, vector size size, dtype and
// op, and marks them printed.
func (p *Peers) at(ranks int, size int64, dtype, op string) []Row {
	if p == nil {
		return nil
	}
	var out []Row
	for i, r := range p.rows {
		if r.Ranks == ranks && r.Bytes == size && r.DType == dtype && r.Op == op {
			out = append(out, r)
			p.used[i] = true
		}
	}
	return out
}

// Unused counts the rows no group of a run printed: rows for a P, size,
// dtype or op it did not measure.
func (p *Peers) Unused() int {
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
