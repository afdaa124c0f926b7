//go:build linux

package conn

import (
	"net/netip"
	"testing"
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
			if used := checkSteering(t, got, steer); steer == SteerKey && used != len(group) {
				t.Errorf("%d of %d sockets received: key steering spreads 30 keys over all", used, len(group))
			}
		})
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
