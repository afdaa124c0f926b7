//go:build amd64 && !purego

package prefetch

// write issues PREFETCHT0 for each line of b. PREFETCHW, the write hint,
// has no mnemonic in Go's assembler; a line that no other CPU holds
// arrives exclusive from T0 as well, so the stores that follow need no
// second request.
//
//go:noescape
func write(b []byte)
