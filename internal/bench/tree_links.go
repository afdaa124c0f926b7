package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	swtch "github.com/flare-net/flare/switch"
)

// The counters are read when the tree is quiet: a host can hold a result a
// moment before the sender's counter moves, and the answer to a
// retransmission a host sent just before its call ended may still be in a
// socket or a switch's queue. settleLinks polls every linkSettle until
// nothing moved over linkQuiet polls in a row, for at most linkSettleMax,
// so that every datagram a call caused is counted in that call's window,
// however slow the machine.
const (
	linkSettle    = 2 * time.Millisecond
	linkQuiet     = 3
	linkSettleMax = 2 * time.Second
)

// linkSnap is every counter of the tree's leaves at one moment.
type linkSnap map[swtch.LinkCounter]swtch.LinkTraffic

func snapshot(counters [][]swtch.LinkCounter) linkSnap {
	s := linkSnap{}
	for _, cs := range counters {
		for _, c := range cs {
			s[c] = c.Load()
		}
	}
	return s
}

// settleLinks waits for the tree to be quiet (the leaves' and the root's
// link counters and the ranks' packet counts unchanged) and returns the
// leaves' counters then.
func (t *treeRun) settleLinks(counters [][]swtch.LinkCounter, r ranks) linkSnap {
	type state struct {
		leaves linkSnap
		root   []swtch.LinkTraffic
		ranks  []traffic
	}
	read := func() state {
		return state{leaves: snapshot(counters), root: t.tree.Root.LinkTraffic(), ranks: r.traffic()}
	}
	same := func(a, b state) bool {
		return maps.Equal(a.leaves, b.leaves) && slices.Equal(a.root, b.root) && slices.EqualFunc(a.ranks, b.ranks,
			func(x, y traffic) bool { return x.packetsTx == y.packetsTx && x.packetsRx == y.packetsRx })
	}
	last := read()
	for quiet, deadline := 0, time.Now().Add(linkSettleMax); quiet < linkQuiet && time.Now().Before(deadline); {
		time.Sleep(linkSettle)
		cur := read()
		if same(cur, last) {
			quiet++
		} else {
			quiet = 0
		}
		last = cur
	}
	return last.leaves
}

// inNetwork measures c through the tree (dense, or sparse with c.Sparse),
// its bytes from the leaves' link counters.
func (t *treeRun) inNetwork(ctx context.Context, c Config) (*TreeRow, error) {
	m, err := start(ctx, c)
	if err != nil {
		return nil, err
	}
	defer m.close()
	// Every join returned: each leaf admitted the job (it acks its hosts
	// once the root acked it), so the hosts' links are counted now.
	counters := make([][]swtch.LinkCounter, len(t.tree.Leaves))
	for i, l := range t.tree.Leaves {
		counters[i] = l.LinkCounters()
	}
	var snaps []linkSnap // before and after the measured calls
	m.settle = func() { snaps = append(snaps, t.settleLinks(counters, m.ranks)) }
	if err := m.run(ctx); err != nil {
		return nil, err
	}
	row := t.newRow(m)
	row.LinkBytesFrom = "switches"
	d := m.measured()
	row.Retransmits, row.SpilledPairs = int64(d.retransmits), int64(d.spilled)/int64(c.Iters)
	_, world := c.localRanks()
	leaves := make([][]swtch.LinkTraffic, len(counters))
	for i, cs := range counters {
		for _, lc := range cs {
			leaves[i] = append(leaves[i], trafficSince(snaps[0][lc], snaps[1][lc]))
		}
	}
	if err := linkBytes(row, leaves, t.s.Tree.Hosts, float64(world), float64(c.Iters)); err != nil {
		return nil, err
	}
	return row, nil
}

