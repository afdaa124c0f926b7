package conn

import (
	"encoding/binary"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"
)

// groupKeyOffset is where the steering tests put the key: a Flare header's
// block id.
const groupKeyOffset = 20

// arrival is one datagram a group's socket took: the sender's index and
// the key it carried.
type arrival struct{ sender, key, typ int }

// groupOnly is the steering tests' key range: byte 1 (a Flare packet
// type) in 4..7 is steered by the key, anything else goes to socket 0.
var groupOnly = &ByteRange{Offset: 1, Min: 4, Max: 7}

// keyType is the type byte the tests send with key k: every fifth is
// outside groupOnly's range.
func keyType(k int) byte {
	if k%5 == 0 {
		return 1
	}
	return byte(4 + k%4)
}

// steerThrough sends, from each of senders, one datagram per key in
// 0..keys-1 to the group's address, and returns what each of the group's
// sockets received. It fails the test when a datagram is lost or the
// sockets do not receive them all within a generous bound.
func steerThrough(t *testing.T, group []Conn, to netip.AddrPort, senders []Conn, keys int) [][]arrival {
	t.Helper()
	want := len(senders) * keys
	got := make([][]arrival, len(group))
	var mu sync.Mutex
	total := 0
	all := make(chan struct{})
	var wg sync.WaitGroup
	for i, c := range group {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msgs := newMsgs(DefaultBatchSize, 64)
			for {
				n, err := c.ReadBatch(msgs)
				if err != nil {
					return // closed: the test is over
				}
				mu.Lock()
				for _, m := range msgs[:n] {
					got[i] = append(got[i], arrival{int(m.Buf[0]), int(binary.BigEndian.Uint32(m.Buf[groupKeyOffset:])), int(m.Buf[1])})
				}
				if total += n; total == want {
					close(all)
				}
				mu.Unlock()
			}
		}()
	}
	for s, c := range senders {
		for k := range keys {
			b := make([]byte, 32)
			b[0], b[1] = byte(s), keyType(k)
			binary.BigEndian.PutUint32(b[groupKeyOffset:], uint32(k))
			if _, err := c.WriteBatch([]Datagram{{Buf: b, N: len(b), Addr: to}}); err != nil {
				t.Fatal(err)
			}
			runtime.Gosched()
		}
	}
	select {
	case <-all:
	case <-time.After(30 * time.Second):
	}
	for _, c := range group {
		c.Close()
	}
	wg.Wait()
	if total != want {
		t.Fatalf("the group received %d of %d datagrams", total, want)
	}
	return got
}

// checkSteering checks what each socket of a group received against the
// steering the group says is in effect: by key, socket (k >> g.KeyShift)
// mod n took every datagram of key k (socket 0 those outside g.Only's
// range); by flow, every datagram of one sender reached one socket. It
// returns how many sockets received anything.
func checkSteering(t *testing.T, got [][]arrival, steer Steering, g GroupConfig) int {
	t.Helper()
	used := 0
	senderAt := map[int]int{}
	for i, as := range got {
		if len(as) > 0 {
			used++
		}
		for _, a := range as {
			switch steer {
			case SteerKey:
				want := (a.key >> g.KeyShift) % len(got)
				if only := g.Only; only != nil && (a.typ < int(only.Min) || a.typ > int(only.Max)) {
					want = 0
				}
				if want != i {
					t.Errorf("key %d (type %d) from sender %d reached socket %d of %d, want %d", a.key, a.typ, a.sender, i, len(got), want)
				}
			case SteerFlow:
				if at, ok := senderAt[a.sender]; ok && at != i {
					t.Errorf("sender %d reached sockets %d and %d: flow steering keeps a sender on one", a.sender, at, i)
				}
				senderAt[a.sender] = i
			}
		}
	}
	return used
}

func TestMemGroupSteering(t *testing.T) {
	for _, tc := range []struct {
		name string
		g    GroupConfig
		want Steering
	}{
		{"key", GroupConfig{Sockets: 3, ByKey: true, KeyOffset: groupKeyOffset}, SteerKey},
		{"key-only", GroupConfig{Sockets: 3, ByKey: true, KeyOffset: groupKeyOffset, Only: groupOnly}, SteerKey},
		{"key-runs", GroupConfig{Sockets: 3, ByKey: true, KeyOffset: groupKeyOffset, KeyShift: 2, Only: groupOnly}, SteerKey},
		{"flow", GroupConfig{Sockets: 3}, SteerFlow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := NewMemNetwork()
			at := netip.MustParseAddrPort("127.0.0.1:7470")
			group, err := n.ListenGroup(at, tc.g)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := n.Listen(at); err == nil {
				t.Fatal("a second Listen on a group's address succeeded")
			}
			var senders []Conn
			for range 8 {
				c, err := n.Listen(netip.AddrPort{})
				if err != nil {
					t.Fatal(err)
				}
				senders = append(senders, c)
			}
			got := steerThrough(t, group, at, senders, 30)
			if used := checkSteering(t, got, tc.want, tc.g); tc.want == SteerKey && used != len(group) {
				t.Errorf("%d of %d sockets received: key steering spreads 30 keys over all", used, len(group))
			}
		})
	}
}

// A conn of a group that closes leaves its datagrams to the others; the
// address is free again once all have closed.
func TestMemGroupClose(t *testing.T) {
	n := NewMemNetwork()
	at := netip.MustParseAddrPort("127.0.0.1:7470")
	group, err := n.ListenGroup(at, GroupConfig{Sockets: 2, ByKey: true, KeyOffset: groupKeyOffset})
	if err != nil {
		t.Fatal(err)
	}
	group[0].Close()
	tx, _ := n.Listen(netip.AddrPort{})
	got := steerThrough(t, group[1:], at, []Conn{tx}, 10)
	if len(got[0]) != 10 {
		t.Fatalf("the open conn took %d of 10 datagrams", len(got[0]))
	}
	if _, err := n.Listen(at); err != nil {
		t.Fatalf("address still in use after the whole group closed: %v", err)
	}
}

func TestGroupConfigValidate(t *testing.T) {
	for _, g := range []GroupConfig{{Sockets: 0}, {Sockets: MaxGroup + 1}, {Sockets: 2, ByKey: true, KeyOffset: -1},
		{Sockets: 2, ByKey: true, Only: &ByteRange{Offset: -1}}, {Sockets: 2, ByKey: true, Only: &ByteRange{Min: 5, Max: 4}},
		{Sockets: 2, ByKey: true, KeyShift: -1}, {Sockets: 2, ByKey: true, KeyShift: MaxKeyShift + 1},
		{Sockets: 2, ByKey: true, KeyOffset: MaxDatagramLimit - 3}, {Sockets: 2, ByKey: true, Only: &ByteRange{Offset: MaxDatagramLimit}}} {
		if g.Validate() == nil {
			t.Errorf("%+v: valid, want an error", g)
		}
		if _, _, err := ListenUDPGroup("127.0.0.1:0", Config{}, g); err == nil {
			t.Errorf("ListenUDPGroup(%+v) succeeded", g)
		}
	}
	// each bound's last allowed value
	for _, g := range []GroupConfig{{Sockets: 1}, {Sockets: MaxGroup}, {Sockets: 2, ByKey: true, KeyOffset: MaxDatagramLimit - 4},
		{Sockets: 2, ByKey: true, KeyShift: MaxKeyShift}, {Sockets: 2, ByKey: true, Only: &ByteRange{Offset: MaxDatagramLimit - 1, Min: 3, Max: 3}}} {
		if err := g.Validate(); err != nil {
			t.Errorf("%+v: %v", g, err)
		}
	}
}
