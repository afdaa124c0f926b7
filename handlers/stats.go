package handlers

import "fmt"

// String gives the counters that explain a stuck or refused block, on one
// line ("packets=12 completed=3 dup=0 ..."), for error messages.
func (s *DenseStats) String() string {
	return fmt.Sprintf("packets=%d completed=%d dup=%d stale=%d invalid=%d nobuf=%d",
		s.Packets.Load(), s.Completed.Load(), s.Duplicate.Load(), s.Stale.Load(), s.Invalid.Load(), s.NoBuffer.Load())
}

// String gives the counters that explain a stuck or refused block, on one
// line ("packets=12 completed=3 dup=0 ..."), for error messages.
func (s *SparseStats) String() string {
	return fmt.Sprintf("packets=%d completed=%d dup=%d stale=%d invalid=%d badindex=%d nobuf=%d spilled=%d",
		s.Packets.Load(), s.Completed.Load(), s.Duplicate.Load(), s.Stale.Load(), s.Invalid.Load(),
		s.BadIndex.Load(), s.NoBuffer.Load(), s.Spilled.Load())
}
