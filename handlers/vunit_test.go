package handlers

import (
	"fmt"
	"testing"

	"github.com/flare-net/flare/hpu"
)

// vunit drives handlers in virtual time on a VirtualUnit of one cluster:
// how these tests run packets on cores at given cycles. Its methods panic
// on the unit's errors, which only a broken test causes.
type vunit struct{ u *hpu.VirtualUnit }

// newVUnit is a unit of cores cores (all of them one subset) whose
// handlers emit to eg. Close it when done.
func newVUnit(eg hpu.Egress, cores int) *vunit {
	u, err := hpu.NewVirtual(hpu.Config{Clusters: 1, CoresPerCluster: cores, QueueDepth: 1024}, eg, nil)
	if err != nil {
		panic(fmt.Sprintf("vunit: %v", err))
	}
	return &vunit{u: u}
}

// submit queues p to arrive at cycle at, or at the present cycle when the
// clock has passed at.
func (v *vunit) submit(p *hpu.Packet, at int64) {
	p.Arrival = max(at, v.u.Now())
	if err := v.u.Submit(p); err != nil {
		panic(fmt.Sprintf("vunit: %v", err))
	}
}

// drain runs the unit until every submitted handler has returned.
func (v *vunit) drain() {
	if err := v.u.Run(); err != nil {
		panic(fmt.Sprintf("vunit: %v", err))
	}
}

// run submits p and drains the unit.
func (v *vunit) run(p *hpu.Packet, at int64) {
	v.submit(p, at)
	v.drain()
}

// call runs fn on a core of the unit, as a handler of a packet arriving
// now, and drains the unit: a handler's internals (a store, a record) run
// on a Task as they do inside one.
func (v *vunit) call(fn func(t *hpu.Task)) {
	v.run(&hpu.Packet{Handler: hpu.HandlerFunc(fn)}, v.u.Now())
}

func (v *vunit) close() { v.u.Close() }

// allocsPerGeneration runs pkts through handler h runs times, each time
// as the next generation, on a fresh unit of cores cores, and returns the
// allocations per run (testing.AllocsPerRun).
func allocsPerGeneration(h hpu.Handler, pkts []*hpu.Packet, cores, runs int) float64 {
	v := newVUnit(nopEgress{}, cores)
	defer v.close()
	gen := uint32(0)
	return testing.AllocsPerRun(runs, func() {
		gen++
		for _, p := range pkts {
			p.Hdr.Generation = gen
			p.Handler = h
			v.submit(p, 0)
		}
		v.drain()
	})
}
