package swtch

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/flare-net/flare/wire"
)

var update = flag.Bool("update", false, "rewrite the FuzzHandle seed corpus in testdata/fuzz")

// handleSeed is one committed FuzzHandle input.
type handleSeed struct {
	name    string
	variant byte
	data    []byte
}

// Record selectors (see fuzzRecords).
const (
	selRank0    = 0
	selRank1    = 1
	selStranger = 2
	selOtherPrt = 3
	selParent   = 3 // at a middle switch
	selStamp    = 0x80
)

// denseData is rank's data packet for block b of generation gen of the
// fixture's dense job.
func denseData(rank int, b, gen uint32, token uint64) []byte {
	n := fzPacketElems
	if last := fzElements / fzPacketElems; int(b) == last {
		n = fzElements - last*fzPacketElems
	}
	payload := make([]byte, 0, 4*n)
	for i := range n {
		payload = binary.LittleEndian.AppendUint32(payload, math.Float32bits(float32(rank*100+i)))
	}
	h := wire.Header{Type: wire.TypeData, Job: fzJob, Token: token, Generation: gen, Block: b, Child: uint16(rank),
		DType: wire.Float32, Op: wire.OpSum, Count: uint32(n)}
	return wire.AppendPacket(nil, &h, payload)
}

// sparseData is rank's last (and only) Sparse packet for block b of the
// fixture's sparse job, with pairs at the given indices within the block.
func sparseData(rank int, b, gen uint32, idx ...uint32) []byte {
	var payload []byte
	for _, i := range idx {
		payload = wire.AppendPair(payload, i, binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(rank+1))))
	}
	h := wire.Header{Type: wire.TypeSparse, Flags: wire.FlagLast, Job: fzJob, Token: fzToken, Generation: gen,
		Block: wire.SparseBlockField(b, 0), Child: uint16(rank), DType: wire.Float32, Op: wire.OpSum, Count: uint32(len(idx))}
	return wire.AppendPacket(nil, &h, payload)
}

// abortPacket is rank's Abort of the fixture job.
func abortPacket(rank int, token uint64) []byte {
	h := wire.Header{Job: fzJob, Token: token, Generation: 1, Block: uint32(rank), Child: uint16(rank)}
	return wire.AppendAbort(nil, &h, wire.CodeTimeout, "allreduce generation 1 timed out")
}

// asMember is pkt, a packet of the fixture job's member m as a switch
// alone has it (its rank in the child field), as member m of variant v
// sends it: at a middle switch, from the child switch or the host there.
func asMember(v fuzzVariant, m int, pkt []byte) []byte {
	var h wire.Header
	payload, err := h.Unmarshal(pkt)
	if err != nil {
		panic(err)
	}
	child, flags := v.header(m)
	h.Child, h.Flags = child, h.Flags|flags
	return wire.AppendPacket(nil, &h, payload)
}

// fromParent is pkt, a member's packet of the fixture job, as the parent
// sends it down: as type typ, with child 0, as results have it.
func fromParent(typ wire.Type, pkt []byte) []byte {
	var h wire.Header
	payload, err := h.Unmarshal(pkt)
	if err != nil {
		panic(err)
	}
	h.Type, h.Child = typ, 0
	return wire.AppendPacket(nil, &h, payload)
}

func leavePacket(rank int, token uint64) []byte {
	h := wire.Header{Type: wire.TypeLeave, Job: fzJob, Token: token, Child: uint16(rank)}
	return wire.AppendPacket(nil, &h, nil)
}

