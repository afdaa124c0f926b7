package swtch

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/wire"
)

// fanoutFixture is a fan-out relay driven batch by batch, without a socket.
type fanoutFixture struct {
	t     *testing.T
	r     *Relay
	hosts []netip.AddrPort
	hdr   wire.Header
}

func newFanoutFixture(t *testing.T, world, elements int) *fanoutFixture {
	t.Helper()
	return newGroupFanoutFixture(t, world, elements, netip.Prefix{})
}

// newGroupFanoutFixture is newFanoutFixture with a relay given the pool
// groups; with one, the hosts join asking for a group.
func newGroupFanoutFixture(t *testing.T, world, elements int, groups netip.Prefix) *fanoutFixture {
	t.Helper()
	r, err := NewFanoutRelay(Config{Listen: "127.0.0.1:7000", PacketBytes: 64, Multicast: groups})
	if err != nil {
		t.Fatal(err)
	}
	var opts wire.JoinOptions
	if groups.IsValid() {
		opts = wire.OptMulticast
	}
	f := &fanoutFixture{t: t, r: r, hdr: wire.Header{Job: 5, Token: 9, DType: wire.Float32, Op: wire.OpSum}}
	for rank := range world {
		f.hosts = append(f.hosts, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(2000+rank)))
		h := f.hdr
		h.Child = uint16(rank)
		join := wire.AppendJoin(nil, &h, &wire.JoinBody{World: uint16(world), Elements: uint64(elements), Options: opts})
		out := f.batch(conn.Datagram{Buf: join, N: len(join), Addr: f.hosts[rank]})
		if len(out) != 1 || f.typeOf(out[0]) != wire.TypeJoinAck {
			t.Fatalf("join of rank %d: answers %v", rank, f.types(out))
		}
	}
	return f
}

func (f *fanoutFixture) batch(msgs ...conn.Datagram) []conn.Datagram {
	return f.r.batch(msgs, nil)
}

// data is rank's data packet for block of generation gen, with flags.
func (f *fanoutFixture) data(rank int, block, gen uint32, flags wire.Flags) conn.Datagram {
	h := f.hdr
	h.Type, h.Child, h.Block, h.Generation, h.Flags, h.Count = wire.TypeData, uint16(rank), block, gen, flags, 16
	pkt := wire.AppendPacket(nil, &h, make([]byte, 64))
	return conn.Datagram{Buf: pkt, N: len(pkt), Addr: f.hosts[rank]}
}

func (f *fanoutFixture) typeOf(d conn.Datagram) wire.Type {
	var h wire.Header
	if _, err := h.Unmarshal(d.Buf[:d.N]); err != nil {
		f.t.Fatalf("the relay sent a packet that does not decode: %v", err)
	}
	return h.Type
}

func (f *fanoutFixture) types(out []conn.Datagram) []wire.Type {
	var ts []wire.Type
	for _, d := range out {
		ts = append(ts, f.typeOf(d))
	}
	return ts
}

// With a pool, a job whose members ask gets a group, named in every
// join-ack, and each completed block goes there once; the answer to a
// retransmission goes to its sender alone.
func TestFanoutRelayGroup(t *testing.T) {
	const world = 3
	f := newGroupFanoutFixture(t, world, 16*4, netip.MustParsePrefix("239.255.90.0/30"))
	want := netip.MustParseAddrPort("239.255.90.0:7001")
	h := f.hdr
	join := wire.AppendJoin(nil, &h, &wire.JoinBody{World: world, Elements: 64, Options: wire.OptMulticast})
	ack := f.batch(conn.Datagram{Buf: join, N: len(join), Addr: f.hosts[0]}) // a resent join
	var ah wire.Header
	payload, err := ah.Unmarshal(ack[0].Buf[:ack[0].N])
	var body wire.JoinAckBody
	if err != nil || body.Unmarshal(payload) != nil || body.Group != want {
		t.Fatalf("join-ack: %v, group %v, want %v", err, body.Group, want)
	}
	out := f.batch(f.data(0, 1, 1, 0), f.data(1, 1, 1, 0), f.data(2, 1, 1, 0))
	if len(out) != 1 || out[0].Addr != want || f.typeOf(out[0]) != wire.TypeResult {
		t.Fatalf("a completed block: %d datagrams %v, want one result to %v", len(out), out, want)
	}
	out = f.batch(f.data(2, 1, 1, wire.FlagRetransmit))
	if len(out) != 1 || out[0].Addr != f.hosts[2] {
		t.Fatalf("a retransmission: %d datagrams %v, want one to its sender", len(out), out)
	}
}

