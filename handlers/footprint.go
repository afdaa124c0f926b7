package handlers

import (
	"math/bits"
	"slices"
	"unsafe"

	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/wire"
)

// Footprint is the host memory (Go heap, outside the L1 arenas) that a
// job's handler allocates when it is built and holds until it is dropped,
// computed from its configuration alone, before anything is allocated: the
// daemon admits a job only when this fits its memory budget. The formulas
// below follow NewDense's and NewSparse's allocations one by one, with the
// element sizes taken from the types themselves; TestFootprintMatchesHeap
// holds them to what the constructors really allocate.
type Footprint struct {
	Results int64 // stored results (KeepResults): both generations
	Blocks  int64 // the block table and its per-block bookkeeping
	Work    int64 // the states of blocks open at once: contributor bitmaps, buffer lists, stream state
}

// Total is the sum of the parts.
func (f Footprint) Total() int64 { return f.Results + f.Blocks + f.Work }

// Add returns f + g, part by part.
func (f Footprint) Add(g Footprint) Footprint {
	return Footprint{Results: f.Results + g.Results, Blocks: f.Blocks + g.Blocks, Work: f.Work + g.Work}
}

const ptrBytes = int64(unsafe.Sizeof(uintptr(0)))

// maxSmall is the largest object the Go allocator serves from a size class.
const maxSmall = 32 << 10

// heapObject is what the Go allocator takes for one object of n bytes: a
// small object (up to maxSmall bytes, its header included) its size
// class, after an 8-byte header when it holds pointers and is larger than
// 512 bytes; a large one whole 8 KiB pages, with no header (its span holds
// its type: counting one overcharged a job of 512 block states 16 KiB,
// for their array and their pool's stacks). TestHeapObjectMatchesAllocator
// holds it to the allocator. (Go's size classes,
// internal/runtime/gc/sizeclasses.go; if a release changes them the
// footprint drifts by a few percent, and TestFootprintMatchesHeap says so.)
func heapObject(n int64, pointers bool) int64 {
	if n <= 0 {
		return 0
	}
	if pointers && n > 512 && n+8 <= maxSmall {
		n += 8
	}
	if n > maxSmall {
		return (n + 8191) &^ 8191
	}
	i, _ := slices.BinarySearch(sizeClasses[:], uint16(n))
	return int64(sizeClasses[i])
}

var sizeClasses = [...]uint16{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, 288, 320,
	352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048, 2304, 2688, 3072, 3200,
	3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240, 10880, 12288, 13568, 14336, 16384, 18432,
	19072, 20480, 21760, 24576, 27264, 28672, 32768}

// Whether an object holds pointers, for heapObject.
const (
	noPointers  = false
	hasPointers = true
)

// poolBytes is a workPool of n states: its stacks, and each one's room for n.
func poolBytes(n int64) int64 {
	return heapObject(int64(unsafe.Sizeof([poolShards]poolShard[work]{})), hasPointers) + poolShards*heapObject(n*ptrBytes, hasPointers)
}

