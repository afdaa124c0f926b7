package bench

import (
	"net/netip"
	"strings"
	"testing"

	swtch "github.com/flare-net/flare/switch"
)

// A tree row's link bytes per call: each leaf's host links (those that
// carried something up) for the host rows, averaged over the P hosts; its
// parent link, sent up and received down, for the leaf rows, averaged
// over the leaves; the recovery part of each apart; and the links' sum.
// A link left over from an earlier job carries nothing and is no host; a
// leaf that counted another number of hosts is an error.
func TestTreeLinkBytes(t *testing.T) {
	host := func(rx, tx, rrx, rtx int64) swtch.LinkTraffic {
		return swtch.LinkTraffic{Role: "child", RxBytes: rx, TxBytes: tx, Retransmit: swtch.RetransmitTraffic{RxBytes: rrx, TxBytes: rtx}}
	}
	parent := func(rx, tx, rrx, rtx int64) swtch.LinkTraffic {
		l := host(rx, tx, rrx, rtx)
		l.Role = "parent"
		return l
	}
	leaves := [][]swtch.LinkTraffic{
		{host(100, 200, 10, 0), host(300, 400, 0, 20), host(0, 0, 0, 0), parent(1000, 2000, 100, 200)},
		{parent(3000, 4000, 300, 0), host(500, 600, 30, 40), host(700, 800, 0, 0)},
	}
	var row TreeRow
	const world, iters = 4, 2
	if err := linkBytes(&row, leaves, 2, world, iters); err != nil {
		t.Fatal(err)
	}
	want := TreeRow{
		HostUpBytes: 1600.0 / 8, HostDownBytes: 2000.0 / 8, LeafUpBytes: 6000.0 / 4, LeafDownBytes: 4000.0 / 4,
		HostUpRetxBytes: 40.0 / 8, HostDownRetxBytes: 60.0 / 8, LeafUpRetxBytes: 200.0 / 4, LeafDownRetxBytes: 400.0 / 4,
		LinkBytes: 13600.0 / 2, RetxLinkBytes: 700.0 / 2,
	}
	if row != want {
		t.Errorf("row %+v,\nwant %+v", row, want)
	}
	leaves[1] = leaves[1][:2]
	if err := linkBytes(&row, leaves, 2, world, iters); err == nil || !strings.Contains(err.Error(), "leaf 1 counted traffic on 1 host links, want 2") {
		t.Errorf("a leaf with one host of two: %v, want an error naming the leaf and the counts", err)
	}
}

// What a link carried between two readings is each count's difference,
// the retransmitted ones' too, under the later reading's peer and role.
func TestTrafficSince(t *testing.T) {
	peer := netip.MustParseAddrPort("10.0.0.1:5000")
	before := swtch.LinkTraffic{RxBytes: 1, TxBytes: 2, RxPackets: 3, TxPackets: 4, Retransmit: swtch.RetransmitTraffic{RxBytes: 5, TxBytes: 6, RxPackets: 7, TxPackets: 8}}
	after := swtch.LinkTraffic{Peer: peer, Role: "parent", RxBytes: 11, TxBytes: 22, RxPackets: 33, TxPackets: 44, Retransmit: swtch.RetransmitTraffic{RxBytes: 55, TxBytes: 66, RxPackets: 77, TxPackets: 88}}
	want := swtch.LinkTraffic{Peer: peer, Role: "parent", RxBytes: 10, TxBytes: 20, RxPackets: 30, TxPackets: 40, Retransmit: swtch.RetransmitTraffic{RxBytes: 50, TxBytes: 60, RxPackets: 70, TxPackets: 80}}
	if got := trafficSince(before, after); got != want {
		t.Errorf("trafficSince = %+v, want %+v", got, want)
	}
}
