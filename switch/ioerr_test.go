package swtch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/wire"
)

// faultConn wraps a Conn and injects errors: readErrs are returned by the
// next ReadBatch calls, one each, before reads reach the wrapped conn; a
// datagram to a port in failPorts fails its WriteBatch with writeErr,
// after the datagrams before it went out, as many times as the map says
// (-1: always).
type faultConn struct {
	conn.Conn
	mu        sync.Mutex
	readErrs  []error
	failPorts map[uint16]int
	writeErr  error
	offered   map[netip.AddrPort]int // times each destination was offered to WriteBatch
	writes    int
}

func (c *faultConn) ReadBatch(msgs []conn.Datagram) (int, error) {
	c.mu.Lock()
	if len(c.readErrs) > 0 {
		err := c.readErrs[0]
		c.readErrs = c.readErrs[1:]
		c.mu.Unlock()
		return 0, err
	}
	c.mu.Unlock()
	return c.Conn.ReadBatch(msgs)
}

func (c *faultConn) WriteBatch(msgs []conn.Datagram) (int, error) {
	c.mu.Lock()
	c.writes++
	for i := range msgs {
		c.offered[msgs[i].Addr]++
		if n := c.failPorts[msgs[i].Addr.Port()]; n != 0 {
			c.failPorts[msgs[i].Addr.Port()] = n - 1
			c.mu.Unlock()
			if i > 0 {
				if _, err := c.Conn.WriteBatch(msgs[:i]); err != nil {
					return 0, err
				}
			}
			return i, c.writeErr
		}
	}
	c.mu.Unlock()
	return c.Conn.WriteBatch(msgs)
}

// queueLeave queues a leave of job 1 to `to` for writer 0, as the
// control path queues its packets (Switch.send).
func queueLeave(s *Switch, to netip.AddrPort) { s.send(to, appendLeave) }

// appendLeave appends job 1's leave packet to b.
func appendLeave(b []byte) []byte {
	return wire.AppendPacket(b, &wire.Header{Type: wire.TypeLeave, Job: 1}, nil)
}

func sysErr(op string, errno syscall.Errno) error {
	return &net.OpError{Op: op, Net: "udp", Err: os.NewSyscallError(op+"mmsg", errno)}
}

// TestWriterSkipsFailedDatagram reproduces the writer's handling of a
// batch that failed part way: WriteBatch sent the datagrams before the
// failing one and returned their count with the error, and the writer
// offered the failing datagram again (instead of skipping it) and counted
// its drop twice. One datagram that cannot be sent is one drop, and every
// other datagram of the batch goes out once; on a closed socket the
// failing datagram and every one after it are dropped, each counted.
func TestWriterSkipsFailedDatagram(t *testing.T) {
	for _, tc := range []struct {
		name          string
		err           error
		failures      int // of the datagram to port 9
		offered, drop int
		errs          int
		rest          int // times the datagram after it is offered
	}{
		{"permanent", fmt.Errorf("inject: %w", conn.ErrBadAddr), -1, 1, 1, 1, 1},
		{"transient-once", sysErr("send", syscall.ENOBUFS), 1, 2, 0, 1, 1},
		{"transient-twice", sysErr("send", syscall.ENOBUFS), -1, 2, 1, 2, 1},
		{"closed", fmt.Errorf("inject: %w", net.ErrClosed), -1, 1, 2, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newJobFixture(t, nil).s
			base, err := conn.NewMemNetwork().Listen(netip.MustParseAddrPort("127.0.0.1:0"))
			if err != nil {
				t.Fatal(err)
			}
			fc := &faultConn{Conn: base, failPorts: map[uint16]int{9: tc.failures}, writeErr: tc.err, offered: map[netip.AddrPort]int{}}
			s.conns = []conn.Conn{fc}
			bad := netip.MustParseAddrPort("127.0.0.1:9")
			dests := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:1001"), netip.MustParseAddrPort("127.0.0.1:1002"),
				bad, netip.MustParseAddrPort("127.0.0.1:1004")}
			for _, to := range dests {
				queueLeave(s, to)
			}
			close(s.outs[0])
			s.writer(0)
			for i, to := range dests {
				want := 1
				switch {
				case to == bad:
					want = tc.offered
				case i == len(dests)-1:
					want = tc.rest
				}
				if n := fc.offered[to]; n != want {
					t.Errorf("the datagram to %v was offered to WriteBatch %d times, want %d", to, n, want)
				}
			}
			if n := s.drops.snapshot()[dropSendError]; n != int64(tc.drop) {
				t.Errorf("counted %d drops as %q, want %d", n, dropSendError, tc.drop)
			}
			if n := s.ioErrors.snapshot()[ioErrorKey{"tx", errnoName(tc.err)}]; n != int64(tc.errs) {
				t.Errorf("counted %d tx errors as %s, want %d", n, errnoName(tc.err), tc.errs)
			}
		})
	}
}

