package hpu

// placement is the packet scheduling policy, the one both runners use (the
// real-time HPU and the VirtualUnit): a packet's home cluster is its block
// mod the clusters; when home is full, with Config.Overflow and S > 1, the
// least-loaded cluster takes it if that is not home and has room; within
// the cluster the block's subset of S consecutive cores (wrapping) may run
// it, the lowest-numbered idle one first, or else the one with the least
// work. The runners differ only in what they do with a busy subset: the
// HPU queues on that least-loaded core, the VirtualUnit queues in the
// cluster (see VirtualUnit). The HPU also leaves an idle core's goroutine
// parked while every CPU the Go runtime has already runs an awake core,
// queueing on an awake core of the subset instead (HPU.dispatch): its
// cores are goroutines that share the box's few CPUs.
type placement struct {
	clusters, cores, subset int
	overflow                bool
}

// occupancy is what the policy reads and changes of a runner's clusters
// and cores. A runner whose cores run concurrently makes enter atomic.
type occupancy interface {
	// enter counts a request into cluster ci if its queue has room.
	enter(ci int) bool
	// held is how many requests cluster ci holds now: queued or running.
	held(ci int) int64
	// work is how much work core j of cluster ci has: 0 means idle.
	work(ci, j int) int64
}

func newPlacement(cfg Config) placement {
	return placement{clusters: cfg.Clusters, cores: cfg.CoresPerCluster, subset: cfg.SubsetS, overflow: cfg.Overflow}
}

// home is block's home cluster.
func (pl placement) home(block uint32) int { return int(block % uint32(pl.clusters)) }

// cluster enters a request for block into its home cluster or, when home
// is full and overflow applies, into the least-loaded one (the
// lowest-numbered of equals). It returns the cluster and whether it is an
// overflow, or ok false when no eligible cluster has room.
func (pl placement) cluster(block uint32, o occupancy) (ci int, overflow, ok bool) {
	home := pl.home(block)
	if o.enter(home) {
		return home, false, true
	}
	if !pl.overflow || pl.subset == 1 {
		return 0, false, false
	}
	ci = 0
	for j := 1; j < pl.clusters; j++ {
		if o.held(j) < o.held(ci) {
			ci = j
		}
	}
	if ci == home || !o.enter(ci) {
		return 0, false, false
	}
	return ci, true, true
}

// subsetBase is the first core of block's subset: the S cores from there
// (wrapping) may run it.
func (pl placement) subsetBase(block uint32) int {
	if pl.subset >= pl.cores {
		return 0
	}
	return int(uint64(block/uint32(pl.clusters)) * uint64(pl.subset) % uint64(pl.cores))
}

// next is the core after c in a subset's order, wrapping at the cluster's
// end: the placement scans a subset per packet, and a division per core
// (c mod C, C not a constant) cost more than the scan's loads.
func (pl placement) next(c int) int {
	if c++; c == pl.cores {
		return 0
	}
	return c
}

// inSubset reports whether core j may run block's requests.
func (pl placement) inSubset(block uint32, j int) bool {
	return (j-pl.subsetBase(block)+pl.cores)%pl.cores < pl.subset
}

// core picks the core of cluster ci for block: the lowest-numbered idle
// one of its subset (idle true), or else the one with the least work, the
// first of equals.
func (pl placement) core(ci int, block uint32, o occupancy) (j int, idle bool) {
	best, bestWork := -1, int64(0)
	for c, k := pl.subsetBase(block), 0; k < pl.subset; c, k = pl.next(c), k+1 {
		w := o.work(ci, c)
		if w == 0 {
			return c, true
		}
		if best < 0 || w < bestWork {
			best, bestWork = c, w
		}
	}
	return best, false
}