// handleSeeds are inputs that reach each outcome of handle: blocks that
// complete, resends, stale and duplicate packets, wrong tokens, unknown
// jobs, strangers, joins answered, refused and recorded, leaves, and
// garbage.
func handleSeeds() []handleSeed {
	var out []handleSeed
	add := func(name string, variant byte, recs ...[]byte) {
		out = append(out, handleSeed{name, variant, bytes.Join(recs, nil)})
	}
	const bad = 0xbad
	for v, fv := range fuzzVariants {
		v := byte(v)
		if fv.middle {
			out = append(out, middleSeeds(fv, v)...)
			continue
		}
		if fv.multicast {
			out = append(out, multicastSeeds(fv, v)...)
		}
		if fv.registered {
			out = append(out, registeredSeeds(fv, v)...)
		}
		if fv.sparse {
			add(fv.name+"-block", v,
				record(selRank0, sparseData(0, 1, 0, 0, 3, 19)),
				record(selRank1, sparseData(1, 1, 0, 3, 4)),
				record(selRank0, sparseData(0, 1, 0, 0, 3, 19)), // a duplicate after the result
				record(selRank0, sparseData(0, 2, 0, 20)))       // an index outside the block
			add(fv.name+"-two-generations", v,
				record(selRank0, sparseData(0, 0, 0, 1)), record(selRank1, sparseData(1, 0, 0, 1)),
				record(selRank0|selStamp, sparseData(0, 0, 1, 2)), record(selRank1, sparseData(1, 0, 1, 2)),
				record(selRank0, sparseData(0, 0, 0, 1)))
			continue
		}
		add(fv.name+"-block", v,
			record(selRank0, denseData(0, 0, 0, fzToken)),
			record(selRank1, denseData(1, 0, 0, fzToken)),
			record(selRank0, denseData(0, 0, 0, fzToken)), // a retransmission: the stored result is resent
			record(selRank1, denseData(1, 4, 0, fzToken)), // the short last block
			record(selRank0, denseData(0, 4, 0, fzToken)))
		add(fv.name+"-generations", v,
			record(selRank0, denseData(0, 2, 0, fzToken)), record(selRank1, denseData(1, 2, 0, fzToken)),
			record(selRank0, denseData(0, 2, 1, fzToken)), record(selRank1, denseData(1, 2, 1, fzToken)),
			record(selRank1, denseData(1, 2, 0, fzToken)), // stale: the previous generation's result is resent
			record(selRank0, denseData(0, 3, 5, fzToken)), record(selRank0, denseData(0, 3, 6, fzToken)))
	}
	add("strangers", 0,
		record(selStranger, denseData(0, 0, 0, fzToken)), // right token, not a member's address
		record(selOtherPrt, denseData(0, 0, 0, fzToken)), // a member's host, another port
		record(selRank1, denseData(0, 0, 0, fzToken)),    // a member claiming another rank
		record(selRank0, denseData(0, 0, 0, bad)),        // wrong token
		record(selStranger|selStamp, denseData(1, 1, 0, bad)))
	other := denseData(0, 0, 0, fzToken)
	binary.BigEndian.PutUint32(other[wire.OffJob:], fzJob+1)
	add("unknown-job", 0, record(selRank0, other))
	sparseOnDense := sparseData(0, 0, 0, 1)
	add("wrong-kind", 0, record(selRank0, sparseOnDense))
	add("wrong-kind-sparse", 3, record(selRank0, denseData(0, 0, 0, fzToken)))
	add("joins", 1,
		record(selStranger, fixtureJoin(fuzzVariants[1], 0, fzToken)), // rank 0 taken: refused
		record(selRank0, fixtureJoin(fuzzVariants[1], 0, fzToken)),    // a resent join: acked again
		record(selRank0, fixtureJoin(fuzzVariants[0], 0, fzToken)),    // another design: refused
		record(selStranger, fixtureJoin(fuzzVariants[1], 1, bad)),     // wrong token: dropped
		record(selRank1, fixtureJoin(fuzzVariants[1], 5, fzToken)))    // rank beyond the world: refused
	newJob := fixtureJoin(fuzzVariants[0], 0, 99)
	binary.BigEndian.PutUint32(newJob[wire.OffJob:], 1234)
	badBody := fixtureJoin(fuzzVariants[0], 0, fzToken)
	badBody[wire.HeaderLen+4] = 0x80 // an unknown option bit
	add("join-new-job", 0, record(selStranger, newJob), record(selStranger, newJob), record(selRank0, badBody))
	add("leaves", 2,
		record(selStranger, leavePacket(0, fzToken)), record(selRank0, leavePacket(0, bad)), record(selRank0, leavePacket(0, fzToken)),
		record(selRank0, leavePacket(0, fzToken)), record(selRank1, denseData(1, 0, 0, fzToken)),
		record(selRank1, leavePacket(1, fzToken)), record(selRank1, denseData(1, 0, 0, fzToken)))
	add("aborts", 0,
		record(selStranger, abortPacket(0, fzToken)), record(selRank0, abortPacket(0, bad)), record(selRank0, abortPacket(1, fzToken)),
		record(selRank1, denseData(1, 0, 0, fzToken)), record(selRank1, abortPacket(1, fzToken)), // ends the job
		record(selRank0, denseData(0, 0, 0, fzToken)), record(selStranger, denseData(0, 0, 0, fzToken)),
		record(selRank1, abortPacket(1, fzToken)), record(selRank0, fixtureJoin(fuzzVariants[0], 0, fzToken)))
	add("abort-after-a-leave", 2, // rank 0 has left: nobody is told
		record(selRank0, leavePacket(0, fzToken)), record(selRank1, abortPacket(1, fzToken)))
	add("beyond-the-world", 0, // ranks a world of 2 does not have, each from a member's address
		record(selRank0, denseData(2, 0, 0, fzToken)), record(selRank0, denseData(math.MaxUint16, 0, 0, fzToken)),
		record(selRank1, abortPacket(2, fzToken)), record(selRank1, leavePacket(2, fzToken)),
		record(selRank0, leavePacket(math.MaxUint16, fzToken)), record(selRank1, denseData(1, 0, 0, fzToken)))
	pendingLeave := func(rank int, token uint64) []byte {
		h := wire.Header{Type: wire.TypeLeave, Job: 1234, Token: token, Child: uint16(rank)}
		return wire.AppendPacket(nil, &h, nil)
	}
	add("pending-leaves", 0, record(selStranger, newJob), // job 1234 waits for its rank 1
		record(selRank0, pendingLeave(0, 99)),     // rank 0 from another address
		record(selStranger, pendingLeave(1, 99)),  // a rank that has not joined
		record(selStranger, pendingLeave(5, 99)),  // beyond the world
		record(selStranger, pendingLeave(0, bad)), // wrong token
		record(selStranger, pendingLeave(0, 99)),  // rank 0 itself: the job ends
		record(selStranger, pendingLeave(0, 99)))  // and is gone
	withSession := func(p []byte, session uint32) []byte {
		p = bytes.Clone(p)
		binary.BigEndian.PutUint32(p[wire.OffBlock:], session) // a join's Block: its session's id
		return p
	}
	add("restart", 0, // rank 0's process restarts on its address: the job ends, rank 1 is told, and it starts anew
		record(selRank0, denseData(0, 0, 0, fzToken)), record(selRank1, denseData(1, 0, 0, fzToken)),
		record(selRank0, withSession(fixtureJoin(fuzzVariants[0], 0, bad), 81)),        // another token: dropped
		record(selStranger, withSession(fixtureJoin(fuzzVariants[0], 0, fzToken), 82)), // elsewhere, rank 0 in: refused
		record(selRank0, withSession(fixtureJoin(fuzzVariants[0], 0, fzToken), 77)),
		record(selRank0, denseData(0, 0, 0, fzToken)), // its first call: not answered with the old result
		record(selRank1, denseData(1, 1, 0, fzToken)),
		record(selRank1, withSession(fixtureJoin(fuzzVariants[0], 1, fzToken), 78)),
		record(selRank0, denseData(0, 0, 0, fzToken)), record(selRank1, denseData(1, 0, 0, fzToken)))
	alone := withSession(fixtureJoin(fuzzVariants[0], 0, fzToken), 83)
	binary.BigEndian.PutUint16(alone[wire.HeaderLen:], 1) // world 1: the job starts anew and is admitted at once
	add("restart-alone", 0, record(selRank0, alone), record(selRank0, denseData(0, 0, 0, fzToken)))
	add("left-and-back", 0,
		record(selRank1, leavePacket(1, fzToken)),
		record(selRank1, fixtureJoin(fuzzVariants[0], 1, fzToken)),                     // the session that left: refused
		record(selStranger, withSession(fixtureJoin(fuzzVariants[0], 1, fzToken), 79)), // a new one, elsewhere: the job starts anew
		record(selRank0, withSession(fixtureJoin(fuzzVariants[0], 0, fzToken), 80)))
	add("garbage", 0,
		record(selRank0, []byte("not a flare packet")), record(selRank1, nil),
		record(selRank0|selStamp, make([]byte, wire.HeaderLen)),
		record(selRank0, denseData(0, 0, 0, fzToken)[:40]))
	return out
}

