package swtch

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/wire"
)

// FuzzHandle feeds arbitrary datagrams, from members of an admitted job and
// from strangers, into handle(), the reader's per-datagram entry point, on
// a Switch built by New (no sockets). Each input is a short sequence of
// datagrams (see fuzzRecords) for one of the job designs (fuzzVariants), on
// a fresh switch, so that a failure reproduces from its input alone. For
// every datagram it checks that handle does not panic and that the datagram
//
//   - is accepted for the processing unit, is of the job's kind (Data for a
//     dense job, Sparse for a sparse one), comes from the member address of
//     the rank it names and carries the job's token, and counts no drop; or
//   - is a join or leave, answered or recorded, or counted under one reason; or
//   - is counted under exactly one drop reason, the one its decode error
//     maps to if it does not decode, and makes the switch send nothing but,
//     for an unknown job, an Error saying so to the sender, or, for a join
//     of an earlier protocol version, the Error refusing it, in that
//     version (refuseOldJoin).
//
// Replies go to the join's sender only, and results and resends to members
// only; everything the switch sends decodes, in its receiver's version.
// When the input is done every job ends, and the processing unit's memory
// must be whole again: no buffer or quota leaks, whatever came in.
//
// An accepted packet runs its job's handler at once, on a virtual-time
// hpu.Task in the fuzzing goroutine, and is then given back through the
// switch's done hook, as a core would. Running the unit's core goroutines
// instead makes coverage differ between runs of one input (who sleeps,
// who wakes), and the fuzzer then spends its time minimizing inputs that
// are "interesting" only by chance.
func FuzzHandle(f *testing.F) {
	for _, s := range handleSeeds() {
		f.Add(s.variant, s.data)
	}
	f.Fuzz(func(t *testing.T, variant byte, data []byte) {
		v := fuzzVariants[int(variant)%len(fuzzVariants)]
		fx := newHandleFixture(t, v)
		defer fx.close(t)
		for _, r := range fuzzRecords(v, data) {
			fx.feed(t, r)
		}
	})
}

// The fixture job: two ranks at fixed member addresses.
const (
	fzJob   = 7
	fzToken = 0x5eed_f1a2_e000_0001
)

var (
	fzRank0    = netip.MustParseAddrPort("10.0.0.1:5000")
	fzRank1    = netip.MustParseAddrPort("10.0.0.2:5000")
	fzStranger = netip.MustParseAddrPort("10.0.0.3:5000")
	fzOtherPrt = netip.MustParseAddrPort("10.0.0.1:5001") // rank 0's host, another socket
)

// fuzzVariant is the fixture job's shape, a dense design or a sparse
// storage, and the switch's place: alone, or the middle switch of a tree.
type fuzzVariant struct {
	name    string
	algo    wire.Algo
	buffers uint8
	sparse  bool
	storage wire.Storage
	// middle: the switch has a parent (fzParent, where it is child
	// fzChildIndex), one child switch (member 0, at fzRank0) and one host
	// of its own (member 1, at fzRank1, its rank 0 here).
	middle bool
	// multicast: the members join with wire.OptMulticast, and the switch
	// has a pool of fzGroups groups, fewer than the jobs it may run.
	multicast bool
	// registered: the switch admits only jobs registered over its admin
	// port, and the fixture job is registered from the members' two
	// addresses alone (fzGrant), and job fzJob+1 from the stranger's.
	registered bool
}

// fzGroups is the multicast variants' pool of groups.
var fzGroups = netip.MustParsePrefix("239.255.7.0/31")

// fzChildIndex is the middle switch's index at its parent.
const fzChildIndex = 1

// config sets the switch's place in the tree.
func (v fuzzVariant) config(c *Config) {
	if v.middle {
		c.Parent, c.ChildIndex, c.Children, c.LocalHosts = fzParent.String(), fzChildIndex, 1, 1
	}
	if v.multicast {
		c.Multicast, c.MulticastPort = fzGroups, 7471 // a port: the pool takes one the kernel picks only in Run
	}
}

// sources are the addresses a record's selector picks (fuzzRecords): the
// two members, a stranger, and rank 0's host on another port or, at a
// middle switch, the parent.
func (v fuzzVariant) sources() [4]netip.AddrPort {
	if v.middle {
		return [4]netip.AddrPort{fzRank0, fzRank1, fzStranger, fzParent}
	}
	return [4]netip.AddrPort{fzRank0, fzRank1, fzStranger, fzOtherPrt}
}

