package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flare-net/flare/hostlib"
	"github.com/flare-net/flare/wire"
)

// Attacks by a member of a job, and on a host.

// overlapOrder is the order in which the 4 members of a job send block
// b in round k of the overlap attack: some members open generation g, the
// jumper (rank k mod 4) moves on to g+1 while g is open and its handlers
// may still run (what a host does that abandoned the call at its timeout,
// or a hostile member), the other members still send g, the jumper sends
// g after all, and the others send g+1. Where the jump falls (after 1, 2
// or 3 packets of g) turns with k and b. Whether the switch waits for g or
// abandons it, every result it emits must be exact for its generation or
// flagged partial.
func overlapOrder(k, b int) []overlapSend {
	jumper, at := k%4, 1+(k+b)%3
	var others []int
	for r := range 4 {
		if r != jumper {
			others = append(others, r)
		}
	}
	var o []overlapSend
	for _, r := range others[:at] {
		o = append(o, overlapSend{r, 0})
	}
	o = append(o, overlapSend{jumper, 1})
	for _, r := range others[at:] {
		o = append(o, overlapSend{r, 0})
	}
	o = append(o, overlapSend{jumper, 0})
	for _, r := range others {
		o = append(o, overlapSend{r, 1})
	}
	return o
}

// overlapSend is one packet of the overlap attack: rank sends its block
// of generation g+next.
type overlapSend struct {
	rank int
	next uint32
}

// overlapRounds is how many pairs of generations the overlap attack plays
// (64 blocks each), within overlapMaxTime. Today's code goes wrong in
// roughly one block in a thousand on 2 cores (a wrong sum, or a crash):
// 150 rounds find it nearly always.
const (
	overlapRounds  = 150
	overlapMaxTime = 8 * time.Second
)

// overlapValue is rank r's element i in generation g: distinct per rank
// and generation, so a contribution counted in the wrong generation, or
// twice, changes the sum.
func overlapValue(r int, g uint32, i int) uint32 {
	return uint32(r*1_000_003 + int(g)*7919 + i)
}

// overlapGenerations runs the overlap attack on a job of 4 raw members
// with the given design: overlapRounds rounds of two generations over 64 blocks,
// each block's 8 packets back to back so that the switch's cores run them
// at once, and checks every result the members receive.
func overlapGenerations(algo wire.Algo, buffers uint8) func(*testing.T, *daemon) attackOutcome {
	return func(t *testing.T, d *daemon) attackOutcome {
		const world, pe, blocks = 4, 256, 64
		rounds := overlapRounds
		job, token := uint32(4242), rand.Uint64()|1
		chk := &genChecker{pe: pe, world: world, seen: map[[2]uint32]int{}}
		members := make([]*rawPeer, world)
		for r := range members {
			members[r] = newRawPeer(t, d, "127.0.0.1", chk.onResult)
		}
		body := wire.JoinBody{World: world, Algo: algo, Buffers: buffers, Elements: blocks * pe}
		var out attackOutcome
		if !joinRaw(t, members, job, token, wire.Int32, body) {
			out.answered = tally(members...)
			out.fail("the job of raw members was not admitted: %s", out.answered)
			return out
		}
		if a, _ := members[0].ack(); a.Blocks != blocks || a.PacketElems != pe {
			out.fail("ack: %d blocks of %d elements, want %d of %d", a.Blocks, a.PacketElems, blocks, pe)
			return out
		}
		played, start := 0, time.Now()
		for k := 0; k < rounds && d.alive() && time.Since(start) < overlapMaxTime; k++ {
			g := uint32(1 + 2*k)
			for b := range uint32(blocks) {
				for _, s := range overlapOrder(k, int(b)) {
					vals := make([]uint32, pe)
					for i := range vals {
						vals[i] = overlapValue(s.rank, g+s.next, int(b)*pe+i)
					}
					members[s.rank].send(t, dataPacket(wire.TypeData, job, token, g+s.next, b, s.rank, wire.Int32, 0, vals))
				}
			}
			played++
			waitUntil(150*time.Millisecond, func() bool { return chk.complete(g+1, blocks) || !d.alive() })
		}
		waitQuiet(members...)
		out.answered = fmt.Sprintf("%d rounds: %s", played, chk.summary(blocks, played))
		if chk.wrong > 0 {
			out.fail("%d results wrong without FlagPartial, the first: %s", chk.wrong, chk.firstWrong)
		}
		return out
	}
}

