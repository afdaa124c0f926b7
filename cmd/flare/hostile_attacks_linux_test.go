package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flare-net/flare/hostlib"
	"github.com/flare-net/flare/wire"
)

// The attacks. Each comes from its own loopback address (127.0.0.2 and
// up), so that limits per source address meet them and not the normal
// job, which runs from 127.0.0.1 as hosts on this machine do.

func hostileAttacks() []hostileAttack {
	halfJobs, floodSockets := 4000, 200
	if testing.Short() {
		halfJobs, floodSockets = 1000, 50
	}
	return []hostileAttack{
		{name: "join world 1, float64 × 2^32", run: hugeJoin(wire.Float64, 1<<32, 0, true)},
		{name: "join world 1, int8 × 2^32", run: hugeJoin(wire.Int8, 1<<32, 0, true)},
		{name: "join world 1, int8 × 2^26, 1 element per packet", run: hugeJoin(wire.Int8, 1<<26, 1, false)},
		{name: "join world 1, int8 × 2^32, 1 element per packet", run: hugeJoin(wire.Int8, 1<<32, 1, true)},
		{name: fmt.Sprintf("%d half-joined jobs of world 1024 from one address", halfJobs), run: halfJoins(halfJobs)},
		{name: fmt.Sprintf("joins from %d source ports of one address", floodSockets), run: joinFloodPorts(floodSockets, 10)},
		{name: "wrong-token joins and data for a running job", run: wrongToken},
		{name: "a member's data from a non-member address", run: nonMemberData},
		{name: "spoofed leaves for a job's members", run: spoofedLeaves},
		{name: "a member overlaps generations, multi-buffer (B = 2), 4 members", run: overlapGenerations(wire.AlgoMulti, 2)},
		{name: "a member overlaps generations, tree, 4 members", run: overlapGenerations(wire.AlgoTree, 0)},
		{name: "forged partial Result to a host, from a foreign address", run: forgedResult(wire.FlagPartial, "127.0.0.5")},
		{name: "Result with the job's token to a host, from another port", run: forgedResult(0, "127.0.0.1")},
	}
}

// hugeJoin sends one join of world 1 (admitted at once) of a huge shape.
// Where the shape needs more memory than any default budget allows (64 or
// 8 GiB of stored results) or more blocks than the ack's 32-bit count
// carries, it must be refused with an Error (refused-memory with the
// numbers, or bad-request naming the field). 2^26 one-element packets need
// far less result storage (128 MiB), so a budget may admit them: then the
// sole member sends data across the job, and the daemon's memory must
// still stay under the bound.
func hugeJoin(dt wire.DType, elements uint64, packetElems uint32, mustRefuse bool) func(*testing.T, *daemon) attackOutcome {
	return func(t *testing.T, d *daemon) attackOutcome {
		p := newRawPeer(t, d, "127.0.0.2", nil)
		body := wire.JoinBody{World: 1, Elements: elements, PacketElems: packetElems}
		token := rand.Uint64()
		p.send(t, joinPacket(77, token, 0, dt, wire.OpSum, body))
		// Admission may take a while; a crash answers nothing.
		waitUntil(10*time.Second, func() bool { return p.received() > 0 || !d.alive() })
		out := attackOutcome{answered: tally(p)}
		ack, admitted := p.ack()
		refused := p.errors(wire.CodeRefusedMemory)+p.errors(wire.CodeBadRequest) > 0
		switch {
		case admitted && mustRefuse:
			out.fail("admitted (join-ack): want an Error refusing the shape (refused-memory with the budget, or bad-request naming the field)")
		case !admitted && !refused:
			out.fail("no refusal: want an Error with code refused-memory or bad-request")
		}
		if admitted {
			out.answered += "; " + fillHugeJob(t, d, p, token, dt, ack)
		}
		return out
	}
}