// member is the member index of the sender of a packet with header h, as
// Config says it (not as the switch computes it): the child field, but at
// the middle switch a host's rank r (no from-switch flag) is member 1+r,
// and only rank 0 is there. ok is false for a rank the switch has no
// place for.
func (v fuzzVariant) member(h *wire.Header) (index int, ok bool) {
	if !v.middle || h.Flags&wire.FlagFromSwitch != 0 {
		return int(h.Child), true
	}
	return 1 + int(h.Child), h.Child == 0
}

// header is the child field and flags with which member m of the fixture
// job sends.
func (v fuzzVariant) header(m int) (uint16, wire.Flags) {
	switch {
	case !v.middle:
		return uint16(m), 0
	case m == 0:
		return 0, wire.FlagFromSwitch
	default:
		return uint16(m - 1), 0
	}
}

var fuzzVariants = []fuzzVariant{
	{name: "single", algo: wire.AlgoSingle},
	{name: "multi", algo: wire.AlgoMulti, buffers: 2},
	{name: "tree", algo: wire.AlgoTree},
	{name: "sparse-hash", sparse: true, storage: wire.StorageHash},
	{name: "sparse-array", sparse: true, storage: wire.StorageArray},
	{name: "middle-single", algo: wire.AlgoSingle, middle: true},
	{name: "middle-tree", algo: wire.AlgoTree, middle: true},
	{name: "middle-sparse-hash", sparse: true, storage: wire.StorageHash, middle: true},
	{name: "multicast-multi", algo: wire.AlgoMulti, buffers: 2, multicast: true},
	{name: "multicast-sparse-array", sparse: true, storage: wire.StorageArray, multicast: true},
	{name: "registered-single", algo: wire.AlgoSingle, registered: true},
}

// fzGrants are the registered variant's registrations.
var fzGrants = []JobGrant{
	{Job: fzJob, Token: json.Number(strconv.FormatUint(fzToken, 10)), World: 2, MemoryCapBytes: 1 << 30, Sources: []string{"10.0.0.1/32", "10.0.0.2/32"}},
	{Job: fzJob + 1, Token: "99", World: 2, MemoryCapBytes: 1 << 30, Sources: []string{"10.0.0.3/32"}},
}

// Sizes of the fixture job. Packets are small (fzPacketBytes of payload)
// so that inputs stay short and a block completes with one packet per rank.
const (
	fzPacketBytes = 64
	fzElements    = 37 // dense: 5 blocks of 8 float32, the last of 5
	fzPacketElems = 8
	fzSparseElems = 100 // sparse: 5 blocks of 20 indices, 8 pairs a packet
	fzSparseBlock = 20
	fzMaxRecords  = 16
)

// fuzzRecord is one datagram of a FuzzHandle input.
type fuzzRecord struct {
	from  netip.AddrPort
	stamp bool // overwrite the header's job and token with the fixture's
	pkt   []byte
}

// fuzzRecords splits a FuzzHandle input into datagrams. Each record is
//
//	sel (1 byte) | length (2 bytes, big-endian) | datagram (length bytes)
//
// where the datagram is cut short at the end of the input. sel's low two
// bits pick the source (fuzzVariant.sources: rank 0, rank 1, a stranger,
// rank 0's host on another port or the parent); bit 7 stamps the fixture job's id and token into
// the header, so that the fuzzer reaches the handlers without having to
// guess a 64-bit token (unstamped records still try every token it finds).
func fuzzRecords(v fuzzVariant, data []byte) []fuzzRecord {
	sources := v.sources()
	var out []fuzzRecord
	for len(data) >= 3 && len(out) < fzMaxRecords {
		sel, n := data[0], int(binary.BigEndian.Uint16(data[1:]))
		data = data[3:]
		n = min(n, len(data))
		out = append(out, fuzzRecord{from: sources[sel&3], stamp: sel&0x80 != 0, pkt: data[:n]})
		data = data[n:]
	}
	return out
}

// record encodes one fuzzRecord for a seed.
func record(sel byte, pkt []byte) []byte {
	b := []byte{sel, 0, 0}
	binary.BigEndian.PutUint16(b[1:], uint16(len(pkt)))
	return append(b, pkt...)
}

