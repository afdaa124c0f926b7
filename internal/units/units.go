// Package units writes the quantities of the CLI's tables as people read
// them: byte sizes as flags take them (1MiB), byte counts with one decimal
// (1.5 MiB), and ratios (2.50×).
package units

import "fmt"

// FormatSize prints n as the largest exact binary unit (16MiB, 1000B), as
// the size flags read it back.
func FormatSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// HumanBytes prints a byte count with one decimal in the largest binary
// unit that keeps it at least 1.
func HumanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// Ratio prints a ratio as a table cell, 2.50×, or "-" for 0 (not
// measured).
func Ratio(r float64) string {
	if r == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", r)
}
