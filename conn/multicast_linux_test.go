//go:build linux

package conn

import (
	"bytes"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMulticastLoopback: a datagram sent once to a group reaches every
// socket listening on it over the loopback interface, one copy each, with
// the sender's address; a socket of another group on the same port, and
// the sender's unicast peers, get nothing. Both a sender bound to an IPv4
// address and a dual-stack one (":0") send out of the interface
// Config.MulticastInterface names.
func TestMulticastLoopback(t *testing.T) {
	lo := netip.MustParseAddr("127.0.0.1")
	for i, bind := range []string{"127.0.0.1:0", ":0"} {
		t.Run(bind, func(t *testing.T) {
			port := uint16(47310 + 10*i)
			group := netip.AddrPortFrom(netip.MustParseAddr("239.255.70.1"), port)
			other := netip.AddrPortFrom(netip.MustParseAddr("239.255.70.2"), port)
			var rx []Conn
			for _, g := range []netip.AddrPort{group, group, group, other} {
				c, err := ListenMulticast(g, lo, Config{})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				rx = append(rx, c)
			}
			tx, err := ListenUDP(bind, Config{MulticastInterface: lo})
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Close()
			const n = 40 // a GSO run and more
			msgs := make([]Datagram, n)
			for k := range msgs {
				b := fmt.Appendf(nil, "result %02d", k)
				msgs[k] = Datagram{Buf: b, N: len(b), Addr: group}
			}
			if k, err := tx.WriteBatch(msgs); k != n || err != nil {
				t.Fatalf("WriteBatch = %d, %v", k, err)
			}
			from := tx.LocalAddr().Port()
			for r, c := range rx {
				got := readAll(t, c, 100*time.Millisecond)
				want := n
				if r == len(rx)-1 {
					want = 0 // the other group's socket
				}
				if len(got) != want {
					t.Fatalf("receiver %d got %d datagrams, want %d", r, len(got), want)
				}
				for k, d := range got {
					if d.Addr.Port() != from || d.Addr.Addr().Unmap() != lo {
						t.Errorf("receiver %d: datagram %d from %v, want 127.0.0.1:%d", r, k, d.Addr, from)
					}
					if want := fmt.Appendf(nil, "result %02d", k); !bytes.Equal(d.Buf[:d.N], want) {
						t.Errorf("receiver %d: datagram %d = %q, want %q", r, k, d.Buf[:d.N], want)
					}
				}
			}
		})
	}
}

// readAll reads c until it has been quiet for quiet, and closes it.
func readAll(t *testing.T, c Conn, quiet time.Duration) []Datagram {
	t.Helper()
	var mu sync.Mutex
	var got []Datagram
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			msgs := make([]Datagram, c.BatchSize())
			for i := range msgs {
				msgs[i].Buf = make([]byte, 2048)
			}
			n, err := c.ReadBatch(msgs)
			if err != nil {
				return
			}
			mu.Lock()
			got = append(got, msgs[:n]...)
			mu.Unlock()
		}
	}()
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(got) }
	for last := -1; count() != last; {
		last = count()
		time.Sleep(quiet)
	}
	c.Close()
	<-done
	return got
}

// TestListenMulticastRefuses names the field at fault.
func TestListenMulticastRefuses(t *testing.T) {
	lo := netip.MustParseAddr("127.0.0.1")
	for _, tt := range []struct {
		group string
		local netip.Addr
		want  string
	}{
		{"10.0.0.1:7471", lo, "must be an IPv4 multicast address"},
		{"[ff02::1]:7471", lo, "must be an IPv4 multicast address"},
		{"239.1.1.1:0", lo, "group port 0"},
		{"239.1.1.1:7471", netip.IPv4Unspecified(), "local address 0.0.0.0"},
		{"239.1.1.1:7471", netip.MustParseAddr("::1"), "local address ::1"},
	} {
		_, err := ListenMulticast(netip.MustParseAddrPort(tt.group), tt.local, Config{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ListenMulticast(%s, %v) = %v, want an error with %q", tt.group, tt.local, err, tt.want)
		}
	}
	if _, err := ListenUDP("127.0.0.1:0", Config{MulticastInterface: netip.MustParseAddr("239.1.1.1")}); err == nil || !strings.Contains(err.Error(), "multicast interface = 239.1.1.1") {
		t.Errorf("ListenUDP with a multicast interface that is a group: %v", err)
	}
}
