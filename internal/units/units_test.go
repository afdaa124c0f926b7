package units

import "testing"

func TestFormat(t *testing.T) {
	for n, want := range map[int64]string{0: "0B", 1000: "1000B", 1 << 10: "1KiB", 1536: "1536B", 16 << 20: "16MiB", 3 << 30: "3GiB", 1<<30 + 1<<10: "1048577KiB", 1 << 20: "1MiB", 1 << 30: "1GiB", 1<<20 + 1: "1048577B"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 5 << 20: "5.0 MiB", 3 << 30: "3.0 GiB", 1 << 10: "1.0 KiB", 1 << 20: "1.0 MiB", 1 << 30: "1.0 GiB", 1<<31 - 1<<29: "1.5 GiB"} {
		if got := HumanBytes(n); got != want {
			t.Errorf("HumanBytes(%d) = %q, want %q", n, got, want)
		}
	}
	for r, want := range map[float64]string{0: "-", 1: "1.00×", 2.345: "2.35×", 0.5: "0.50×"} {
		if got := Ratio(r); got != want {
			t.Errorf("Ratio(%v) = %q, want %q", r, got, want)
		}
	}
}
