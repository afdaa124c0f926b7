// Package prefetch tells the CPU which memory a caller is about to write,
// so that the lines are in its cache when the writes come. A hint only: it
// changes no byte, cannot fault, and where the CPU or the build has no
// such instruction it does nothing.
//
// The dense handler's result store is the case it is for: a job of 16 MiB
// keeps two generations of results, 32 MiB that no cache holds, and each
// block's result is copied into a slot last written two calls before.
// Copied cold, every line waits for its own fetch before the copy's
// stores drain (docs/PERFORMANCE.md).
package prefetch

// Line is the cache line the hints are issued per.
const Line = 64

// Write hints that b's lines will be written soon: each line that holds a
// byte of b is fetched toward the CPU's first-level cache, for writing
// where the CPU can (PREFETCHW on amd64).
func Write(b []byte) {
	if len(b) > 0 {
		write(b)
	}
}