// handleFixture is a Switch with the fixture job admitted through handle()
// and its processing unit running.
type handleFixture struct {
	s      *Switch
	v      fuzzVariant
	vu     *hpu.VirtualUnit // runs accepted packets' handlers and gives them back
	clock  int64            // the arrival time handed to handle
	before []int64          // drop counts before the current datagram
}

func newHandleFixture(t *testing.T, v fuzzVariant) *handleFixture {
	cfg := Config{Listen: "127.0.0.1:0", Admin: "off", PacketBytes: fzPacketBytes, MaxJobs: 4,
		HPU:    hpu.Config{Clusters: 1, CoresPerCluster: 1, L1Bytes: hpu.MinL1Bytes},
		Logger: slog.New(slog.DiscardHandler)}
	v.config(&cfg)
	if v.registered {
		cfg.Admin, cfg.Admission, cfg.AdminSecretFile = "127.0.0.1:0", AdmissionRegistered, writeSecret(t, testSecret+"\n", 0o600)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if v.registered {
		for _, g := range fzGrants {
			mustRegister(t, s, g)
		}
	}
	fx := &handleFixture{s: s, v: v, vu: newFixtureUnit(t, s)}
	for m, from := range []netip.AddrPort{fzRank0, fzRank1} {
		fx.feed(t, fuzzRecord{from: from, pkt: fixtureJoin(v, m, fzToken)})
	}
	if v.middle {
		fx.feed(t, fuzzRecord{from: fzParent, pkt: fx.parentAck(t)})
	}
	if j := s.jobs.get(fzJob); j == nil || j.live.Load() == nil || !j.ackSent || v.multicast && !j.live.Load().group.IsValid() {
		t.Fatalf("%s: the fixture job was not admitted, or without its group", v.name)
	}
	return fx
}

// fixtureJoin is member m's join of the fixture job.
func fixtureJoin(v fuzzVariant, m int, token uint64) []byte {
	child, flags := v.header(m)
	h := wire.Header{Job: fzJob, Token: token, Child: child, Flags: flags, DType: wire.Float32, Op: wire.OpSum}
	world := uint16(2)
	if v.middle {
		world = 1 // the hosts under the child switch, or the one host here
	}
	body := wire.JoinBody{World: world, Algo: v.algo, Buffers: v.buffers, Elements: fzElements, PacketElems: fzPacketElems}
	if v.sparse {
		body = wire.JoinBody{World: world, Options: wire.OptSparse, Storage: v.storage, Elements: fzSparseElems, BlockElems: fzSparseBlock}
		if flags&wire.FlagFromSwitch != 0 {
			body.StreamPackets = 4 // the longest stream of a block the child switch sends up
		}
	}
	if v.multicast {
		body.Options |= wire.OptMulticast
	}
	return wire.AppendJoin(nil, &h, &body)
}

// parentAck is the parent's ack of the middle switch's join of the
// fixture job, cut into the blocks the switch asked for.
func (fx *handleFixture) parentAck(t *testing.T) []byte {
	s := fx.s
	s.jobs.mu.Lock()
	j := s.jobs.get(fzJob)
	if j == nil || !j.upAsked {
		s.jobs.mu.Unlock()
		t.Fatalf("%s: the middle switch did not join its parent", fx.v.name)
	}
	ack := j.ack
	s.jobs.mu.Unlock()
	h := wire.Header{Type: wire.TypeJoinAck, Job: fzJob, Token: fzToken, Child: fzChildIndex, DType: wire.Float32, Op: wire.OpSum}
	ack.Window, ack.Group = 4, netip.AddrPort{}
	return wire.AppendJoinAck(nil, &h, &ack)
}

// feed runs one datagram through handle the way the reader does, runs the
// job's handler on it if handle accepted it and gives the buffer back, and
// checks what became of it.
func (fx *handleFixture) feed(t *testing.T, r fuzzRecord) {
	t.Helper()
	s := fx.s
	ip := s.slot()
	n := copy(ip.buf, r.pkt) // a longer datagram never gets here: the Conn drops it
	if r.stamp && n >= wire.OffToken+8 {
		binary.BigEndian.PutUint32(ip.buf[wire.OffJob:], fzJob)
		binary.BigEndian.PutUint64(ip.buf[wire.OffToken:], fzToken)
	}
	pkt := append([]byte(nil), ip.buf[:n]...)
	var h wire.Header
	payload, decErr := h.Unmarshal(pkt)
	jobBefore := fx.jobState(h.Job)
	fx.before = fx.dropCounts(fx.before[:0])

	d := conn.Datagram{Buf: ip.buf, N: n, Addr: r.from}
	fx.clock += int64(time.Millisecond)
	accepted := s.handle(&d, ip, fx.clock)
	s.readerIn[ip.rd].tally.flush() // as the reader does before it submits
	s.settle()                      // a join that completed a job: its handler is built, its members acked
	if accepted {
		runOnUnit(t, fx.vu, &ip.pkt, fx.clock)
	} else {
		s.inFree[ip.rd].put(ip)
	}
	out := fx.drain(t)
	dropped := fx.dropped(t)
	fromParent := fx.v.middle && r.from == fzParent

	switch {
	case decErr != nil:
		if accepted || dropped != wire.DropReason(decErr) {
			t.Fatalf("undecodable datagram (%v): accepted %v, dropped as %q", decErr, accepted, dropped)
		}
	case accepted:
		fx.checkAccepted(t, r.from, &h, dropped, out)
	case fromParent && (h.Type == wire.TypeJoinAck || h.Type == wire.TypeError):
		fx.checkParentAnswer(t, &h, jobBefore, dropped, out)
	case h.Type == wire.TypeJoin:
		var body wire.JoinBody
		asked := body.Unmarshal(payload) == nil && body.Options&wire.OptMulticast != 0
		fx.checkJoin(t, r.from, &h, asked, jobBefore, dropped, out)
	case h.Type == wire.TypeAbort:
		fx.checkAbort(t, r.from, &h, jobBefore, dropped, out) // abort_fuzz_test.go
	case h.Type == wire.TypeLeave:
		for _, o := range out {
			if !fx.v.middle || o.to != fzParent || o.hdr.Type != wire.TypeLeave {
				t.Fatalf("a leave made the switch send a %v to %v", o.hdr.Type, o.to)
			}
		}
		m, ok := fx.v.member(&h)
		member := ok && jobBefore.member(m, r.from) && h.Token == jobBefore.token
		if dropped == "" && !member {
			t.Fatalf("a leave of job %d rank %d from %v, not a member or with another token, counted no drop", h.Job, h.Child, r.from)
		}
		if dropped != "" && member {
			t.Fatalf("a member's leave was dropped as %q", dropped)
		}
	default:
		if dropped == "" {
			t.Fatalf("%v datagram from %v neither accepted nor dropped", h.Type, r.from)
		}
		if !slices.Contains(switchReasons, dropped) {
			t.Fatalf("decoded %v datagram dropped as %q, a wire reason", h.Type, dropped)
		}
	}
	if dropped != "" && len(out) > 0 {
		checkDropAnswer(t, r.from, pkt, dropped, out)
	}
	if fx.v.registered {
		fx.checkRegistered(t)
	}
	for _, o := range out {
		if fx.v.middle && o.to == fzParent && o.hdr.Type != wire.TypeError &&
			(o.hdr.Child != fzChildIndex || o.hdr.Token != jobBefore.token && o.hdr.Token != fx.jobState(o.hdr.Job).token) {
			t.Fatalf("the switch sent its parent a %v of job %d as child %d (its index there is %d), token ok %v",
				o.hdr.Type, o.hdr.Job, o.hdr.Child, fzChildIndex, o.hdr.Token == jobBefore.token)
		}
	}
}

// checkAccepted checks a datagram handle took for the processing unit: a
// member's packet of the job's kind (Data for a dense job, Sparse for a
// sparse one) from the address of the member it names, with the job's
// token; or, at a middle switch, the parent's result (dense Result,
// sparse Sparse or Spill). What its handler sent went to the job's members
// (all of them, or the sender alone) and, for a member's packet at a
// middle switch, up to the parent.
func (fx *handleFixture) checkAccepted(t *testing.T, from netip.AddrPort, h *wire.Header, dropped string, out []sent) {
	t.Helper()
	if dropped != "" {
		t.Fatalf("accepted datagram also counted as dropped (%q)", dropped)
	}
	j := fx.s.jobs.get(h.Job)
	live := j.live.Load()
	fromParent := fx.v.middle && from == fzParent
	switch {
	case h.Token != j.token:
		t.Fatalf("accepted %v of job %d with another token", h.Type, h.Job)
	case fromParent:
		if live.sparse && h.Type != wire.TypeSparse && h.Type != wire.TypeSpill || !live.sparse && h.Type != wire.TypeResult {
			t.Fatalf("accepted the parent's %v for a job of sparse %v", h.Type, live.sparse)
		}
	default:
		kind := wire.TypeData
		if live.sparse {
			kind = wire.TypeSparse
		}
		m, ok := fx.v.member(h)
		if h.Type != kind || !ok || m >= len(live.addrs) || live.addrs[m] != from {
			t.Fatalf("accepted %v of job %d child %d (flags %v) from %v (the job takes %v; members %v)",
				h.Type, h.Job, h.Child, h.Flags, from, kind, live.addrs)
		}
	}
	for _, o := range out {
		switch {
		case o.multicast != nil && o.multicast != live:
			t.Fatalf("a packet from %v made the switch send to another job's members", from)
		case !o.to.IsValid() && o.multicast == live: // to every member
		case fromParent && slices.Contains(live.addrs, o.to):
		case !fromParent && (o.to == from || fx.v.middle && o.to == fzParent):
		default:
			t.Fatalf("a %v from %v made the switch send a %v to %v", h.Type, from, o.hdr.Type, o.to)
		}
	}
}

// checkParentAnswer checks what became of the parent's join-ack or Error
// at a middle switch: one that does not decode is counted under its wire
// reason and changes nothing; one that does is not counted, and the switch
// sends only acks or Errors to the job's members (with their ranks here)
// and, when the job ends for it, leaves up to the parent.
func (fx *handleFixture) checkParentAnswer(t *testing.T, h *wire.Header, before jobSnapshot, dropped string, out []sent) {
	t.Helper()
	if dropped != "" {
		if dropped != wire.ReasonBody && dropped != wire.ReasonLength || len(out) > 0 {
			t.Fatalf("the parent's %v dropped as %q made the switch send %d packets", h.Type, dropped, len(out))
		}
		return
	}
	for _, o := range out {
		var e wire.ErrorBody
		payload := o.payload
		switch {
		case o.to == fzParent && o.hdr.Type == wire.TypeLeave:
		case memberRank(before, o.to) < 0 || o.hdr.Type != wire.TypeJoinAck && o.hdr.Type != wire.TypeError:
			t.Fatalf("the parent's %v made the switch send a %v to %v, not a member", h.Type, o.hdr.Type, o.to)
		case o.hdr.Type == wire.TypeError && e.Unmarshal(payload) == nil && e.Code == wire.CodeAborted:
			// names the rank that aborted
		case !fx.addressed(before, o.to, o.hdr.Child):
			t.Fatalf("the parent's %v made the switch send %v a %v as child %d, not a member's rank here",
				h.Type, o.to, o.hdr.Type, o.hdr.Child)
		case o.hdr.Type == wire.TypeJoinAck:
			fx.checkAckGroup(t, &o.hdr, payload)
		}
	}
}

// restarts reports whether a join with header h from address from is a
// new session of a rank of the admitted job before: the job's token,
// another session than the rank's, from the rank's address or after the
// rank left.
func (fx *handleFixture) restarts(h *wire.Header, from netip.AddrPort, before jobSnapshot) bool {
	m, ok := fx.v.member(h)
	return ok && before.admitted && before.token == h.Token && m < len(before.members) && h.Block != before.sessions[m] &&
		(before.members[m] == from || !before.members[m].IsValid())
}

// checkAckGroup checks that a join-ack names the group the job's results
// go to, or none when they go to each member.
func (fx *handleFixture) checkAckGroup(t *testing.T, h *wire.Header, payload []byte) netip.AddrPort {
	t.Helper()
	var ack wire.JoinAckBody
	if err := ack.Unmarshal(payload); err != nil {
		t.Fatalf("join ack body: %v", err)
	}
	if g := fx.jobState(h.Job).group; ack.Group != g {
		t.Fatalf("the ack of job %d names group %v; its results go to %v", h.Job, ack.Group, g)
	}
	return ack.Group
}

// addressed reports whether a packet to address to with child field child
// is to a member of j, by the rank it has here (one address may be
// several members).
func (fx *handleFixture) addressed(j jobSnapshot, to netip.AddrPort, child uint16) bool {
	for m, a := range j.members {
		if a == to && fx.rankHere(m) == child {
			return true
		}
	}
	return false
}

// rankHere is the child field with which the switch addresses member m.
func (fx *handleFixture) rankHere(m int) uint16 {
	child, _ := fx.v.header(m)
	return child
}

// checkDropAnswer checks what the switch sent for a dropped datagram pkt:
// at most an Error to the sender alone, naming the unknown job (a host
// whose switch restarted learns it at once), or, to a member of the
// fixture job after it was aborted, the abort, or, for a join of an
// earlier protocol version, the refusal in that version; never anything
// else.
func checkDropAnswer(t *testing.T, from netip.AddrPort, pkt []byte, dropped string, out []sent) {
	t.Helper()
	var old wire.Header
	var e wire.ErrorBody
	if len(out) == 1 && out[0].to == from && out[0].multicast == nil {
		h, payload, err := decodeSent(out[0].pkt)
		if err == nil && h.Type == wire.TypeError && e.Unmarshal(payload) == nil {
			switch {
			case dropped == dropUnknownJob && h.Version == wire.Version &&
				(e.Code == wire.CodeUnknownJob || e.Code == wire.CodeAborted && (from == fzRank0 || from == fzRank1)):
				return
			case dropped == wire.ReasonVersion && old.UnmarshalOldJoin(pkt) == nil &&
				h.Version == old.Version && e.Code == wire.CodeBadRequest:
				return
			}
		}
	}
	t.Fatalf("a datagram from %v dropped as %q made the switch send %d packets, the first %d bytes to %v",
		from, dropped, len(out), len(out[0].pkt), out[0].to)
}

// checkJoin checks what became of a join that decoded: dropped (a bad body,
// or a wrong token for an existing job) with no answer; or answered, errors
// to the sender alone and acks to the job's members; or recorded in a
// pending job with no answer yet.
func (fx *handleFixture) checkJoin(t *testing.T, from netip.AddrPort, h *wire.Header, multicast bool, before jobSnapshot, dropped string, out []sent) {
	t.Helper()
	switch dropped {
	case "", wire.ReasonBody, wire.ReasonLength, dropToken:
	default:
		t.Fatalf("join dropped as %q", dropped)
	}
	abortsUp := 0
	for _, o := range out {
		rh, payload := o.hdr, o.payload
		if o.multicast != nil {
			t.Fatalf("a join's reply is a multicast")
		}
		if o.to == fzParent && rh.Type == wire.TypeAbort {
			abortsUp++
		}
		var e wire.ErrorBody
		switch {
		case fx.v.middle && o.to == fzParent && rh.Type == wire.TypeJoin && rh.Flags&wire.FlagFromSwitch != 0:
			// the job, admitted here, joins the parent
		case fx.v.middle && o.to == fzParent && (rh.Type == wire.TypeAbort || rh.Type == wire.TypeLeave) && before.upAsked:
			// a new session of a rank ended the job: the parent hears it
		case rh.Type == wire.TypeError && o.to != from && e.Unmarshal(payload) == nil && e.Code == wire.CodeAborted:
			// a new session of a rank ended the job: its other members hear it
			if memberRank(before, o.to) < 0 || !fx.restarts(h, from, before) || fx.jobState(h.Job).job == before.job {
				t.Fatalf("a join of job %d child %d (session %#x) from %v made the switch tell %v the job was aborted",
					h.Job, h.Child, h.Block, from, o.to)
			}
		case rh.Type == wire.TypeError && o.to != from:
			// a join that completed a pending job whose admission was refused: every rank hears why
			if memberRank(before, o.to) < 0 || before.admitted || before.token != h.Token || fx.jobState(h.Job).job == before.job ||
				len(o.pkt) > wire.HeaderLen+wire.MaxErrorBodyLen {
				t.Fatalf("error reply of %d bytes to %v for a join from %v: %q", len(o.pkt), o.to, from, o.pkt[wire.HeaderLen:])
			}
		case rh.Type == wire.TypeError:
			if o.to != from || len(o.pkt) > wire.HeaderLen+wire.MaxErrorBodyLen {
				t.Fatalf("error reply of %d bytes to %v for a join from %v: %q", len(o.pkt), o.to, from, o.pkt[wire.HeaderLen:])
			}
			var e wire.ErrorBody
			if err := e.Unmarshal(payload); err != nil {
				t.Fatalf("error reply body: %v", err)
			}
		case rh.Type == wire.TypeJoinAck:
			if !fx.addressed(fx.jobState(rh.Job), o.to, rh.Child) {
				t.Fatalf("join ack for job %d rank %d to %v, not that member", rh.Job, rh.Child, o.to)
			}
			if g := fx.checkAckGroup(t, &rh, payload); g.IsValid() && o.to == from && !multicast {
				t.Fatalf("a join without multicast was answered with an ack naming group %v", g)
			}
		default:
			t.Fatalf("a join was answered with a %v to %v", rh.Type, o.to)
		}
	}
	if fx.v.middle && before.upAsked && fx.restarts(h, from, before) && fx.jobState(h.Job).job != before.job && abortsUp != abortUpCopies {
		t.Fatalf("a new session of a rank ended job %d, which its parent heard %d times, not %d", h.Job, abortsUp, abortUpCopies)
	}
	if m, ok := fx.v.member(h); dropped == "" && ok && before.admitted && before.token == h.Token && m < len(before.members) &&
		!before.members[m].IsValid() && h.Block == before.sessions[m] && (len(out) != 1 || out[0].hdr.Type != wire.TypeError) {
		t.Fatalf("the session that left job %d as rank %d joined again, answered with %d packets, not refused", h.Job, m, len(out))
	}
	m, ok := fx.v.member(h)
	if dropped == "" && len(out) == 0 && !(ok && fx.jobState(h.Job).member(m, from)) {
		t.Fatalf("join of job %d rank %d from %v neither dropped, answered nor recorded", h.Job, h.Child, from)
	}
}

// jobSnapshot is what feed needs of a job before and after a datagram.
type jobSnapshot struct {
	token    uint64
	members  []netip.AddrPort
	upAsked  bool           // joined at the parent
	group    netip.AddrPort // where its results go, if not to each member
	admitted bool
	sessions []uint32 // admitted: each member's session id
	job      *job     // which job it was: one that ends and starts anew is another
}

func (j jobSnapshot) member(m int, a netip.AddrPort) bool {
	return m < len(j.members) && j.members[m] == a
}

func (fx *handleFixture) jobState(id uint32) jobSnapshot {
	s := fx.s
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	j := s.jobs.get(id)
	if j == nil {
		return jobSnapshot{}
	}
	return fx.jobStateLocked(j)
}

// jobStateLocked is jobState of job j; the caller holds the table lock.
func (fx *handleFixture) jobStateLocked(j *job) jobSnapshot {
	members := slices.Clone(j.members)
	if j.pend != nil { // pending: the ranks joined so far
		members = make([]netip.AddrPort, j.world())
		for r, m := range j.pend {
			members[r] = m.addr
		}
	}
	return jobSnapshot{token: j.token, members: members, upAsked: j.upAsked, group: j.group, admitted: j.admitted, sessions: slices.Clone(j.sessions), job: j}
}

// decodeSent decodes a packet the switch sends as its receiver would: in
// this protocol version, or, for the Error that refuses a join of an
// earlier version (refuseOldJoin), in the joiner's version, whose header
// and Error are laid out as this one's. The header keeps the version the
// packet carries.
func decodeSent(pkt []byte) (wire.Header, []byte, error) {
	var h wire.Header
	payload, err := h.Unmarshal(pkt)
	if !errors.Is(err, wire.ErrVersion) || pkt[wire.OffVersion] != wire.Version1 {
		return h, payload, err
	}
	now := slices.Clone(pkt)
	now[wire.OffVersion] = wire.Version
	if payload, err = h.Unmarshal(now); err == nil && h.Type != wire.TypeError {
		err = fmt.Errorf("a %v packet in protocol version %d: only a join's refusal is sent in it", h.Type, wire.Version1)
	}
	h.Version = wire.Version1
	return h, payload, err
}

// sent is one packet the switch queued for the writer.
type sent struct {
	pkt       []byte
	hdr       wire.Header // decoded from pkt
	payload   []byte      // pkt's, after the header
	to        netip.AddrPort
	multicast *liveJob
}

// drain takes what the switch queued for the writer, and checks that every
// packet it sends decodes.
func (fx *handleFixture) drain(t *testing.T) []sent {
	var out []sent
	for {
		select {
		case op := <-fx.s.outs[0]:
			pkt := append([]byte(nil), op.buf...)
			h, payload, err := decodeSent(pkt)
			if err != nil {
				t.Fatalf("the switch sends a packet that does not decode: %v", err)
			}
			out = append(out, sent{pkt: pkt, hdr: h, payload: payload, to: op.to, multicast: op.job})
			op.job = nil
			fx.s.outFree[0].put(op)
		default:
			return out
		}
	}
}

func (fx *handleFixture) dropCounts(dst []int64) []int64 {
	for i := range fx.s.drops.counts {
		dst = append(dst, fx.s.drops.counts[i].Load())
	}
	return dst
}

// dropped returns the reason the last datagram was counted under, "" if
// none, and fails if it was counted more than once.
func (fx *handleFixture) dropped(t *testing.T) string {
	t.Helper()
	reason := ""
	for i, n := range fx.dropCounts(nil) {
		switch d := n - fx.before[i]; {
		case d == 0:
		case d == 1 && reason == "":
			reason = fx.s.drops.reasons[i]
		default:
			t.Fatalf("one datagram counted %d more drops as %q (and %q)", d, fx.s.drops.reasons[i], reason)
		}
	}
	return reason
}

// close ends every job and checks that all of the unit's memory came back.
func (fx *handleFixture) close(t *testing.T) {
	s := fx.s
	// An ended job's teardown takes the lock for a moment on its own
	// goroutine; a panic unwinding from a handler that held it keeps it for
	// ever. Wait a while for the first, then say so, rather than hang
	// until the test binary's timeout.
	for deadline := time.Now().Add(20 * time.Second); !s.jobs.mu.TryLock(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Error("the job table's lock is still held after 20 s")
			return
		}
	}
	for _, j := range s.jobs.all() {
		if n := j.inflight(); n != 0 {
			t.Fatalf("job %d: %d packets accepted and never given back", j.id, n)
		}
		s.endLocked(j, "test")
	}
	s.jobs.mu.Unlock()
	waitTeardowns(t, s)
	for _, o := range fx.drain(t) { // a middle switch tells its parent
		if !fx.v.middle || o.to != fzParent || o.hdr.Type != wire.TypeLeave {
			t.Fatalf("ending the jobs made the switch send a %v to %v", o.hdr.Type, o.to)
		}
	}
	if m := s.unit.Memory(); m.InUse() != 0 || m.Free() != m.Total() {
		t.Fatalf("after every job ended: %d buffers in use, %d of %d free", m.InUse(), m.Free(), m.Total())
	}
	if n := len(s.outs[0]); n != 0 {
		t.Fatalf("%d packets left queued for the writer", n)
	}
	fx.checkNothingHeld(t)
}

