//go:build race

package conn

import "sync/atomic"

// ioSync carries, for the race detector, the order that a datagram's way
// through the kernel gives: what a goroutine did before it sent happened
// before whatever a goroutine does after receiving what that send caused.
// The standard library's sockets say so through internal/poll (its
// ioSync: a release at every write, an acquire at every read); the raw
// recvmmsg and sendmmsg calls here bypass it and say so themselves. Without
// it the detector reports, as concurrent, a result slot the switch's
// writer read when it sent a result and that a handler rewrote two
// generations later, after every member had that result and sent again.
var ioSync atomic.Uint64

// raceReleaseIO marks a send.
func raceReleaseIO() { ioSync.Add(1) }

// raceAcquireIO marks a receive.
func raceAcquireIO() { ioSync.Load() }
