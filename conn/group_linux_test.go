//go:build linux

package conn

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"syscall"
	"testing"

	"golang.org/x/net/bpf"
)

// TestUDPGroupSteering opens SO_REUSEPORT groups on loopback and checks
// that the kernel steers as the group says: by the key (the block id) when
// the steering program is attached, else by the sender's flow. It logs
// which one is in effect.
func TestUDPGroupSteering(t *testing.T) {
	for _, tc := range []struct {
		name string
		g    GroupConfig
	}{
		{"key", GroupConfig{Sockets: 3, ByKey: true, KeyOffset: groupKeyOffset}},
		{"key-only", GroupConfig{Sockets: 3, ByKey: true, KeyOffset: groupKeyOffset, Only: groupOnly}},
		{"key-runs", GroupConfig{Sockets: 3, ByKey: true, KeyOffset: groupKeyOffset, KeyShift: 2, Only: groupOnly}},
		{"flow", GroupConfig{Sockets: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			group, steer, err := ListenUDPGroup("127.0.0.1:0", Config{}, tc.g)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("asked ByKey = %v: steering in effect: %v", tc.g.ByKey, steer)
			if !tc.g.ByKey && steer != SteerFlow {
				t.Fatalf("steering %v without ByKey", steer)
			}
			at := group[0].LocalAddr()
			for i, c := range group {
				if c.LocalAddr() != at {
					t.Fatalf("socket %d bound to %v, socket 0 to %v", i, c.LocalAddr(), at)
				}
			}
			var senders []Conn
			for range 8 {
				senders = append(senders, listenLoopback(t, "127.0.0.1:0", Config{}))
			}
			got := steerThrough(t, group, netip.AddrPortFrom(at.Addr(), at.Port()), senders, 30)
			if used := checkSteering(t, got, steer, tc.g); steer == SteerKey && used != len(group) {
				t.Errorf("%d of %d sockets received: key steering spreads 30 keys over all", used, len(group))
			}
		})
	}
}

// Groups never share a port: a second group on a live group's port is
// refused as in use, and a thousand groups on port 0 at once get a
// thousand ports. Bound with SO_REUSEPORT from the start, the kernel gave
// about one port 0 group in twenty a port a live group of the same user
// held, and their datagrams mixed.
func TestUDPGroupsDoNotSharePorts(t *testing.T) {
	closeAll := func(cs []Conn) {
		for _, c := range cs {
			c.Close()
		}
	}
	first, _, err := ListenUDPGroup("127.0.0.1:0", Config{}, GroupConfig{Sockets: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll(first)
	if again, _, err := ListenUDPGroup(first[0].LocalAddr().String(), Config{}, GroupConfig{Sockets: 2}); !errors.Is(err, syscall.EADDRINUSE) {
		closeAll(again)
		t.Fatalf("a second group on %v: err = %v, want the address in use", first[0].LocalAddr(), err)
	}
	ports := map[uint16]bool{first[0].LocalAddr().Port(): true}
	for range 1000 {
		cs, _, err := ListenUDPGroup("127.0.0.1:0", Config{}, GroupConfig{Sockets: 2})
		if err != nil {
			t.Fatal(err)
		}
		defer closeAll(cs)
		p := cs[0].LocalAddr().Port()
		if ports[p] {
			t.Fatalf("port %d given to two live groups", p)
		}
		ports[p] = true
	}
}

// The steering program assembles for any group size, and a group of one
// is a plain socket.
func TestUDPGroupOfOne(t *testing.T) {
	for _, n := range []int{2, 7, MaxGroup} {
		if _, err := keyProgram(GroupConfig{Sockets: n, ByKey: true, KeyOffset: groupKeyOffset}); err != nil {
			t.Errorf("%d sockets: %v", n, err)
		}
	}
	group, steer, err := ListenUDPGroup("127.0.0.1:0", Config{}, GroupConfig{Sockets: 1, ByKey: true})
	if err != nil {
		t.Fatal(err)
	}
	defer group[0].Close()
	if len(group) != 1 || steer != SteerKey {
		t.Fatalf("a group of one: %d conns, steering %v", len(group), steer)
	}
	if _, ok := group[0].(*mmsgConn); !ok {
		t.Fatalf("a group of one is a %T, want the batched conn", group[0])
	}
}

// The steering program, run in x/net's BPF interpreter, picks the socket
// the in-memory network's pick does, for keys in and out of the range and
// datagrams too short for either load.
func TestKeyProgramMatchesPick(t *testing.T) {
	for _, g := range []GroupConfig{
		{Sockets: 3, ByKey: true, KeyOffset: groupKeyOffset},
		{Sockets: 5, ByKey: true, KeyOffset: groupKeyOffset, Only: groupOnly},
		{Sockets: 3, ByKey: true, KeyOffset: groupKeyOffset, KeyShift: 6},
		{Sockets: 4, ByKey: true, KeyOffset: groupKeyOffset, KeyShift: MaxKeyShift, Only: groupOnly},
		{Sockets: 3, ByKey: true, KeyOffset: 0, Only: &ByteRange{Offset: 6, Min: 4, Max: 7}}, // the type byte past the key
	} {
		raw, err := keyProgram(g)
		if err != nil {
			t.Fatal(err)
		}
		ins, ok := bpf.Disassemble(raw)
		if !ok {
			t.Fatalf("%+v: the program does not disassemble", g)
		}
		vm, err := bpf.NewVM(ins)
		if err != nil {
			t.Fatal(err)
		}
		typeAt := 1
		if g.Only != nil {
			typeAt = g.Only.Offset
		}
		// each datagram one byte short of the type or the key, and one that holds them
		for _, size := range []int{0, 1, typeAt, typeAt + 1, g.KeyOffset + 3, g.KeyOffset + 4, 32} {
			for k := range 40 {
				b := make([]byte, size)
				if size > typeAt {
					b[typeAt] = keyType(k)
				}
				if size >= g.KeyOffset+4 {
					binary.BigEndian.PutUint32(b[g.KeyOffset:], uint32(k*7919))
				}
				got, err := vm.Run(b)
				if err != nil {
					t.Fatal(err)
				}
				if want := g.pick(g.Sockets, b, netip.AddrPort{}); got != want {
					t.Fatalf("%+v, %d bytes, key %d: the program picks %d, the in-memory network %d", g, size, k*7919, got, want)
				}
			}
		}
	}
}