// joinRaw joins every member (its rank is its index), resending every
// 100 ms, and reports whether all were acked within 5 s.
func joinRaw(t *testing.T, members []*rawPeer, job uint32, token uint64, dt wire.DType, body wire.JoinBody) bool {
	acked := func() bool {
		for _, m := range members {
			if _, ok := m.ack(); !ok {
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(5 * time.Second); !acked() && time.Now().Before(deadline); {
		for r, m := range members {
			if _, ok := m.ack(); !ok {
				m.send(t, joinPacket(job, token, r, dt, wire.OpSum, body))
			}
		}
		waitUntil(100*time.Millisecond, acked)
	}
	return acked()
}

// genChecker checks every Result the members receive against the exact
// sum of its generation.
type genChecker struct {
	pe, world int

	mu                    sync.Mutex
	exact, partial, wrong int
	firstWrong            string
	seen                  map[[2]uint32]int // (generation, block): members that got its result
}

func (c *genChecker) onResult(h *wire.Header, payload []byte) {
	if h.Type != wire.TypeResult {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen[[2]uint32{h.Generation, h.Block}]++
	if h.Flags&wire.FlagPartial != 0 {
		c.partial++
		return
	}
	for j := range int(h.Count) {
		got := binary.LittleEndian.Uint32(payload[4*j:])
		var want uint32
		for r := range c.world {
			want += overlapValue(r, h.Generation, int(h.Block)*c.pe+j)
		}
		if got != want {
			if c.wrong++; c.wrong == 1 {
				c.firstWrong = fmt.Sprintf("generation %d block %d element %d: %d, want %d", h.Generation, h.Block, j, int32(got), int32(want))
			}
			return
		}
	}
	c.exact++
}

// complete reports whether every member has generation g's result for
// every block.
func (c *genChecker) complete(g uint32, blocks int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for b := range uint32(blocks) {
		if c.seen[[2]uint32{g, b}] < c.world {
			return false
		}
	}
	return true
}

func (c *genChecker) summary(blocks, rounds int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var old, next int // blocks with a result, of the generations g and g+1
	for k, n := range c.seen {
		if n > 0 && k[0]%2 == 1 {
			old++
		} else if n > 0 {
			next++
		}
	}
	return fmt.Sprintf("results %d exact, %d partial, %d wrong; blocks with a result: %d of %d in g, %d of %d in g+1",
		c.exact, c.partial, c.wrong, old, blocks*rounds, next, blocks*rounds)
}

// forgedResult aims at a host: a hostlib session in this process, rank 0
// of a job of 2 whose rank 1 is a raw member, so that rank 0's call waits
// for its results. While it waits, a stranger sends it a Result for every
// block of the call with the job's id, token and generation (what anyone
// who saw one packet of the job knows), with flags, from fromIP. The host
// must not panic and must not take it: its call ends with the exact sum
// once rank 1 sends its data.
func forgedResult(flags wire.Flags, fromIP string) func(*testing.T, *daemon) attackOutcome {
	return func(t *testing.T, d *daemon) attackOutcome {
		const elems, pe = 4096, 256
		job, token := uint32(41), rand.Uint64()|1
		var out attackOutcome
		rank1 := newRawPeer(t, d, "127.0.0.1", nil)
		rank1.send(t, joinPacket(job, token, 1, wire.Float32, wire.OpSum, denseBody(2, elems)))
		host, err := hostlib.Join(context.Background(), hostlib.Options{Switch: d.data, Job: job, Token: token, Rank: 0, World: 2,
			DType: wire.Float32, Op: wire.OpSum, Elements: elems, Timeout: 10 * time.Second, JoinTimeout: 10 * time.Second})
		if err != nil {
			out.fail("the host's join: %v", err)
			return out
		}
		defer host.Close()
		hostAddr, err := memberAddr(t, d, rank1.addr())
		if err != nil {
			out.fail("%v", err)
			return out
		}
		buf := make([]float32, elems)
		for i := range buf {
			buf[i] = floodValue(0, i, 0)
		}
		st0 := host.Stats()
		res := callAsync(host, buf)
		waitUntil(5*time.Second, func() bool { return host.Stats().PacketsSent >= st0.PacketsSent+uint64(host.Blocks()) })
		forger := newRawPeer(t, d, fromIP, nil)
		child := 0
		if flags&wire.FlagPartial != 0 {
			child = 1 // the contributor count of a partial result
		}
		mid := host.Stats()
		for b := range uint32(host.Blocks()) {
			forger.sendTo(t, hostAddr, dataPacket(wire.TypeResult, job, token, 1, b, child, wire.Float32, flags, float32Block(pe, -12345)))
		}
		waitUntil(3*time.Second, func() bool {
			return host.Stats().PacketsReceived >= mid.PacketsReceived+uint64(host.Blocks()) || len(res) > 0
		})
		for b := range uint32(host.Blocks()) {
			vals := make([]uint32, pe)
			for i := range vals {
				vals[i] = math.Float32bits(floodValue(1, int(b)*pe+i, 0))
			}
			rank1.send(t, dataPacket(wire.TypeData, job, token, 1, b, 1, wire.Float32, 0, vals))
		}
		out.answered = fmt.Sprintf("— (a host attacked: %d Results sent to %v from %s)", host.Blocks(), hostAddr, forger.addr())
		checkHostCall(&out, res, buf)
		st := host.Stats()
		out.counters = fmt.Sprintf("host: ignored +%d, partial +%d, duplicates +%d", st.Ignored-st0.Ignored, st.Partial-st0.Partial, st.Duplicates-st0.Duplicates)
		return out
	}
}

// hostCall is the end of an allreduce call run by callAsync.
type hostCall struct {
	err      error
	panicked any
}

// callAsync runs one allreduce call in its own goroutine, catching a
// panic there (hostlib's result handling runs in the caller's goroutine),
// so that a host that falls over shows in the table instead of ending the
// test binary.
func callAsync(s *hostlib.Session, buf []float32) chan hostCall {
	res := make(chan hostCall, 1)
	go func() {
		var c hostCall
		defer func() {
			c.panicked = recover()
			res <- c
		}()
		c.err = hostlib.AllReduce(context.Background(), s, buf)
	}()
	return res
}

// checkHostCall checks the call under attack: no panic, no error, and the
// exact sum of ranks 0 and 1 in every element.
func checkHostCall(out *attackOutcome, res chan hostCall, buf []float32) {
	var c hostCall
	select {
	case c = <-res:
	case <-time.After(15 * time.Second):
		out.fail("the host's call did not end within 15 s")
		return
	}
	switch {
	case c.panicked != nil:
		out.fail("the host panicked: %v", c.panicked)
		return
	case c.err != nil:
		out.fail("the host's call failed: %v", c.err)
		return
	}
	for i, v := range buf {
		if want := floodValue(0, i, 0) + floodValue(1, i, 0); v != want {
			out.fail("the host took the forged result: element %d = %v, want %v", i, v, want)
			return
		}
	}
}

// memberAddr finds the job member that is not other among the peers the
// daemon counts link traffic for (the host's socket address, which
// hostlib does not export).
func memberAddr(t *testing.T, d *daemon, other string) (*net.UDPAddr, error) {
	var found []string
	for _, line := range strings.Split(d.scrape(t), "\n") {
		if !strings.HasPrefix(line, "flare_link_bytes_total{") || !strings.Contains(line, `link="child"`) {
			continue
		}
		_, rest, _ := strings.Cut(line, `peer="`)
		peer, _, _ := strings.Cut(rest, `"`)
		if peer != other && !slices.Contains(found, peer) {
			found = append(found, peer)
		}
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("links of the job's members other than %s: %v, want one", other, found)
	}
	return net.ResolveUDPAddr("udp4", found[0])
}
