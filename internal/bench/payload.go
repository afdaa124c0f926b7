package bench

import (
	"bytes"
	"fmt"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/wire"
)

// payload is what the local ranks of one measurement reduce, call by
// call, and how a call's results are checked: dense vectors reduced in
// place, or sparse (index, value) inputs and the results the calls return.
// The patterns are deterministic in (rank, call), so every process can
// compute every rank's input, and from them the reference.
type payload struct {
	c       Config
	local   []int    // global ranks, by local index
	world   int      // P
	bufs    [][]byte // dense: the vectors, reduced in place
	inputs  [][]byte // sparse: each rank's pairs
	results [][]byte // sparse: each rank's result
}

func newPayload(c Config) *payload {
	local, world := c.localRanks()
	p := &payload{c: c, local: local, world: world,
		bufs: make([][]byte, len(local)), inputs: make([][]byte, len(local)), results: make([][]byte, len(local))}
	if !c.Sparse {
		for i := range p.bufs {
			p.bufs[i] = make([]byte, c.Count*c.DType.Size())
		}
	}
	return p
}

// fill writes call it's inputs, checked or not: every path's call starts
// from a vector just written, as a training step's allreduce starts from
// the gradients the backward pass just wrote. (A vector left as the last
// call wrote it is not the same start: with a process per rank, the
// fan-out relay's 1 MiB call took 8.8 ms from it and 14.5 ms from one
// freshly filled, so rows that skipped the fill had a start the others
// did not.)
func (p *payload) fill(it int) {
	c := p.c
	for i, r := range p.local {
		if c.Sparse {
			p.inputs[i] = sparsePattern(c.DType, r, it, c.Count, c.Density, c.Overlap)
		} else {
			fillPattern(c.DType, c.Op, r, it, p.bufs[i])
		}
	}
}

// check verifies call it's result on every local rank when the
// configuration asks for it: the first element by element against the
// reference, every other for the same bits as the first (a multicast
// result, or the ring's allgather, gives every rank the same vector) or,
// failing that, against the reference too. In bounded time each rank's
// blocks are classified by their contributors (contrib): the partial ones
// (fewer contributions by design) are counted with the contributions they
// miss, the complete ones checked.
func (p *payload) check(it int, contrib func(i int) (counts []uint16, pe int)) (partial, missed int, err error) {
	c := p.c
	switch {
	case c.Deadline > 0:
		for i, r := range p.local {
			counts, pe := contrib(i)
			n, m, err := p.checkBlocks(it, p.bufs[i], counts, pe)
			partial, missed = partial+n, missed+m
			if err != nil {
				return partial, missed, fmt.Errorf("verify: rank %d, call %d: %w", r, it, err)
			}
		}
		return partial, missed, nil
	case !c.Verify:
		return 0, 0, nil
	}
	got, check := p.bufs, func(b []byte) error { return verifyPattern(c.DType, c.Op, p.world, it, b, 0) }
	if c.Sparse {
		all := make([][]byte, p.world)
		for r := range all {
			all[r] = sparsePattern(c.DType, r, it, c.Count, c.Density, c.Overlap)
		}
		got, check = p.results, func(b []byte) error { return elem.CheckSparse(c.DType, c.Op, all, b) }
	}
	for i, r := range p.local {
		if i > 0 && bytes.Equal(got[i], got[0]) {
			continue
		}
		if err := check(got[i]); err != nil {
			return 0, 0, fmt.Errorf("verify: rank %d, call %d: %w", r, it, err)
		}
	}
	return 0, 0, nil
}

// checkBlocks is one rank's bounded-time check: counts holds each block's
// contributors (nil: none known, the whole vector is checked), pe the
// elements per block.
func (p *payload) checkBlocks(it int, buf []byte, counts []uint16, pe int) (partial, missed int, err error) {
	c := p.c
	if counts == nil {
		if c.Verify {
			err = verifyPattern(c.DType, c.Op, p.world, it, buf, 0)
		}
		return 0, 0, err
	}
	sz := c.DType.Size()
	for b, n := range counts {
		if int(n) < p.world {
			partial++
			missed += p.world - int(n)
			continue
		}
		if c.Verify {
			lo, hi := b*pe, min((b+1)*pe, c.Count)
			if err := verifyPattern(c.DType, c.Op, p.world, it, buf[lo*sz:hi*sz], lo); err != nil {
				return partial, missed, fmt.Errorf("block %d: %w", b, err)
			}
		}
	}
	return partial, missed, nil
}

// verifyPattern checks buf, the elements from first on, against the plain
// reference of every rank's pattern, a chunk of elements at a time.
func verifyPattern(dt wire.DType, op wire.Op, world, it int, buf []byte, first int) error {
	if dt == wire.Float32 && op == wire.OpSum && sumsExactly(world, it, buf, first) {
		return nil
	}
	sz := dt.Size()
	const chunk = 4096
	inputs := make([][]byte, world)
	for lo := 0; lo*sz < len(buf); lo += chunk {
		n := min(chunk, len(buf)/sz-lo)
		for r := range inputs {
			if inputs[r] == nil {
				inputs[r] = make([]byte, chunk*sz)
			}
			inputs[r] = inputs[r][:n*sz]
			for i := 0; i < n; i++ {
				putValue(dt, inputs[r][i*sz:], patternValue(op, r, first+lo+i, it))
			}
		}
		if err := elem.Check(dt, op, inputs, buf[lo*sz:(lo+n)*sz]); err != nil {
			return fmt.Errorf("at element offset %d: %w", first+lo, err)
		}
	}
	return nil
}
