package bench

import (
	"context"
	"strings"
	"testing"

	"github.com/flare-net/flare/wire"
)

// fakePeer is a peer command that prints one row from its placeholders,
// with the path, dtype and verdict given.
func fakePeer(path, dtype string, verified bool) string {
	v := "false"
	if verified {
		v = "true"
	}
	return `printf '%s\n' '{"path":"` + path + `","ranks":{ranks},"bytes":{bytes},"dtype":"` + dtype +
		`","op":"sum","iters":{iters},"median_s":0.01,"p99_s":0.02,"verified":` + v + `,"ranks_user_s":0.003}'`
}

// A peer command runs with the row's P, size and calls in its
// placeholders and gives its one row; a command that fails, prints a row
// of another path, P, size or dtype, an unverified one or none is an
// error naming the peer and the command line.
func TestPeerCmdRun(t *testing.T) {
	c := Config{DType: wire.Float32, Op: wire.OpSum, Iters: 4, Warmup: 1}
	ok := PeerCmd{Name: "fake-peer", Command: fakePeer("fake-peer", "float32", true)}
	r, err := ok.run(context.Background(), c, 3, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if r.Path != "fake-peer" || r.Ranks != 3 || r.Bytes != 4096 || r.Iters != 4 || r.MedianS != 0.01 || r.RanksUserS != 0.003 {
		t.Errorf("row %+v: want fake-peer's, 3 ranks, 4096 bytes, 4 calls", r)
	}
	for _, tc := range []struct {
		cmd, want string
	}{
		{"exit 3", "exit status 3"},
		{fakePeer("other-peer", "float32", true), `path "other-peer", want "fake-peer"`},
		{fakePeer("fake-peer", "int32", true), "want 3, 4096 of float32 sum"},
		{fakePeer("fake-peer", "float32", false), "not verified"},
		{"true", "printed 0 rows, want one"},
		{fakePeer("fake-peer", "float32", true) + "; " + fakePeer("fake-peer", "float32", true), "printed 2 rows, want one"},
		{strings.ReplaceAll(fakePeer("fake-peer", "float32", true), "{bytes}", "2048"), "a row of 3 ranks, 2048 bytes"},
		{"echo not-json", "not a flare bench --json row"},
	} {
		pc := PeerCmd{Name: "fake-peer", Command: tc.cmd}
		if _, err := pc.run(context.Background(), c, 3, 4096); err == nil || !strings.Contains(err.Error(), tc.want) ||
			!strings.Contains(err.Error(), "fake-peer") {
			t.Errorf("%q: error %v, want one naming the peer and %q", tc.cmd, err, tc.want)
		}
	}
	c.Op = wire.OpMax
	if _, err := ok.run(context.Background(), c, 3, 4096); err == nil || !strings.Contains(err.Error(), "want 3, 4096 of float32 max") {
		t.Errorf("a row of another op: %v", err)
	}
}

// --peer NAME=COMMAND: a name a peer may have and a command; the
// placeholders are replaced.
func TestParsePeerCmd(t *testing.T) {
	pc, err := ParsePeerCmd("gloo-ring=bin/peers-gloo-ring --ranks {ranks} --bytes {bytes} --iters {iters} --warmup {warmup}")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := pc.expand(8, 16<<20, 5, 1), "bin/peers-gloo-ring --ranks 8 --bytes 16777216 --iters 5 --warmup 1"; pc.Name != "gloo-ring" || got != want {
		t.Errorf("%q expands to %q, want gloo-ring's %q", pc.Command, got, want)
	}
	for _, bad := range []string{"gloo-ring", "gloo-ring=", "=cmd", "switch=cmd", "ring=cmd"} {
		if _, err := ParsePeerCmd(bad); err == nil {
			t.Errorf("ParsePeerCmd(%q) accepted", bad)
		}
	}
}

// Peer commands are for the dense table, not beside rows measured apart,
// and a name once.
func TestSuitePeerCmdsValidate(t *testing.T) {
	pc := PeerCmd{Name: "fake-peer", Command: "true"}
	for _, tc := range []struct {
		s    Suite
		want string
	}{
		{Suite{PeerCmds: []PeerCmd{pc}, Peers: &Peers{}}, "not both"},
		{Suite{PeerCmds: []PeerCmd{pc}, Sparse: true}, "dense table only"},
		{Suite{PeerCmds: []PeerCmd{pc}, Tree: TreeShape{Leaves: 2, Hosts: 2}}, "dense table only"},
		{Suite{PeerCmds: []PeerCmd{pc, pc}}, `"fake-peer": given twice`},
	} {
		if err := tc.s.validatePeerCmds(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.s.PeerCmds, err, tc.want)
		}
	}
}