// fillHugeJob is what the sole member of an admitted huge job can do
// next: send a block of every page of the job's stored results (or, when
// a block is smaller than 32 bytes, of any per-block state of 32 bytes or
// more, such as a block table), so that the memory the switch set aside
// becomes resident. It stops once the daemon's resident set passes the
// bound (the attack worked), and after at most 256,000 packets (1 GiB of
// pages) or 10 s; every 512 packets it lets the daemon's socket drain, so
// that what it sends arrives.
func fillHugeJob(t *testing.T, d *daemon, p *rawPeer, token uint64, dt wire.DType, ack wire.JoinAckBody) string {
	pe := int(ack.PacketElems)
	stride := max(1, 4096/max(pe*dt.Size(), 32))
	payload := make([]byte, pe*dt.Size())
	start, sent, port, pid := time.Now(), 0, udpPort(d.data), d.cmd.Process.Pid
	why := "256000 packets"
	for b := 0; b < int(ack.Blocks) && sent < 256_000; b += stride {
		h := wire.Header{Type: wire.TypeData, Job: 77, Token: token, Generation: 1, Block: uint32(b), DType: dt, Op: wire.OpSum, Count: uint32(pe)}
		p.send(t, wire.AppendPacket(nil, &h, payload))
		if sent++; sent%512 != 0 {
			continue
		}
		waitUntil(time.Second, func() bool { q, _, ok := udpSocket(port); return !ok || q == 0 })
		if rss, _, err := procMemory(pid); err != nil || rss > hostileRSSBound {
			why = fmt.Sprintf("the daemon's RSS passed %d MiB", hostileRSSBound>>20)
			break
		}
		if time.Since(start) > 10*time.Second {
			why = "10 s"
			break
		}
	}
	waitQuiet(p)
	return fmt.Sprintf("then %d data packets, one every %d blocks, in %v (stopped: %s)", sent, stride, time.Since(start).Round(time.Millisecond), why)
}

// halfJoins opens jobs of world 1024 from one address with rank 0 only,
// paced under the join rate, as many as the switch takes: they must not
// keep the normal job (run after it, from another address) out.
func halfJoins(jobs int) func(*testing.T, *daemon) attackOutcome {
	return func(t *testing.T, d *daemon) attackOutcome {
		p := newRawPeer(t, d, "127.0.0.2", nil)
		pc := &pacer{start: time.Now(), rate: 900}
		for i := range jobs {
			p.send(t, joinPacket(uint32(100_000+i), rand.Uint64(), 0, wire.Float32, wire.OpSum, denseBody(1024, 1024)))
			pc.next()
		}
		waitQuiet(p)
		return attackOutcome{answered: tally(p)}
	}
}

// joinFloodPorts sends half-joins from many sockets of one address, each
// for jobs of its own: a limit per source port does not stop them.
func joinFloodPorts(sockets, each int) func(*testing.T, *daemon) attackOutcome {
	return func(t *testing.T, d *daemon) attackOutcome {
		peers := make([]*rawPeer, sockets)
		for i := range peers {
			peers[i] = newRawPeer(t, d, "127.0.0.3", nil)
		}
		pc := &pacer{start: time.Now(), rate: 900}
		for k := range each {
			for i, p := range peers {
				p.send(t, joinPacket(uint32(200_000+i*each+k), rand.Uint64(), 0, wire.Float32, wire.OpSum, denseBody(16, 1024)))
				pc.next()
			}
		}
		waitQuiet(peers...)
		return attackOutcome{answered: tally(peers...)}
	}
}

// waitQuiet waits until the peers have received nothing new for 200 ms
// (at most 5 s).
func waitQuiet(peers ...*rawPeer) {
	count := func() int {
		n := 0
		for _, p := range peers {
			n += p.received()
		}
		return n
	}
	last, since := count(), time.Now()
	waitUntil(5*time.Second, func() bool {
		if n := count(); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) > 200*time.Millisecond
	})
}

// victim is a running job of two ranks in this process (hostlib) that an
// attack aims at.
type victim struct {
	job    uint32
	token  uint64
	ss     []*hostlib.Session
	elems  int
	blocks int
}

const victimJob = 31

func newVictim(t *testing.T, d *daemon) *victim {
	v := &victim{job: victimJob, token: rand.Uint64() | 1, elems: 4096}
	v.ss = joinFloodJob(t, d.data, v.job, v.token, 2, v.elems)
	v.blocks = v.ss[0].Blocks()
	return v
}

// calls runs n verified allreduce calls of the victim job.
func (v *victim) calls(n int) error {
	done := make(chan struct{})
	close(done)
	var calls, inFlood atomic.Int64
	for range n {
		if err := allreduceLoop(v.ss, v.elems, done, &calls, &inFlood); err != nil {
			return err
		}
	}
	return nil
}

// dropsSince waits until the daemon counted at least want drops of reason
// since before (at most 3 s) and returns how many it counted.
func dropsSince(t *testing.T, d *daemon, before metrics, reason string, want float64) float64 {
	key := `flare_dropped_packets_total{reason="` + reason + `"}`
	var got float64
	waitUntil(3*time.Second, func() bool {
		m, err := tryScrape(d)
		if err != nil {
			return true
		}
		got = m.get(key) - before.get(key)
		return got >= want
	})
	return got
}