// TestFuzzHandleCorpus keeps testdata/fuzz/FuzzHandle in step with
// handleSeeds; go test runs every file there through FuzzHandle.
// Regenerate with go test ./switch -run FuzzHandleCorpus -update.
func TestFuzzHandleCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzHandle")
	for _, s := range handleSeeds() {
		path := filepath.Join(dir, s.name)
		want := fmt.Appendf(nil, "go test fuzz v1\nbyte(%q)\n[]byte(%q)\n", s.variant, s.data)
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale (run with -update)", path)
		}
	}
}

// middleSeeds are the inputs for a middle switch of a tree: blocks its
// two members finish, sent up and answered by the parent; the parent's
// answers to its join; members that claim the other's place; Aborts from
// the child switch, the host and the parent.
func middleSeeds(fv fuzzVariant, v byte) []handleSeed {
	var out []handleSeed
	add := func(name string, recs ...[]byte) {
		out = append(out, handleSeed{fv.name + "-" + name, v, bytes.Join(recs, nil)})
	}
	const bad = 0xbad
	data := func(m int, b, gen uint32) []byte { return asMember(fv, m, denseData(m, b, gen, fzToken)) }
	result := func(b, gen uint32) []byte { return fromParent(wire.TypeResult, denseData(0, b, gen, fzToken)) }
	if fv.sparse {
		data = func(m int, b, gen uint32) []byte { return asMember(fv, m, sparseData(m, b, gen, uint32(m), 3)) }
		result = func(b, gen uint32) []byte { return fromParent(wire.TypeSparse, sparseData(0, b, gen, 0, 1, 3)) }
	}
	parentError := func(code wire.ErrorCode, token uint64) []byte {
		h := wire.Header{Job: fzJob, Token: token, Child: fzChildIndex}
		return wire.AppendError(nil, &h, code, "from the parent")
	}
	add("block",
		record(selRank0, data(0, 1, 0)), record(selRank1, data(1, 1, 0)), // finished here: sent up
		record(selRank1, data(1, 1, 0)),  // a retransmission before the parent's result: the partial goes up again
		record(selParent, result(1, 0)),  // the parent's result, to both members
		record(selRank0, data(0, 1, 0)),  // a retransmission after it: the result is resent
		record(selRank0, result(2, 0)),   // a result from a member: dropped
		record(selParent, data(0, 2, 0)), // the parent's data packet: dropped
		record(selParent, result(3, 0)))  // a result for a block nobody sent
	add("claims",
		record(selRank1, asMember(fv, 0, denseData(0, 0, 0, fzToken))), // the host as the child switch
		record(selRank0, asMember(fv, 1, denseData(1, 0, 0, fzToken))), // the child switch as the host
		record(selRank1, denseData(1, 0, 0, fzToken)),                  // the host as rank 1, which this switch has no place for
		record(selStranger, data(1, 0, 0)), record(selRank1, data(1, 0, bad&0xffff)))
	ack := func(token uint64, pe uint32) []byte {
		h := wire.Header{Type: wire.TypeJoinAck, Job: fzJob, Token: token, Child: fzChildIndex, DType: wire.Float32, Op: wire.OpSum}
		return wire.AppendJoinAck(nil, &h, &wire.JoinAckBody{Window: 1, Algo: wire.AlgoSingle, PacketElems: pe, Blocks: 1})
	}
	add("parent-answers",
		record(selParent, ack(fzToken, 3)),               // a repeated ack: the job was acked
		record(selStranger, ack(fzToken, fzPacketElems)), // an ack not from the parent
		record(selParent, parentError(wire.CodeWaiting, fzToken)),
		record(selParent, parentError(wire.CodeJobMismatch, bad)),
		record(selParent, parentError(wire.CodeJobMismatch, fzToken)), // the job ends here: both members hear it
		record(selRank0, data(0, 0, 0)))
	add("before-the-parent-acks", // the job ends and both join again: the parent has not acked yet
		record(selParent, parentError(wire.CodeJobMismatch, fzToken)),
		record(selRank0, fixtureJoin(fv, 0, fzToken)), record(selRank1, fixtureJoin(fv, 1, fzToken)),
		record(selRank0, data(0, 0, 0)), record(selRank1, data(1, 0, 0)), // sent before their acks
		record(selParent, ack(fzToken, fzPacketElems+1)), // blocks cut otherwise: refused
		record(selRank0, fixtureJoin(fv, 0, fzToken)), record(selRank1, fixtureJoin(fv, 1, fzToken)),
		record(selParent, parentError(wire.CodeWaiting, fzToken)), record(selRank1, leavePacket(0, fzToken)))
	add("parent-aborts",
		record(selParent, parentError(wire.CodeAborted, fzToken)), record(selRank1, data(1, 0, 0)))
	abortFrom := func(m int, rank uint32) []byte {
		p := asMember(fv, m, abortPacket(m, fzToken))
		binary.BigEndian.PutUint32(p[wire.OffBlock:], rank)
		return p
	}
	add("child-aborts", // a rank beyond 16 bits is refused; then a child's rank 3 aborts
		record(selRank0, abortFrom(0, 1<<16)), record(selRank0, abortFrom(0, 3)), record(selRank1, data(1, 0, 0)))
	add("host-aborts", record(selRank1, abortFrom(1, 0)), record(selParent, result(0, 0)))
	pendingJoin, pendingAbort := fixtureJoin(fv, 0, fzToken), abortFrom(0, 2)
	binary.BigEndian.PutUint32(pendingJoin[wire.OffJob:], 1234)
	binary.BigEndian.PutUint32(pendingAbort[wire.OffJob:], 1234)
	restart := fixtureJoin(fv, 1, fzToken)                                     // the host's join
	binary.BigEndian.PutUint32(restart[wire.OffBlock:], 77)                    // a new session
	add("restart", record(selRank1, restart), record(selRank0, data(0, 0, 0))) // the host restarts: the parent hears it
	add("pending-aborts",                                                      // job 1234 waits for the host: its abort is not the parent's business
		record(selRank0, pendingJoin), record(selRank0, pendingAbort))
	add("leaves",
		record(selRank1, asMember(fv, 0, leavePacket(0, fzToken))), // the host as the child switch
		record(selRank1, asMember(fv, 1, leavePacket(1, fzToken))), // the host leaves
		record(selRank0, asMember(fv, 0, leavePacket(0, fzToken))), // and the child switch: the job ends, the parent is told
		record(selParent, result(0, 0)))
	return out
}