// linkBytes fills the row's bytes per call from what each leaf's links
// carried over the measured calls (leaves[i], with hosts host links a
// leaf): each direction of the host and leaf links, all of it and its
// loss recovery.
func linkBytes(row *TreeRow, leaves [][]swtch.LinkTraffic, hosts int, world, iters float64) error {
	var all, rec [4]float64 // host up, host down, leaf up, leaf down
	for i, ls := range leaves {
		n := 0
		for _, l := range ls {
			rx, tx := float64(l.RxBytes), float64(l.TxBytes)
			rrx, rtx := float64(l.Retransmit.RxBytes), float64(l.Retransmit.TxBytes)
			switch {
			case l.Role == "parent":
				all[2], all[3], rec[2], rec[3] = all[2]+tx, all[3]+rx, rec[2]+rtx, rec[3]+rrx
			case rx > 0: // a host of this job (a link left over from an earlier job carries nothing)
				all[0], all[1], rec[0], rec[1] = all[0]+rx, all[1]+tx, rec[0]+rrx, rec[1]+rtx
				n++
			}
		}
		if n != hosts {
			return fmt.Errorf("leaf %d counted traffic on %d host links, want %d", i, n, hosts)
		}
	}
	p, l := world*iters, float64(len(leaves))*iters
	row.HostUpBytes, row.HostDownBytes, row.LeafUpBytes, row.LeafDownBytes = all[0]/p, all[1]/p, all[2]/l, all[3]/l
	row.HostUpRetxBytes, row.HostDownRetxBytes, row.LeafUpRetxBytes, row.LeafDownRetxBytes = rec[0]/p, rec[1]/p, rec[2]/l, rec[3]/l
	row.LinkBytes = (all[0] + all[1] + all[2] + all[3]) / iters
	row.RetxLinkBytes = (rec[0] + rec[1] + rec[2] + rec[3]) / iters
	return nil
}

// trafficSince is what a link carried from before to after: the counts'
// differences, under after's peer and role.
func trafficSince(before, after swtch.LinkTraffic) swtch.LinkTraffic {
	after.RxBytes -= before.RxBytes
	after.TxBytes -= before.TxBytes
	after.RxPackets -= before.RxPackets
	after.TxPackets -= before.TxPackets
	r, b := &after.Retransmit, before.Retransmit
	r.RxBytes -= b.RxBytes
	r.TxBytes -= b.TxBytes
	r.RxPackets -= b.RxPackets
	r.TxPackets -= b.TxPackets
	return after
}

// hostRing measures the host baseline over the same ranks: the ring
// allreduce (dense) or the sparse allgather around the ring (c.Sparse),
// one ring built once and used for every call, its bytes from the ranks'
// counters placed on the tree.
func (t *treeRun) hostRing(ctx context.Context, c Config) (*TreeRow, error) {
	m, err := start(ctx, c)
	if err != nil {
		return nil, err
	}
	defer m.close()
	if err := m.run(ctx); err != nil {
		return nil, err
	}
	row := t.newRow(m)
	row.LinkBytesFrom = "hosts"
	_, world := c.localRanks()
	iters := float64(c.Iters)
	sent := make([]float64, world)
	var hostUp, hostDown, cross float64
	for r := range world {
		sent[r] = float64(m.after[r].tx-m.before[r].tx) / iters
		hostUp += sent[r]
		hostDown += float64(m.after[r].rx-m.before[r].rx) / iters
	}
	// Rank r sends only to rank r+1: a hop between leaves also crosses
	// the sender's leaf uplink and the receiver's leaf downlink.
	leaf := Config{Switch: t.tree.Addrs()}
	for r := range world {
		here, _, _ := leaf.place(r, world)
		next, _, _ := leaf.place((r+1)%world, world)
		if here != next {
			cross += sent[r]
		}
	}
	p, l := float64(world), float64(len(t.tree.Leaves))
	row.HostUpBytes, row.HostDownBytes = hostUp/p, hostDown/p
	row.LeafUpBytes, row.LeafDownBytes = cross/l, cross/l
	row.LinkBytes = hostUp + hostDown + 2*cross
	return row, nil
}
