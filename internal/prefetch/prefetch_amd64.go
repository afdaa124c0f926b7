//go:build amd64 && !purego

package prefetch

// write issues PREFETCHW on each line of b where the CPU has it (CPUID
// 0x80000001 ECX bit 8: AMD's since the K8 and Intel's since Broadwell),
// and PREFETCHT0 elsewhere. The write hint matters on more than one CPU:
// a slot another CPU last read (a writer sending the result, the kernel
// copying it) is held shared there, and T0 would fetch it shared, the
// write still waiting for the other copy to be invalidated; W takes it
// exclusive at once (BenchmarkGenPath readers-2, docs/PERFORMANCE.md).
func write(b []byte) {
	if hasPrefetchW {
		writeW(b)
		return
	}
	writeT0(b)
}

var hasPrefetchW = func() bool {
	maxExt, _, _, _ := cpuid(0x80000000, 0)
	if maxExt < 0x80000001 {
		return false
	}
	_, _, ecx, _ := cpuid(0x80000001, 0)
	return ecx&(1<<8) != 0
}()

//go:noescape
func writeW(b []byte)

//go:noescape
func writeT0(b []byte)

func cpuid(eax, ecx uint32) (a, b, c, d uint32)
