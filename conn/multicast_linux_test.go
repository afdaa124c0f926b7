//go:build linux

package conn

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"syscall"
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
	for _, bind := range []string{"127.0.0.1:0", ":0"} {
		t.Run(bind, func(t *testing.T) {
			// A free port, held: a fixed one may be another socket's.
			hold, err := HoldGroupPort(netip.AddrPortFrom(netip.MustParseAddr("239.255.70.1"), 0))
			if err != nil {
				t.Fatal(err)
			}
			defer hold.Close()
			port := hold.Addr.Port()
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
				want := n
				if r == len(rx)-1 {
					want = 0 // the other group's socket
				}
				got := readAll(t, c, want, 100*time.Millisecond)
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

// readAll reads c until want datagrams have come (10 s at most: a busy
// machine may stall the reader), then for quiet more, to catch any beyond
// want, and closes it.
func readAll(t *testing.T, c Conn, want int, quiet time.Duration) []Datagram {
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
	for deadline := time.Now().Add(10 * time.Second); count() < want && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(quiet)
	c.Close()
	<-done
	return got
}

// TestListenMulticastRefuses names the field at fault, as HoldGroupPort
// does for a group that is not one.
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
	if _, err := ListenMulticast(netip.MustParseAddrPort("239.1.1.1:7471"), netip.MustParseAddr("239.1.1.2"), Config{}); err == nil ||
		!strings.Contains(err.Error(), "local address 239.1.1.2: must be an IPv4 unicast address") {
		t.Errorf("ListenMulticast on a local address that is a group: %v", err)
	}
	for _, g := range []string{"127.0.0.1:0", "[ff02::1]:0"} {
		if h, err := HoldGroupPort(netip.MustParseAddrPort(g)); err == nil || !strings.Contains(err.Error(), "must be an IPv4 multicast address") {
			h.Close()
			t.Errorf("HoldGroupPort(%s): %v, want it refused", g, err)
		}
	}
	if _, err := ListenUDP("127.0.0.1:0", Config{MulticastInterface: netip.MustParseAddr("239.1.1.1")}); err == nil || !strings.Contains(err.Error(), "multicast interface = 239.1.1.1") {
		t.Errorf("ListenUDP with a multicast interface that is a group: %v", err)
	}
}

// TestHoldGroupPort: a held group port (the kernel's pick for port 0) is
// refused to a socket that would take it on the wildcard address alone,
// is shared with the group's listeners, and is given no datagram of the
// group itself; a port some socket already has on the wildcard address
// cannot be held, and says so.
func TestHoldGroupPort(t *testing.T) {
	lo := netip.MustParseAddr("127.0.0.1")
	h, err := HoldGroupPort(netip.AddrPortFrom(netip.MustParseAddr("239.255.71.0"), 0))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if !h.Addr.Addr().Is4() || h.Addr.Addr() != netip.MustParseAddr("239.255.71.0") || h.Addr.Port() == 0 {
		t.Fatalf("held %v, want 239.255.71.0 and a port", h.Addr)
	}
	if c, err := net.ListenUDP("udp4", &net.UDPAddr{Port: int(h.Addr.Port())}); err == nil {
		c.Close()
		t.Fatalf("a wildcard socket took the held port %d", h.Addr.Port())
	} else if !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("a wildcard socket on the held port: %v, want EADDRINUSE", err)
	}
	member, err := ListenMulticast(h.Addr, lo, Config{})
	if err != nil {
		t.Fatalf("a member on the held port: %v", err)
	}
	tx, err := ListenUDP("127.0.0.1:0", Config{MulticastInterface: lo})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	b := []byte("result")
	if k, err := tx.WriteBatch([]Datagram{{Buf: b, N: len(b), Addr: h.Addr}}); k != 1 || err != nil {
		t.Fatalf("WriteBatch = %d, %v", k, err)
	}
	if got := readAll(t, member, 1, 100*time.Millisecond); len(got) != 1 {
		t.Fatalf("the member got %d datagrams, want 1", len(got))
	}
	hold := h.c.(*net.UDPConn)
	hold.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if n, _, err := hold.ReadFromUDPAddrPort(make([]byte, 64)); err == nil {
		t.Errorf("the hold was given a datagram of %d bytes", n)
	}

	squat, err := net.ListenUDP("udp4", &net.UDPAddr{})
	if err != nil {
		t.Fatal(err)
	}
	defer squat.Close()
	taken := netip.AddrPortFrom(netip.MustParseAddr("239.255.71.1"), squat.LocalAddr().(*net.UDPAddr).AddrPort().Port())
	if h2, err := HoldGroupPort(taken); err == nil {
		h2.Close()
		t.Errorf("held %v, which a wildcard socket has", taken)
	} else if !errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), taken.String()) {
		t.Errorf("holding a taken port: %v, want EADDRINUSE naming %v", err, taken)
	}
}

// The address a host sends from to reach the switch is the interface's
// IPv4 address, as a member joins the group on it (not its IPv4-mapped
// IPv6 form); a hold not taken closes as nothing.
func TestLocalAddrTo(t *testing.T) {
	got, err := LocalAddrTo(netip.MustParseAddrPort("127.0.0.1:9"))
	if err != nil || got != netip.MustParseAddr("127.0.0.1") {
		t.Errorf("LocalAddrTo(127.0.0.1:9) = %v, %v; want 127.0.0.1", got, err)
	}
	var none *PortHold
	if err := none.Close(); err != nil {
		t.Errorf("closing no hold: %v", err)
	}
}