// Footprint is what NewDense allocates for c with a quota of quotaBuffers
// buffers (c.Quota is not read, so the daemon can size a job before it
// reserves the quota). Change it with NewDense.
func (c *DenseConfig) Footprint(quotaBuffers int) Footprint {
	pe := int64(max(c.PacketElems, 1))
	elements := int64(max(c.Elements, 0))
	nblocks := (elements + pe - 1) / pe
	var f Footprint
	f.Blocks = heapObject(int64(unsafe.Sizeof(Dense{})), hasPointers) + heapObject(nblocks*int64(unsafe.Sizeof(block{})), hasPointers)
	if c.KeepResults {
		f.Results = 2 * heapObject(elements*int64(c.DType.Size()), noPointers)
		f.Blocks += 2 * heapObject(nblocks*int64(unsafe.Sizeof(uint32(0))), noPointers) // resultGen
		if c.Deadline > 0 {
			f.Blocks += 2 * heapObject(nblocks*int64(unsafe.Sizeof(uint16(0))), noPointers) // resultCount
		}
		if c.Uplink != nil {
			f.Blocks += 2 * (heapObject(nblocks, noPointers) + heapObject(nblocks*int64(unsafe.Sizeof(int64(0))), noPointers)) // final, upAt
		}
	}
	nbufs := int64(1)
	switch c.Algo {
	case wire.AlgoMulti:
		nbufs = int64(c.Buffers)
	case wire.AlgoTree:
		nbufs = 2 * int64(1) << bits.Len(uint(max(c.Children, 1)-1))
	}
	nwork := int64(workCount(quotaBuffers, int(nblocks)))
	words := int64(c.Children+63) / 64
	var perWork int64 // beyond the work itself, which holds one bitmap word and one buffer
	if nbufs > 1 {
		perWork += heapObject(nbufs*ptrBytes, hasPointers)
	}
	if c.Algo == wire.AlgoMulti {
		perWork += heapObject(nbufs, noPointers) + heapObject(nbufs*int64(unsafe.Sizeof(hpu.Lock{})), noPointers)
	}
	f.Work = heapObject(nwork*int64(unsafe.Sizeof(work{})), hasPointers) + nwork*perWork + poolBytes(nwork) // the works are one allocation
	if words > 1 {
		f.Work += heapObject(nwork*words*8, noPointers) // and so are the bitmaps
	}
	return f
}

// Footprint is what NewSparse allocates for c with a quota of quotaBuffers
// buffers of bufferBytes each (c.Quota is not read). The streams a
// KeepResults job stores grow with the data and are not in it: they are
// charged through SparseConfig.Reserve as they grow. Change it with
// NewSparse.
func (c *SparseConfig) Footprint(quotaBuffers, bufferBytes int) Footprint {
	be := int64(max(c.BlockElems, 1))
	nblocks := (int64(max(c.Elements, 0)) + be - 1) / be
	var f Footprint
	f.Blocks = heapObject(int64(unsafe.Sizeof(Sparse{})), hasPointers) + heapObject(nblocks*int64(unsafe.Sizeof(sparseBlock{})), hasPointers)
	records := heapObject(nblocks*int64(unsafe.Sizeof(sparseRecord{})), hasPointers)
	if c.KeepResults {
		f.Blocks += 2 * records
	}
	if c.Uplink != nil {
		// The parent's streams, and each one's sequence bitmap, which
		// grows to the longest stream the parent may send.
		seen := heapObject((int64(c.maxDownstream())/64+1)*8, noPointers)
		f.Blocks += 2 * (records + nblocks*seen)
	}
	per, cells := c.tableCells(bufferBytes)
	if per < 1 {
		return f
	}
	tableBufs := int64((cells + per - 1) / per)
	b := int64(c.Buffers)
	occWords := int64(cells+63) / 64
	seqWords := int64(c.childPackets()+63) / 64
	children := int64(c.Children)
	perWork := heapObject(int64(unsafe.Sizeof(sparseWork{})), hasPointers) + heapObject((b*tableBufs+1)*ptrBytes, hasPointers) + heapObject(b*occWords*8, noPointers) +
		heapObject(children*seqWords*8, noPointers) + heapObject(children*int64(unsafe.Sizeof(sparseChild{})), noPointers)
	if b > 1 {
		perWork += heapObject(b*int64(unsafe.Sizeof(hpu.Lock{})), noPointers)
	}
	if c.Storage == wire.StorageHash {
		perWork += heapObject(b*int64(cells)*8, noPointers) // the flush's sort keys
	}
	nwork := int64(workCount(quotaBuffers/max(c.BlockBuffers(bufferBytes), 1), int(nblocks)))
	f.Work = nwork*perWork + poolBytes(nwork)
	return f
}