// TestReaderSurvivesTransientErrors reproduces the reader ending, and with
// it the daemon, on any receive error but a closed socket: ENOBUFS,
// ECONNREFUSED (an ICMP port-unreachable from an earlier send surfacing on
// the socket), EINTR and EAGAIN are transient, and the reader must go on
// receiving (backing off while they repeat) and count each one.
func TestReaderSurvivesTransientErrors(t *testing.T) {
	net0 := conn.NewMemNetwork()
	fx := newJobFixture(t, nil)
	s := fx.s
	base, err := net0.Listen(netip.MustParseAddrPort("127.0.0.1:7470"))
	if err != nil {
		t.Fatal(err)
	}
	injected := []syscall.Errno{syscall.ENOBUFS, syscall.ECONNREFUSED, syscall.EINTR, syscall.EAGAIN, syscall.ENOBUFS}
	fc := &faultConn{Conn: base, offered: map[netip.AddrPort]int{}}
	for _, e := range injected {
		fc.readErrs = append(fc.readErrs, sysErr("recv", e))
	}
	s.conns = []conn.Conn{fc}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.reader(ctx, 0) }()

	host, err := net0.Listen(netip.AddrPort{})
	if err != nil {
		t.Fatal(err)
	}
	leave := wire.AppendPacket(nil, &wire.Header{Type: wire.TypeLeave, Job: 99}, nil)
	if _, err := host.WriteBatch([]conn.Datagram{{Buf: leave, N: len(leave), Addr: base.LocalAddr()}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for s.perReader[0].rx.Load() == 0 && time.Now().Before(deadline) {
		select {
		case err := <-done:
			t.Fatalf("the reader returned after transient receive errors: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	if s.perReader[0].rx.Load() != 1 {
		t.Fatalf("the datagram sent after the errors was not received")
	}
	got := s.ioErrors.snapshot()
	for _, e := range []string{"ENOBUFS", "ECONNREFUSED", "EINTR", "EAGAIN"} {
		want := int64(0)
		for _, in := range injected {
			if errnoName(in) == e {
				want++
			}
		}
		if got[ioErrorKey{"rx", e}] != want {
			t.Errorf("rx %s counted %d times, want %d (all: %v)", e, got[ioErrorKey{"rx", e}], want, got)
		}
	}
	cancel()
	base.Close()
	if err := <-done; err != nil {
		t.Errorf("the reader returned %v after its socket closed, want nil", err)
	}
	if !errors.Is(sysErr("recv", syscall.ENOBUFS), syscall.ENOBUFS) {
		t.Fatal("injected errors do not wrap their errno")
	}
}

// Each socket error is counted under its own name and direction, and a
// send is retried at once for exactly the kernel's transient conditions.
func TestIOErrorNames(t *testing.T) {
	for _, e := range ioErrnos {
		if got := errnoName(sysErr("send", e.errno)); got != e.name {
			t.Errorf("%v: named %q, want %q", e.errno, got, e.name)
		}
	}
	for err, want := range map[error]string{
		fmt.Errorf("read: %w", net.ErrClosed):            ioClosed,
		fmt.Errorf("send: %w", conn.ErrBadAddr):          ioBadAddr,
		fmt.Errorf("send: %w", conn.ErrDatagramTooLarge): ioTooLarge,
		sysErr("send", syscall.ENOTSOCK):                 ioOther,
		errors.New("something else"):                     ioOther,
	} {
		if got := errnoName(err); got != want {
			t.Errorf("%v: named %q, want %q", err, got, want)
		}
	}
	c := newIOErrorCounters()
	c.add(dirTx, sysErr("send", syscall.EPERM))
	if got := c.snapshot(); got[ioErrorKey{"tx", "EPERM"}] != 1 || got[ioErrorKey{"rx", "EPERM"}] != 0 {
		t.Errorf("a send's EPERM counted tx %d, rx %d; want 1 and 0", got[ioErrorKey{"tx", "EPERM"}], got[ioErrorKey{"rx", "EPERM"}])
	}
	for _, e := range []syscall.Errno{syscall.ENOBUFS, syscall.ENOMEM, syscall.EAGAIN, syscall.EINTR, syscall.ECONNREFUSED} {
		if !transient(sysErr("send", e)) {
			t.Errorf("%v: not retried, want a retry (transient)", e)
		}
	}
	for _, err := range []error{sysErr("send", syscall.EPERM), sysErr("send", syscall.EMSGSIZE), conn.ErrBadAddr, net.ErrClosed} {
		if transient(err) {
			t.Errorf("%v: retried at once, want it dropped", err)
		}
	}
}

// A reader stops on a closed socket without waiting for its context, and
// a receive that succeeds starts the backoff afresh.
func TestReadRetry(t *testing.T) {
	var r readRetry
	if !r.failed(context.Background(), fmt.Errorf("recvmmsg: %w", net.ErrClosed)) {
		t.Error("a closed socket: the reader goes on, want it to stop")
	}
	r = readRetry{}
	for i := range 3 {
		if r.failed(context.Background(), sysErr("recv", syscall.ENOBUFS)) {
			t.Fatalf("transient error %d: the reader stops", i+1)
		}
	}
	r.ok()
	if r.consecutive != 0 {
		t.Errorf("after a receive: %d consecutive errors remembered, want 0", r.consecutive)
	}
}