// A block's result goes to all P members once each of the P ranks sent it,
// and only then; copies, strangers and older generations do not count.
func TestFanoutRelayCounts(t *testing.T) {
	const world = 3
	f := newFanoutFixture(t, world, 16*4) // 4 blocks
	stranger := f.data(2, 0, 1, 0)        // the missing rank's packet, from another address
	stranger.Addr = netip.MustParseAddrPort("127.0.0.1:9999")
	wrongToken := f.data(1, 0, 1, 0)
	wrongToken.Buf[wire.OffToken] ^= 1
	for _, out := range [][]conn.Datagram{
		f.batch(f.data(0, 0, 1, 0), f.data(1, 0, 1, 0)),
		f.batch(f.data(0, 0, 1, wire.FlagRetransmit), stranger, wrongToken), // rank 0 again, and two that do not count
	} {
		if len(out) != 0 {
			t.Fatalf("block 0 answered %v before its third rank", f.types(out))
		}
	}
	out := f.batch(f.data(2, 0, 1, 0))
	if len(out) != world {
		t.Fatalf("the last rank completed block 0 with %d packets, want %d", len(out), world)
	}
	for i, d := range out {
		if f.typeOf(d) != wire.TypeResult || d.Addr != f.hosts[i] {
			t.Errorf("packet %d: %v to %v, want a result to rank %d at %v", i, f.typeOf(d), d.Addr, i, f.hosts[i])
		}
	}
	if out := f.batch(f.data(1, 0, 1, wire.FlagRetransmit)); len(out) != 1 || out[0].Addr != f.hosts[1] {
		t.Errorf("a retransmission of a finished block: %d answers, want its result to the sender alone", len(out))
	}
	if out := f.batch(f.data(0, 0, 0, 0)); len(out) != 0 {
		t.Errorf("a packet of an older generation was answered")
	}
	// The next generation counts afresh; results of several blocks in one
	// batch go out destination-major (all to rank 0, then rank 1, ...).
	var in []conn.Datagram
	for r := range world {
		in = append(in, f.data(r, 1, 2, 0), f.data(r, 2, 2, 0))
	}
	out = f.batch(in...)
	if len(out) != 2*world {
		t.Fatalf("two blocks completed in one batch: %d packets, want %d", len(out), 2*world)
	}
	for i, d := range out {
		if d.Addr != f.hosts[i/2] {
			t.Errorf("packet %d to %v, want rank %d: destination-major", i, d.Addr, i/2)
		}
	}
}

// Joins the relay cannot serve are refused with the reason; two joins in
// one batch each get their own answer.
func TestFanoutRelayJoins(t *testing.T) {
	f := newFanoutFixture(t, 2, 64)
	h := f.hdr
	h.Child = 2
	bad := wire.AppendJoin(nil, &h, &wire.JoinBody{World: 2, Elements: 64})
	other := f.hdr
	other.Job, other.Child = 6, 1
	good := wire.AppendJoin(nil, &other, &wire.JoinBody{World: 2, Elements: 64})
	out := f.batch(conn.Datagram{Buf: bad, N: len(bad), Addr: f.hosts[0]}, conn.Datagram{Buf: good, N: len(good), Addr: f.hosts[1]})
	if ts := f.types(out); len(ts) != 2 || ts[0] != wire.TypeError || ts[1] != wire.TypeJoinAck {
		t.Fatalf("answers %v, want an error and a join-ack", ts)
	}
	var e wire.ErrorBody
	var eh wire.Header
	p, _ := eh.Unmarshal(out[0].Buf[:out[0].N])
	if err := e.Unmarshal(p); err != nil || !strings.Contains(string(e.Text), "rank 2: must be in 0..1") {
		t.Errorf("refusal %q (%v), want it to name the rank and the range", e.Text, err)
	}
	var ah wire.Header
	if _, err := ah.Unmarshal(out[1].Buf[:out[1].N]); err != nil || ah.Job != 6 || ah.Child != 1 {
		t.Errorf("the second join's answer is job %d child %d (%v), want job 6 child 1", ah.Job, ah.Child, err)
	}
}

// The fan-out relay allocates nothing per packet once a job has joined:
// a block's arrivals and its fan-out to every member.
func TestFanoutRelayZeroAllocs(t *testing.T) {
	const world = 4
	f := newFanoutFixture(t, world, 16*8)
	pristine := make([]conn.Datagram, world)
	in := make([]conn.Datagram, world)
	for r := range world {
		pristine[r] = f.data(r, 3, 0, 0)
		in[r] = pristine[r]
		in[r].Buf = make([]byte, len(pristine[r].Buf))
	}
	out := make([]conn.Datagram, 0, 2*world)
	gen := uint32(0)
	run := func() {
		gen++
		for r := range in {
			copy(in[r].Buf, pristine[r].Buf)
			binary.BigEndian.PutUint32(in[r].Buf[wire.OffGeneration:], gen)
		}
		if out = f.r.batch(in, out[:0]); len(out) != world {
			t.Fatalf("generation %d: %d results, want %d", gen, len(out), world)
		}
	}
	run() // warm: the batch's completion list
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Errorf("%v allocations per block of %d packets, want 0", n, world)
	}
}

