package hpu

import "fmt"

// Defaults: one PsPIN unit.
const (
	DefaultClusters        = 4
	DefaultCoresPerCluster = 8
	DefaultL1Bytes         = 1 << 20 // 1 MiB per cluster
	DefaultQueueDepth      = 20      // handler requests per cluster (12 waiting + 8 running)
	DefaultBufferBytes     = 1024    // one aggregation buffer holds one 1 KiB packet payload
)

// Limits checked by Config.Validate. They keep a typo from asking for a
// million goroutines; they are not hardware limits.
const (
	MaxClusters        = 1024
	MaxCoresPerCluster = 256
	MaxQueueDepth      = 1 << 16
	MinL1Bytes         = 4 << 10
	MaxL1Bytes         = 1 << 30
	MinBufferBytes     = 8
	MaxBufferBytes     = 64 << 10
	MaxSubmitters      = 1024
)

// Config is the shape of the processing unit. The zero value of a field means
// its default (see WithDefaults).
type Config struct {
	Clusters        int // clusters (shared-nothing); K = Clusters × CoresPerCluster
	CoresPerCluster int // cores per cluster, C
	L1Bytes         int // L1 memory per cluster, carved into aggregation buffers
	QueueDepth      int // handler requests a cluster holds, queued plus running
	SubsetS         int // cores of a cluster that may run packets of one block, 1..C; 0 = C
	BufferBytes     int // size of one aggregation buffer (the packet payload)
	// Overflow lets a packet whose home cluster is full run on the
	// least-loaded cluster (PsPIN's default scheduler) when S > 1. Off, a
	// block's packets run only on its subset of S cores of its home
	// cluster, as Flare schedules them (§5: "restricting the execution of
	// the packets of the same block to a subset of S cores"), which is
	// what bounds the handlers meeting at one buffer by S; a packet whose
	// home cluster is full waits for it (or Submit reports ErrQueueFull).
	Overflow bool
	Cost     CostModel
	// Submitters is how many goroutines call SubmitBatch at once (the
	// switch's readers), 0 when not known. When the submitters and the
	// awake cores take every CPU the Go runtime has, a submitter runs a
	// packet whose core is idle and parked itself, as that core, instead
	// of waking the core's goroutine onto its own CPU (see borrow.go). 0:
	// cores are always woken.
	Submitters int
	// LocalYield has the unit's goroutines give the CPU, where they yield
	// it (a core whose queue ran dry, a submitter after running cores'
	// packets), to the goroutines queued on their own P (yield.Local)
	// instead of runtime.Gosched, which moves the yielder to the global
	// run queue and wakes an idle P to take it, with its working set in
	// this CPU's cache. The switch sets it: where its readers take every
	// P, a reader that yielded with Gosched moved between the Ps about 18
	// times a call; where the hosts share its Ps (the switch's
	// Config.SharedCPUs), the other P has the hosts' work, and a wake-up
	// of it to take the yielder costs what the yield was to save.
	LocalYield bool
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Clusters == 0 {
		c.Clusters = DefaultClusters
	}
	if c.CoresPerCluster == 0 {
		c.CoresPerCluster = DefaultCoresPerCluster
	}
	if c.L1Bytes == 0 {
		c.L1Bytes = DefaultL1Bytes
	}
	if c.QueueDepth == 0 {
		c.QueueDepth = DefaultQueueDepth
	}
	if c.SubsetS == 0 {
		c.SubsetS = c.CoresPerCluster
	}
	if c.BufferBytes == 0 {
		c.BufferBytes = DefaultBufferBytes
	}
	if c.Cost == (CostModel{}) {
		c.Cost = PsPINCost()
	}
	return c
}

// Validate reports the first field out of range, naming it and the allowed
// range. It expects defaults to have been applied.
func (c Config) Validate() error {
	switch {
	case c.Clusters < 1 || c.Clusters > MaxClusters:
		return fmt.Errorf("clusters = %d: must be in 1..%d", c.Clusters, MaxClusters)
	case c.CoresPerCluster < 1 || c.CoresPerCluster > MaxCoresPerCluster:
		return fmt.Errorf("cores per cluster = %d: must be in 1..%d", c.CoresPerCluster, MaxCoresPerCluster)
	case c.QueueDepth < 1 || c.QueueDepth > MaxQueueDepth:
		return fmt.Errorf("queue depth = %d: must be in 1..%d", c.QueueDepth, MaxQueueDepth)
	case c.SubsetS < 1 || c.SubsetS > c.CoresPerCluster:
		return fmt.Errorf("policy S = %d: must be in 1..%d (cores per cluster)", c.SubsetS, c.CoresPerCluster)
	case c.Submitters < 0 || c.Submitters > MaxSubmitters:
		return fmt.Errorf("submitters = %d: must be in 0..%d", c.Submitters, MaxSubmitters)
	case c.BufferBytes < MinBufferBytes || c.BufferBytes > MaxBufferBytes || c.BufferBytes%8 != 0:
		return fmt.Errorf("buffer size = %d bytes: must be a multiple of 8 in %d..%d", c.BufferBytes, MinBufferBytes, MaxBufferBytes)
	case c.L1Bytes < MinL1Bytes || c.L1Bytes > MaxL1Bytes:
		return fmt.Errorf("L1 = %d bytes: must be in %d..%d", c.L1Bytes, MinL1Bytes, MaxL1Bytes)
	case c.L1Bytes < c.BufferBytes:
		return fmt.Errorf("L1 = %d bytes: must hold at least one %d-byte buffer", c.L1Bytes, c.BufferBytes)
	}
	return c.Cost.Validate()
}

// Cores is the total number of cores, K.
func (c Config) Cores() int { return c.Clusters * c.CoresPerCluster }

// BuffersPerCluster is how many aggregation buffers one cluster's L1 holds.
func (c Config) BuffersPerCluster() int { return c.L1Bytes / c.BufferBytes }