// multicastSeeds are the inputs for a switch with a pool of two multicast
// groups: jobs beyond the pool run unicast, a group comes back when its job
// ends and goes to the next, and a job whose members do not all ask for
// multicast gets none.
func multicastSeeds(fv fuzzVariant, v byte) []handleSeed {
	var out []handleSeed
	add := func(name string, recs ...[]byte) {
		out = append(out, handleSeed{fv.name + "-" + name, v, bytes.Join(recs, nil)})
	}
	join := func(m int, job uint32, multicast bool) []byte {
		p := fixtureJoin(fv, m, fzToken)
		binary.BigEndian.PutUint32(p[wire.OffJob:], job)
		if !multicast {
			p[wire.HeaderLen+4] &^= byte(wire.OptMulticast) // the body's options
		}
		return p
	}
	leave := func(m int, job uint32) []byte {
		p := leavePacket(m, fzToken)
		binary.BigEndian.PutUint32(p[wire.OffJob:], job)
		return p
	}
	add("groups-run-out", // the fixture job holds one group: job 11 takes the other, job 12 runs unicast
		record(selStranger, join(0, 11, true)), record(selRank1, join(1, 11, true)),
		record(selStranger, join(0, 12, true)), record(selRank1, join(1, 12, true)),
		record(selStranger, leave(0, 11)), record(selRank1, leave(1, 11)), // job 11's group comes back
		record(selStranger, join(0, 13, true)), record(selRank1, join(1, 13, true))) // and goes to job 13
	add("not-all-ask",
		record(selStranger, join(0, 11, true)), record(selRank1, join(1, 11, false)), // no group
		record(selRank0, join(0, fzJob, false))) // a member of the fixture job joins again without: refused
	add("one-address-two-ranks", // both ranks of job 12 from one socket: each acked as its rank
		record(selRank1, join(0, 12, true)), record(selRank1, join(1, 12, true)))
	return out
}

