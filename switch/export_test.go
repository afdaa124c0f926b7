package swtch

// slot is a packet with a receive buffer, as a reader that does not lend
// takes it.
func (s *Switch) slot() *inPacket { return s.withBuf(s.inFree[0].get()) }

// RegionsFree is how many of the readers' receive regions are back in
// their pools, and how many they have (0, 0 where no conn lends).
func (s *Switch) RegionsFree() (free, total int) {
	for _, g := range s.lends {
		if g != nil {
			f := g.pool.free
			f.mu.Lock()
			free, total = free+len(f.free), total+f.max
			f.mu.Unlock()
		}
	}
	return free, total
}

// WithRegions gives each reader n receive regions.
func WithRegions(cfg Config, n int) Config {
	cfg.regions = n
	return cfg
}

// MemoryReserved is what the jobs hold of the memory budget now, in bytes.
func (s *Switch) MemoryReserved() int64 { return s.budget.reserved.Load() }
