package xcpu

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// twoCPUs is the first two CPUs of the calling thread's affinity mask
// (the process's, unless a caller pinned its thread).
func twoCPUs() (a, b int, err error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return 0, 0, fmt.Errorf("xcpu: the process's CPUs: %w", err)
	}
	var cpus []int
	for c := 0; c < len(set)*64 && len(cpus) < 2; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) < 2 {
		return 0, 0, fmt.Errorf("%w (its affinity mask)", ErrOneCPU)
	}
	return cpus[0], cpus[1], nil
}

// pin locks the calling goroutine to its thread and the thread to cpu.
// The goroutine must not unlock: it ends with the thread, which then ends
// too, rather than going back to the runtime pinned.
func pin(cpu int) error {
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("xcpu: pinning a thread to CPU %d: %w", cpu, err)
	}
	return nil
}