// registeredSeeds are the inputs for a switch that admits registered jobs
// alone (fzGrants): joins from outside a job's sources, with another token
// or world, of a job not registered, and a rank that leaves and joins
// again from another allowed address or from outside.
func registeredSeeds(fv fuzzVariant, v byte) []handleSeed {
	var out []handleSeed
	add := func(name string, recs ...[]byte) {
		out = append(out, handleSeed{fv.name + "-" + name, v, bytes.Join(recs, nil)})
	}
	join := func(m int, job uint32, token uint64, world uint16) []byte {
		p := fixtureJoin(fv, m, token)
		binary.BigEndian.PutUint32(p[wire.OffJob:], job)
		binary.BigEndian.PutUint16(p[wire.HeaderLen:], world) // the body's world
		return p
	}
	add("refusals",
		record(selStranger, join(0, fzJob, fzToken, 2)), // a source outside the registration
		record(selRank0, join(0, fzJob, 98, 2)),         // another token
		record(selRank0, join(0, fzJob, fzToken, 3)),    // another world
		record(selRank0, join(0, 1234, fzToken, 2)),     // not registered
		record(selRank0, join(0, fzJob+1, 99, 2)))       // job 8 from outside its sources
	add("rejoins",
		record(selRank1, leavePacket(1, fzToken)), record(selStranger, join(1, fzJob, fzToken, 2)), // refused
		record(selOtherPrt, join(1, fzJob, fzToken, 2)), // rank 0's host, another port: an allowed address
		record(selRank0, denseData(0, 0, 0, fzToken)), record(selOtherPrt, denseData(1, 0, 0, fzToken)))
	add("second-job", // job 8, registered from the stranger's address, runs beside
		record(selStranger, join(0, fzJob+1, 99, 2)), record(selStranger, join(1, fzJob+1, 99, 2)))
	return out
}
