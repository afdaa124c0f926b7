package swtch

import (
	"net/netip"
	"slices"
	"testing"
	"unsafe"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/wire"
)

// The link counters count every datagram of a known peer, and the ones
// marked FlagRetransmit once more on their own; an unknown peer's and a
// short datagram's flags are not read. A datagram's bytes are all of it,
// a kept payload (Tail) included; a run's datagrams count one by one. Two readers count a peer's datagrams
// apart, and a link reads their sum.
func TestLinkCountsRetransmitsApart(t *testing.T) {
	peer := netip.MustParseAddrPort("127.0.0.1:5000")
	lt := linkTable{readers: 2}
	lt.ref(linkChild, peer)
	h := wire.Header{Type: wire.TypeData, Job: 1, DType: wire.Int32, Op: wire.OpSum, Count: 2}
	plain := wire.AppendPacket(nil, &h, make([]byte, 8))
	h.Flags = wire.FlagRetransmit
	again := wire.AppendPacket(nil, &h, make([]byte, 8))
	h.Type, h.Count = wire.TypeError, 0
	waiting := wire.AppendError(nil, &h, wire.CodeWaiting, "block 0 of allreduce 0 waits for rank 1")
	short := again[:wire.HeaderLen-1]
	dg := func(b []byte, to netip.AddrPort) conn.Datagram { return conn.Datagram{Buf: b, N: len(b), Addr: to} }
	other := netip.MustParseAddrPort("127.0.0.1:5001")
	lt.countRx(0, []conn.Datagram{dg(plain, peer), dg(again, peer)})
	lt.countRx(1, []conn.Datagram{dg(short, peer), dg(again, other)})
	h.Type, h.Flags, h.Count = wire.TypeResult, 0, 2
	kept := conn.Datagram{Buf: wire.AppendPacket(nil, &h, nil), Tail: make([]byte, 8), Addr: peer} // a result sent from the store
	kept.N = len(kept.Buf)
	lt.countTx(1, []conn.Datagram{dg(plain, peer), dg(waiting, peer)})
	lt.countTx(0, []conn.Datagram{kept, dg(plain, other)})
	// A run (conn.Datagram.Seg) counts as its datagrams, each by its own flags.
	run := append(append(append([]byte(nil), plain...), again...), plain[:wire.HeaderLen]...)
	lt.countTx(0, []conn.Datagram{{Buf: run, N: len(run), Seg: len(plain), Addr: peer}})
	got := LinkCounter{peer: peer, l: lt.load()[peer]}.Load()
	want := LinkTraffic{Peer: peer, Role: linkChild,
		RxBytes: int64(len(plain) + len(again) + len(short)), TxBytes: int64(len(plain) + len(waiting) + kept.Size() + len(run)), RxPackets: 3, TxPackets: 6,
		Retransmit: RetransmitTraffic{RxBytes: int64(len(again)), TxBytes: int64(len(waiting) + len(again)), RxPackets: 1, TxPackets: 2}}
	if got != want {
		t.Errorf("counters %+v, want %+v", got, want)
	}
	if n := testing.AllocsPerRun(100, func() { lt.countRx(1, []conn.Datagram{dg(again, peer)}) }); n != 0 {
		t.Errorf("countRx allocates %v times per batch", n)
	}
}

// TestLinkCountsOnLinePairs: each reader's share of a link's counters
// takes a 128-byte line pair, so that in a slice of them no reader's
// counters share a pair with another's (x86's adjacent-line prefetch).
func TestLinkCountsOnLinePairs(t *testing.T) {
	if size := unsafe.Sizeof(linkCounts{}); size != 128 {
		t.Errorf("a reader's link counters take %d bytes, want 128", size)
	}
}

// A peer two jobs name keeps its counters until the last of them lets go;
// a datagram of another version is not read for the retransmit flag.
func TestLinkRefsAndVersion(t *testing.T) {
	peer := netip.MustParseAddrPort("127.0.0.1:5000")
	var lt linkTable
	lt.ref(linkChild, peer)
	lt.ref(linkChild, peer)
	lt.unref(peer)
	if lt.load()[peer] == nil {
		t.Fatal("a peer a second job still names was forgotten")
	}
	lt.unref(peer)
	if lt.load()[peer] != nil {
		t.Fatal("a peer no job names is still counted")
	}
	h := wire.Header{Type: wire.TypeData, Job: 1, DType: wire.Int32, Op: wire.OpSum, Count: 2, Flags: wire.FlagRetransmit}
	b := wire.AppendPacket(nil, &h, make([]byte, 8))
	if !retransmitted(b) {
		t.Fatal("a retransmission is not counted as one")
	}
	b[wire.OffVersion]++
	if retransmitted(b) {
		t.Error("a datagram of another version counted as a retransmission")
	}
}

// LinkCounters lists the parent first and then every other link by peer
// address, children and multicast groups mixed; each reads its own link's
// counters, under its own role.
func TestLinkCountersOrder(t *testing.T) {
	addr := netip.MustParseAddrPort
	var s Switch
	s.links.ref(linkChild, addr("10.0.0.3:5000"), addr("10.0.0.1:5000"))
	s.links.ref(linkGroup, addr("239.255.0.2:7001"), addr("10.0.0.2:7001"))
	s.links.ref(linkParent, addr("10.0.0.9:7470"))
	h := wire.Header{Type: wire.TypeData, Job: 1, DType: wire.Int32, Op: wire.OpSum, Count: 2}
	plain := wire.AppendPacket(nil, &h, make([]byte, 8))
	h.Flags = wire.FlagRetransmit
	again := wire.AppendPacket(nil, &h, make([]byte, 8))
	s.links.countRx(0, []conn.Datagram{{Buf: plain, N: len(plain), Addr: addr("10.0.0.3:5000")}, {Buf: again, N: len(again), Addr: addr("10.0.0.3:5000")}})
	s.links.countTx(0, []conn.Datagram{{Buf: again, N: len(again), Addr: addr("10.0.0.9:7470")}})
	n := int64(len(plain))
	want := []LinkTraffic{
		{Peer: addr("10.0.0.9:7470"), Role: linkParent, TxBytes: n, TxPackets: 1, Retransmit: RetransmitTraffic{TxBytes: n, TxPackets: 1}},
		{Peer: addr("10.0.0.1:5000"), Role: linkChild},
		{Peer: addr("10.0.0.2:7001"), Role: linkGroup},
		{Peer: addr("10.0.0.3:5000"), Role: linkChild, RxBytes: 2 * n, RxPackets: 2, Retransmit: RetransmitTraffic{RxBytes: n, RxPackets: 1}},
		{Peer: addr("239.255.0.2:7001"), Role: linkGroup},
	}
	for try := range 20 { // the table is a map: each listing sorts it afresh
		got := s.LinkTraffic()
		if !slices.Equal(got, want) {
			t.Fatalf("listing %d: %+v, want %+v", try, got, want)
		}
		for i, c := range s.LinkCounters() {
			if c.Peer() != want[i].Peer || c.Role() != want[i].Role {
				t.Fatalf("listing %d, counter %d: %v %s, want %v %s", try, i, c.Peer(), c.Role(), want[i].Peer, want[i].Role)
			}
		}
	}
}
