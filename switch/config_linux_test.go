package swtch

import "testing"

// The cgroup's memory.max caps the physical memory where it is a number
// below it, and stands alone where the physical memory is unknown.
func TestCgroupCapped(t *testing.T) {
	for _, tc := range []struct {
		physical  int64
		memoryMax string
		want      int64
	}{
		{8 << 30, "max\n", 8 << 30},
		{8 << 30, "", 8 << 30},
		{8 << 30, "2147483648\n", 2 << 30},
		{8 << 30, "17179869184\n", 8 << 30},
		{8 << 30, "0\n", 8 << 30},
		{8 << 30, "-5", 8 << 30},
		{0, "1073741824", 1 << 30},
		{0, "max", 0},
	} {
		if got := cgroupCapped(tc.physical, tc.memoryMax); got != tc.want {
			t.Errorf("cgroupCapped(%d, %q) = %d, want %d", tc.physical, tc.memoryMax, got, tc.want)
		}
	}
	if m := machineMemory(); m < 1<<20 {
		t.Errorf("machineMemory() = %d: this machine has memory", m)
	}
}