// wrongToken sends joins and data for a running job with a wrong token:
// no answer (a wrong token may be a probe), every one counted under
// "token", and the job's calls stay exact.
func wrongToken(t *testing.T, d *daemon) attackOutcome {
	v := newVictim(t, d)
	before := scrape(t, d)
	p := newRawPeer(t, d, "127.0.0.4", nil)
	const n = 100
	for k := range n {
		bad := v.token ^ 1<<(k%64)
		p.send(t, joinPacket(v.job, bad, k%2, wire.Float32, wire.OpSum, denseBody(2, v.elems)))
		p.send(t, dataPacket(wire.TypeData, v.job, bad, 1, uint32(k%v.blocks), k%2, wire.Float32, 0, float32Block(256, 1e6)))
	}
	got := dropsSince(t, d, before, "token", 2*n)
	waitQuiet(p)
	out := attackOutcome{answered: tally(p)}
	if p.received() > 0 {
		out.fail("the switch answered wrong-token packets: %s", out.answered)
	}
	if got < 2*n {
		out.fail("%v of %d wrong-token packets counted under token", got, 2*n)
	}
	if err := v.calls(2); err != nil {
		out.fail("the job after the attack: %v", err)
	}
	return out
}

// nonMemberData sends, while the job's call waits for rank 1, data with
// the job's token for both ranks from addresses that are not members (a
// foreign address, and the members' address with another port): dropped
// and counted under not-member, and the call's sums exact.
func nonMemberData(t *testing.T, d *daemon) attackOutcome {
	v := newVictim(t, d)
	before := scrape(t, d)
	peers := []*rawPeer{newRawPeer(t, d, "127.0.0.4", nil), newRawPeer(t, d, "127.0.0.1", nil)}
	sent0 := v.ss[0].Stats().PacketsSent
	errc := make(chan error, 1)
	buf := make([]float32, v.elems)
	for i := range buf {
		buf[i] = floodValue(0, i, 0)
	}
	go func() { errc <- hostlib.AllReduce(context.Background(), v.ss[0], buf) }()
	waitUntil(5*time.Second, func() bool { return v.ss[0].Stats().PacketsSent >= sent0+uint64(v.blocks) })
	n := 0
	for _, p := range peers {
		for b := range v.blocks {
			for r := range 2 {
				p.send(t, dataPacket(wire.TypeData, v.job, v.token, 1, uint32(b), r, wire.Float32, 0, float32Block(256, 1e6)))
				n++
			}
		}
	}
	got := dropsSince(t, d, before, "not-member", float64(n))
	buf1 := make([]float32, v.elems)
	for i := range buf1 {
		buf1[i] = floodValue(1, i, 0)
	}
	err1 := hostlib.AllReduce(context.Background(), v.ss[1], buf1)
	err0 := <-errc
	out := attackOutcome{answered: tally(peers...)}
	if err0 != nil || err1 != nil {
		out.fail("the call under attack: rank 0 %v, rank 1 %v", err0, err1)
	}
	for i := range buf {
		if want := floodValue(0, i, 0) + floodValue(1, i, 0); buf[i] != want || buf1[i] != want {
			out.fail("element %d = %v (rank 0), %v (rank 1), want %v: a non-member's data was counted", i, buf[i], buf1[i], want)
			break
		}
	}
	if got < float64(n) {
		out.fail("%v of %d non-member data packets counted under not-member", got, n)
	}
	return out
}

// spoofedLeaves sends leaves for the job's members from addresses that
// are not theirs: dropped as not-member, and the job keeps running.
func spoofedLeaves(t *testing.T, d *daemon) attackOutcome {
	v := newVictim(t, d)
	before := scrape(t, d)
	peers := []*rawPeer{newRawPeer(t, d, "127.0.0.4", nil), newRawPeer(t, d, "127.0.0.1", nil)}
	n := 0
	for _, p := range peers {
		for k := range 10 {
			h := wire.Header{Type: wire.TypeLeave, Job: v.job, Token: v.token, Child: uint16(k % 2)}
			p.send(t, wire.AppendPacket(nil, &h, nil))
			n++
		}
	}
	got := dropsSince(t, d, before, "not-member", float64(n))
	waitQuiet(peers...)
	out := attackOutcome{answered: tally(peers...)}
	if got < float64(n) {
		out.fail("%v of %d spoofed leaves counted under not-member", got, n)
	}
	if jobs := d.metric(t, "flare_jobs_active"); jobs != 1 {
		out.fail("flare_jobs_active = %v after the spoofed leaves, want 1 (the job)", jobs)
	}
	if err := v.calls(2); err != nil {
		out.fail("the job after the attack: %v", err)
	}
	return out
}
