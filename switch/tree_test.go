package swtch_test

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/flare-net/flare/hostlib"
	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/internal/inproc"
	"github.com/flare-net/flare/internal/inproctest"
	swtch "github.com/flare-net/flare/switch"
	"github.com/flare-net/flare/wire"
)

// treeSwitch is the config of every switch of the tree tests: a small
// processing unit, so that a tree's switches and hosts share few cores.
// Its log goes to the test's output, shown when the test fails: a join
// that stalls in a tree (a leaf waiting for its parent, a parent for a
// leaf) is then told by the switches' own lines.
func treeSwitch(t *testing.T) swtch.Config {
	return swtch.Config{HPU: hpu.Config{Clusters: 2, CoresPerCluster: 2, L1Bytes: 1 << 20},
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}
}

// startTree runs a root and leaves leaf switches on loopback until the
// test ends, each with the pool of multicast groups (none when invalid).
func startTree(t *testing.T, leaves int, groups netip.Prefix) *inproc.Tree {
	t.Helper()
	cfg := treeSwitch(t)
	cfg.Multicast = groups
	tree, err := inproctest.Group(t).Tree(leaves, cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return tree
}

// treeAllReduce runs calls allreduces of in (one vector per rank) over
// leaves × perLeaf hosts under one root (leaves = 0: one switch holds every
// rank) and returns rank 0's results, one per call. With groups valid,
// every switch has that pool of multicast groups and the hosts ask for one.
func treeAllReduce(t *testing.T, leaves, perLeaf int, algo wire.Algo, reproducible bool, in [][]float32, calls int, groups netip.Prefix) [][]float32 {
	t.Helper()
	var addrs []string
	if leaves == 0 {
		cfg := treeSwitch(t)
		cfg.Multicast = groups
		addrs = []string{startSwitch(t, cfg).Addr().String()}
		perLeaf = len(in)
	} else {
		addrs = strings.Split(startTree(t, leaves, groups).Addrs(), ",")
	}
	world := len(in)
	ss := make([]*hostlib.Session, world)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	for r := range world {
		g.Go(func() error {
			s, err := hostlib.Join(gctx, hostlib.Options{Switch: addrs[r/perLeaf], Job: 3, Token: 9, Rank: r % perLeaf, World: perLeaf,
				DType: wire.Float32, Op: wire.OpSum, Elements: len(in[0]), Algo: algo, Reproducible: reproducible, Timeout: 20 * time.Second,
				Multicast: groups.IsValid()})
			ss[r] = s
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, s := range ss {
			s.Close()
		}
	}()
	for r, s := range ss {
		if s.Group().IsValid() != groups.IsValid() {
			t.Fatalf("rank %d takes its results on group %v, with the switches' pool %v", r, s.Group(), groups)
		}
	}
	var out [][]float32
	for range calls {
		bufs := make([][]float32, world)
		g, gctx := errgroup.WithContext(ctx)
		for r, s := range ss {
			bufs[r] = slices.Clone(in[r])
			g.Go(func() error { return hostlib.AllReduce(gctx, s, bufs[r]) })
		}
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
		for r := 1; r < world; r++ {
			if !slices.Equal(bufs[r], bufs[0]) {
				t.Fatalf("rank %d's result differs from rank 0's", r)
			}
		}
		out = append(out, bufs[0])
	}
	return out
}

// A tree of switches gives one sum to every host, and in reproducible mode
// the same bits on every call and every run: each level pairs its children
// by index. With power-of-two leaves holding contiguous ranks, the bits are
// those of one switch's tree over all ranks.
func TestTreeReproducible(t *testing.T) {
	const leaves, perLeaf, n = 2, 4, 3000
	r := rand.New(rand.NewPCG(7, 7))
	in := make([][]float32, leaves*perLeaf)
	for i := range in {
		in[i] = make([]float32, n)
		for k := range in[i] {
			in[i][k] = float32(r.NormFloat64() * float64(1+k%1000) * 1e3)
		}
	}
	flat := treeAllReduce(t, 0, 0, wire.AlgoAuto, true, in, 1, netip.Prefix{})[0]
	first := treeAllReduce(t, leaves, perLeaf, wire.AlgoAuto, true, in, 3, netip.Prefix{})
	again := treeAllReduce(t, leaves, perLeaf, wire.AlgoAuto, true, in, 1, netip.Prefix{})
	// The leaves send their hosts the results on multicast groups: the
	// same bits.
	multicast := treeAllReduce(t, leaves, perLeaf, wire.AlgoAuto, true, in, 2, netip.MustParsePrefix("239.255.89.0/28"))
	for i, res := range append(append(first, again...), multicast...) {
		if !slices.Equal(res, flat) {
			t.Fatalf("run %d: the tree's reproducible sum differs from one switch's", i)
		}
	}
	// Every design sums right (to float tolerance) through the tree.
	// (multi is covered end to end, in cmd/flare.)
	for _, algo := range []wire.Algo{wire.AlgoSingle, wire.AlgoTree} {
		res := treeAllReduce(t, leaves, perLeaf, algo, false, in, 1, netip.Prefix{})[0]
		for k := range res {
			if d := res[k] - flat[k]; d > 1e-3*(1+abs(flat[k])) || -d > 1e-3*(1+abs(flat[k])) {
				t.Fatalf("%s: element %d = %v, want about %v", algo, k, res[k], flat[k])
			}
		}
	}
}

func abs(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}