// One block over generations: each counts its P ranks afresh, whoever
// arrived in the one before; a block past the job's last is no block.
func TestFanoutRelayGenerations(t *testing.T) {
	const world = 3
	f := newFanoutFixture(t, world, 16*4) // 4 blocks
	for gen := uint32(1); gen <= 3; gen++ {
		if out := f.batch(f.data(0, 2, gen, 0), f.data(1, 2, gen, 0)); len(out) != 0 {
			t.Fatalf("generation %d: block 2 answered %v before its third rank", gen, f.types(out))
		}
		if out := f.batch(f.data(2, 2, gen, 0)); len(out) != world {
			t.Fatalf("generation %d: the last rank completed block 2 with %d packets, want %d", gen, len(out), world)
		}
	}
	var past []conn.Datagram
	for r := range world {
		past = append(past, f.data(r, 4, 1, 0))
	}
	if out := f.batch(past...); len(out) != 0 {
		t.Errorf("block 4 of a job of 4 blocks: answered %v", f.types(out))
	}
}

// Ranks past the 64th have bitmap words of their own.
func TestFanoutRelayWideWorld(t *testing.T) {
	const world = 65
	f := newFanoutFixture(t, world, 16)
	var in []conn.Datagram
	for r := range world {
		in = append(in, f.data(r, 0, 1, 0))
	}
	if out := f.batch(in[:world-1]...); len(out) != 0 {
		t.Fatalf("answered %d packets before rank 64", len(out))
	}
	if out := f.batch(in[world-1]); len(out) != world {
		t.Fatalf("rank 64 completed the block with %d packets, want %d", len(out), world)
	}
}

// What joins can make the relay hold is bounded: a job's block table, and
// the jobs it keeps (the oldest makes room); a job's token is the one its
// first join gave.
func TestFanoutRelayBounds(t *testing.T) {
	f := newFanoutFixture(t, 2, 64)
	// join returns the answer's type, and an error's text.
	join := func(job uint32, token uint64, elements uint64) (wire.Type, string) {
		h := f.hdr
		h.Job, h.Token = job, token
		b := wire.AppendJoin(nil, &h, &wire.JoinBody{World: 2, Elements: elements})
		out := f.batch(conn.Datagram{Buf: b, N: len(b), Addr: f.hosts[0]})
		if len(out) != 1 {
			t.Fatalf("job %d: %d answers, want 1", job, len(out))
		}
		var ah wire.Header
		p, err := ah.Unmarshal(out[0].Buf[:out[0].N])
		var e wire.ErrorBody
		if err == nil && ah.Type == wire.TypeError && e.Unmarshal(p) == nil {
			return ah.Type, string(e.Text)
		}
		return ah.Type, ""
	}
	if typ, text := join(f.hdr.Job, f.hdr.Token+1, 64); typ != wire.TypeError || !strings.Contains(text, "another token") {
		t.Errorf("a join of job %d with another token: %v %q, want an error naming the token", f.hdr.Job, typ, text)
	}
	// 64-byte packets of float32 are 16 elements a block; a block of two
	// ranks takes 16 bytes of table: one block past the bound is refused.
	blocks := uint64(fanoutMaxBytes/16 + 1)
	if typ, text := join(100, 1, blocks*16); typ != wire.TypeError || !strings.Contains(text, "bytes of block table") {
		t.Errorf("a job of %d blocks (%d bytes of table, bound %d): %v %q, want an error naming the table", blocks, blocks*16, fanoutMaxBytes, typ, text)
	}
	for job := uint32(1000); job < 1000+2*fanoutMaxJobs; job++ {
		if typ, text := join(job, 1, 64); typ != wire.TypeJoinAck {
			t.Fatalf("job %d: %v %q, want a join-ack", job, typ, text)
		}
		if n := len(f.r.fan.jobs); n > fanoutMaxJobs || len(f.r.fan.order) != n {
			t.Fatalf("after job %d: %d jobs (%d in order), want at most %d", job, n, len(f.r.fan.order), fanoutMaxJobs)
		}
	}
	if f.r.fan.jobs[f.hdr.Job] != nil || f.r.fan.jobs[1000+2*fanoutMaxJobs-1] == nil {
		t.Error("the oldest jobs did not make room for the newest")
	}
}

// Two jobs' blocks completed in one batch: each job's results go to its
// own members only.
func TestFanoutRelayJobsApart(t *testing.T) {
	f := newFanoutFixture(t, 2, 64)
	other := f.hdr
	other.Job = 6
	hosts := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:3000"), netip.MustParseAddrPort("127.0.0.1:3001")}
	var in []conn.Datagram
	for rank, at := range hosts {
		h := other
		h.Child = uint16(rank)
		join := wire.AppendJoin(nil, &h, &wire.JoinBody{World: 2, Elements: 64})
		f.batch(conn.Datagram{Buf: join, N: len(join), Addr: at})
		d := f.data(rank, 0, 1, 0)
		binary.BigEndian.PutUint32(d.Buf[wire.OffJob:], 6)
		d.Addr = at
		in = append(in, f.data(rank, 0, 1, 0), d)
	}
	out := f.batch(in...)
	if len(out) != 4 {
		t.Fatalf("two jobs' blocks completed: %d results, want 2 each", len(out))
	}
	for _, d := range out {
		var h wire.Header
		if _, err := h.Unmarshal(d.Buf[:d.N]); err != nil {
			t.Fatal(err)
		}
		if mine := slices.Contains(hosts, d.Addr); mine != (h.Job == 6) {
			t.Errorf("job %d's result went to %v", h.Job, d.Addr)
		}
	}
}
