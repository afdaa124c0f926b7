package swtch

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/flare-net/flare/conn"
)

// Socket errors. The reader and the writer live through every error but a
// closed socket: the kernel reports transient conditions as errors of a
// receive or send (ENOBUFS when a queue is full, ECONNREFUSED when an ICMP
// port-unreachable for an earlier datagram surfaces on the socket, EINTR,
// EAGAIN), and ending the reader over one of them ended the daemon. Each
// error is counted by direction and errno in flare_io_errors_total, a
// fixed label set.

// ioErrnos are the errors counted by name; any other is "other".
var ioErrnos = []struct {
	errno syscall.Errno
	name  string
}{
	{syscall.ENOBUFS, "ENOBUFS"}, {syscall.ENOMEM, "ENOMEM"}, {syscall.ECONNREFUSED, "ECONNREFUSED"},
	{syscall.EHOSTUNREACH, "EHOSTUNREACH"}, {syscall.ENETUNREACH, "ENETUNREACH"}, {syscall.EINTR, "EINTR"},
	{syscall.EAGAIN, "EAGAIN"}, {syscall.EPERM, "EPERM"}, {syscall.EACCES, "EACCES"}, {syscall.EMSGSIZE, "EMSGSIZE"},
	{syscall.EINVAL, "EINVAL"}, {syscall.EIO, "EIO"},
}

// Names of the errors that are not an errno of ioErrnos.
const (
	ioClosed   = "closed"      // the socket was closed (shutdown)
	ioBadAddr  = "bad-address" // conn.ErrBadAddr: a destination that cannot be sent to
	ioTooLarge = "too-large"   // conn.ErrDatagramTooLarge
	ioOther    = "other"
)

// ioErrorNames is the label set of the errno label, in a fixed order.
var ioErrorNames = func() []string {
	n := make([]string, 0, len(ioErrnos)+4)
	for _, e := range ioErrnos {
		n = append(n, e.name)
	}
	return append(n, ioClosed, ioBadAddr, ioTooLarge, ioOther)
}()

// errnoName names err for the errno label.
func errnoName(err error) string {
	var errno syscall.Errno
	switch {
	case errors.As(err, &errno):
		for _, e := range ioErrnos {
			if e.errno == errno {
				return e.name
			}
		}
	case errors.Is(err, net.ErrClosed):
		return ioClosed
	case errors.Is(err, conn.ErrBadAddr):
		return ioBadAddr
	case errors.Is(err, conn.ErrDatagramTooLarge):
		return ioTooLarge
	}
	return ioOther
}

// transient reports whether a failed send may succeed if tried again at
// once: the kernel was short of buffers, interrupted, or reported an
// earlier datagram's ICMP error on this call.
func transient(err error) bool {
	for _, e := range []syscall.Errno{syscall.ENOBUFS, syscall.ENOMEM, syscall.EAGAIN, syscall.EINTR, syscall.ECONNREFUSED} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// I/O directions, the dir label.
const (
	dirRx = 0
	dirTx = 1
)

var ioDirs = [2]string{"rx", "tx"}

// ioErrorCounters counts socket errors by direction and name.
type ioErrorCounters struct {
	counts [2][]atomic.Int64 // by direction, then by ioErrorNames index
}

func newIOErrorCounters() ioErrorCounters {
	var c ioErrorCounters
	for d := range c.counts {
		c.counts[d] = make([]atomic.Int64, len(ioErrorNames))
	}
	return c
}

func (c *ioErrorCounters) add(dir int, err error) {
	name := errnoName(err)
	for i, n := range ioErrorNames {
		if n == name {
			c.counts[dir][i].Add(1)
			return
		}
	}
}

// ioErrorKey is one label pair of flare_io_errors_total.
type ioErrorKey struct{ dir, errno string }

func (c *ioErrorCounters) snapshot() map[ioErrorKey]int64 {
	m := make(map[ioErrorKey]int64, 2*len(ioErrorNames))
	for d := range c.counts {
		for i, n := range ioErrorNames {
			m[ioErrorKey{ioDirs[d], n}] = c.counts[d][i].Load()
		}
	}
	return m
}

// readRetry paces a reader through receive errors: the first is retried
// at once, repeated ones after a backoff doubling from 1 ms to 100 ms, so
// that a socket that fails every call costs little CPU and a transient
// error costs no delay.
type readRetry struct {
	consecutive int
}

// Backoff bounds of readRetry.
const (
	readBackoffMin = time.Millisecond
	readBackoffMax = 100 * time.Millisecond
)

// failed records a receive error and reports whether the reader should
// stop: the socket is closed or ctx is done. Otherwise it has waited the
// backoff and the reader receives again.
func (r *readRetry) failed(ctx context.Context, err error) (stop bool) {
	if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
		return true
	}
	r.consecutive++
	if r.consecutive == 1 {
		return false
	}
	d := min(readBackoffMin<<min(r.consecutive-2, 10), readBackoffMax)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return true
	case <-t.C:
		return false
	}
}

// ok records a successful receive.
func (r *readRetry) ok() { r.consecutive = 0 }
