// Package yield gives up the CPU to the goroutines queued on the caller's
// own P, without waking another.
//
// runtime.Gosched puts the caller on the global run queue and, where a P
// is idle, wakes a thread for it (wakep): the idle P's thread takes the
// caller from the global queue, on the other CPU, with its working set
// still in this one's cache. On a virtual machine a thread's wake-up
// costs 20–100 µs (docs/PERFORMANCE.md), so each yield of a goroutine
// that hands work to others on its own P can cost a wake-up and a move.
// In a trace of BenchmarkGenPath/readers-2 (300 calls) the two readers
// moved between the Ps 5,424 and 4,923 times with runtime.Gosched, and
// 32 and 35 times in a build that yielded with Local throughout.
package yield

import _ "unsafe" // go:linkname

// Local gives the CPU to the goroutines runnable on the caller's P, and
// puts the caller at the tail of that P's run queue, waking no other P:
// the runtime's own goyield. Another P can still steal the caller when
// it runs out of work, as it can any goroutine on a local run queue.
func Local() { goyield() }

// goyield is runtime.goyield, which the runtime keeps for the packages
// that link to it ("Do not remove or change the type signature", Go
// issue 67401): runtime.Gosched with a local run queue.
//
//go:linkname goyield runtime.goyield
func goyield()