// checkRegistered checks that every job in a registered switch's table,
// pending or admitted, is registered, with its registration's token and
// world, and has members only at addresses its registration allows.
func (fx *handleFixture) checkRegistered(t *testing.T) {
	t.Helper()
	s := fx.s
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	for id, j := range s.jobs.all() {
		g := s.registry.grants[id]
		if g == nil || !g.tokenIs(j.token) || j.world() != g.world {
			t.Fatalf("job %d (world %d) is in the table without its registration", id, j.world())
		}
		for _, a := range fx.jobStateLocked(j).members {
			if a.IsValid() && !g.allows(a.Addr()) {
				t.Fatalf("job %d has a member at %v, outside its registered sources", id, a)
			}
		}
	}
}

// checkNothingHeld checks, once every job has ended, that the switch holds
// nothing on their account: no host memory charged to its budget, no
// pending job counted against a source, no multicast group taken, and no
// link counted but the parent's.
func (fx *handleFixture) checkNothingHeld(t *testing.T) {
	t.Helper()
	s := fx.s
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	links := len(s.links.load())
	if s.hasParent() {
		links--
	}
	switch {
	case s.budget.reserved.Load() != 0:
		t.Fatalf("after every job ended, %d bytes of host memory are still charged", s.budget.reserved.Load())
	case s.pending.order.Len() != 0 || len(s.pending.bySource) != 0:
		t.Fatalf("after every job ended, %d pending jobs, %d sources counted", s.pending.order.Len(), len(s.pending.bySource))
	case s.groups != nil && s.groups.inUse.Load() != 0:
		t.Fatalf("after every job ended, %d multicast groups taken", s.groups.inUse.Load())
	case links != 0:
		t.Fatalf("after every job ended, %d links counted but the parent's", links)
	}
}
