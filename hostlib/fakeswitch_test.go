package hostlib

import (
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/wire"
)

// fakeConfig sets up a fakeSwitch.
type fakeConfig struct {
	window      int     // W granted to every host; 0 means 4
	packetElems int     // used when a join asks for 0; 0 means 256
	loss        float64 // fraction of datagrams dropped, each way
	seed        uint64
	refuse      string         // if set, every join is answered with refused-memory and this text
	group       netip.AddrPort // if set, the join-ack names it (results stay unicast)
}

// fakeSwitch is a minimal Flare switch for the host library's tests, over a
// real loopback socket: it admits one job once every rank has joined, sums
// data packets per (generation, block) with a per-child bitmap, multicasts
// a block's result when every rank has contributed, answers a
// retransmission of a finished block with the stored result (unicast), and
// drops a seeded fraction of datagrams both ways. In steady state it does
// not allocate, so the zero-allocation test measures the host alone.
type fakeSwitch struct {
	conn conn.Conn
	cfg  fakeConfig
	rng  *rand.Rand
	job  *fakeJob
	tx   []conn.Datagram
	ntx  int
	done chan struct{}
	txMu sync.Mutex // the writes of run and of inject

	leaves, dropped atomic.Uint64
}

// fakeJob is the one job a fakeSwitch serves.
type fakeJob struct {
	id       uint32
	token    uint64
	world    int
	dt       wire.DType
	op       wire.Op
	elements int
	pe       int
	blocks   int
	fold     elem.Kernel
	members  []netip.AddrPort // by rank; zero until joined
	joined   int
	acked    bool
	gens     [2]fakeGen // by generation parity: two calls overlap at most
}

// fakeGen is the aggregation state of one generation.
type fakeGen struct {
	gen   uint32
	sums  [][]byte
	seen  []uint64 // bitmap of ranks, world <= 64
	count []int
}

func newFakeSwitch(t testing.TB, cfg fakeConfig) *fakeSwitch {
	t.Helper()
	if cfg.window == 0 {
		cfg.window = 4
	}
	if cfg.packetElems == 0 {
		cfg.packetElems = 256
	}
	c, err := conn.ListenUDP("127.0.0.1:0", conn.Config{})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeSwitch{
		conn: c,
		cfg:  cfg,
		rng:  rand.New(rand.NewPCG(cfg.seed, 1)),
		tx:   make([]conn.Datagram, c.BatchSize()),
		done: make(chan struct{}),
	}
	for i := range f.tx {
		f.tx[i].Buf = make([]byte, 0, maxDatagram)
	}
	go f.run()
	t.Cleanup(func() {
		c.Close()
		<-f.done
	})
	return f
}

func (f *fakeSwitch) addr() string { return f.conn.LocalAddr().String() }

func (f *fakeSwitch) run() {
	defer close(f.done)
	msgs := make([]conn.Datagram, f.conn.BatchSize())
	for i := range msgs {
		msgs[i].Buf = make([]byte, maxDatagram)
	}
	for {
		n, err := f.conn.ReadBatch(msgs)
		if err != nil {
			return
		}
		for i := range msgs[:n] {
			if f.lose() {
				continue
			}
			f.handle(msgs[i].Buf[:msgs[i].N], msgs[i].Addr)
		}
		f.flush()
	}
}

// lose decides whether the next datagram is dropped.
func (f *fakeSwitch) lose() bool {
	if f.cfg.loss > 0 && f.rng.Float64() < f.cfg.loss {
		f.dropped.Add(1)
		return true
	}
	return false
}

func (f *fakeSwitch) handle(pkt []byte, from netip.AddrPort) {
	var h wire.Header
	payload, err := h.Unmarshal(pkt)
	if err != nil {
		return
	}
	switch h.Type {
	case wire.TypeJoin:
		var body wire.JoinBody
		if body.Unmarshal(payload) == nil {
			f.join(&h, &body, from)
		}
	case wire.TypeData:
		if j := f.job; j != nil && h.Job == j.id && h.Token == j.token {
			f.data(j, &h, payload, from)
		}
	case wire.TypeLeave:
		f.leaves.Add(1)
	}
}

func (f *fakeSwitch) join(h *wire.Header, body *wire.JoinBody, from netip.AddrPort) {
	if f.cfg.refuse != "" {
		f.send(from, func(b []byte) []byte { return wire.AppendError(b, h, wire.CodeRefusedMemory, f.cfg.refuse) })
		return
	}
	j := f.job
	if j == nil {
		j = f.newJob(h, body)
		f.job = j
	}
	if int(h.Child) >= j.world || h.Job != j.id || h.Token != j.token {
		return
	}
	if !j.members[h.Child].IsValid() {
		j.joined++
	}
	j.members[h.Child] = from
	if j.joined < j.world {
		return
	}
	// The join that completes the job answers everyone; a repeated join
	// (its host did not hear the ack) is answered alone.
	first := !j.acked
	if first {
		j.allocGens()
		j.acked = true
	}
	ack := wire.JoinAckBody{
		Window: uint32(f.cfg.window), Algo: wire.AlgoTree,
		PacketElems: uint32(j.pe), Blocks: uint32(j.blocks), QuotaBuffers: uint32(f.cfg.window * j.world),
		Group: f.cfg.group,
	}
	for r, m := range j.members {
		if first || r == int(h.Child) {
			hh := *h
			hh.Child = uint16(r)
			f.send(m, func(b []byte) []byte { return wire.AppendJoinAck(b, &hh, &ack) })
		}
	}
}

func (f *fakeSwitch) newJob(h *wire.Header, body *wire.JoinBody) *fakeJob {
	pe := int(body.PacketElems)
	if pe == 0 {
		pe = f.cfg.packetElems
	}
	fold, err := elem.KernelFor(h.DType, h.Op)
	if err != nil {
		panic(err) // the tests only join valid jobs
	}
	j := &fakeJob{
		id: h.Job, token: h.Token, world: int(body.World), dt: h.DType, op: h.Op,
		elements: int(body.Elements), pe: pe, fold: fold,
		members: make([]netip.AddrPort, body.World),
	}
	j.blocks = blockCount(j.elements, pe)
	return j
}

// allocGens sizes both generations' buffers, once.
func (j *fakeJob) allocGens() {
	for g := range j.gens {
		s := &j.gens[g]
		s.sums = make([][]byte, j.blocks)
		for b := range s.sums {
			s.sums[b] = make([]byte, j.pe*j.dt.Size())
		}
		s.seen = make([]uint64, j.blocks)
		s.count = make([]int, j.blocks)
	}
}

func (f *fakeSwitch) data(j *fakeJob, h *wire.Header, payload []byte, from netip.AddrPort) {
	b := int(h.Block)
	if b >= j.blocks || int(h.Child) >= j.world {
		return
	}
	n := min(j.pe, j.elements-b*j.pe)
	if int(h.Count) != n {
		return
	}
	g := &j.gens[h.Generation&1]
	switch {
	case h.Generation < g.gen:
		return // a straggler of a call two generations back
	case h.Generation > g.gen:
		g.gen = h.Generation
		clear(g.seen)
		clear(g.count)
	}
	sum := g.sums[b][:len(payload)]
	if g.count[b] == j.world {
		if h.Flags&wire.FlagRetransmit != 0 {
			f.result(h, sum, from, wire.FlagRetransmit)
		}
		return
	}
	bit := uint64(1) << h.Child
	if g.seen[b]&bit != 0 {
		return
	}
	if g.count[b] == 0 {
		copy(sum, payload)
	} else {
		j.fold(sum, payload)
	}
	g.seen[b] |= bit
	g.count[b]++
	if g.count[b] == j.world {
		for _, m := range j.members {
			f.result(h, sum, m, 0)
		}
	}
}

// result sends block h.Block's aggregate sum to one host.
func (f *fakeSwitch) result(h *wire.Header, sum []byte, to netip.AddrPort, flags wire.Flags) {
	r := *h
	r.Type, r.Child, r.Flags = wire.TypeResult, 0, flags
	f.send(to, func(b []byte) []byte { return wire.AppendPacket(b, &r, sum) })
}

// send queues one datagram, built by appendTo, unless the loss drops it.
func (f *fakeSwitch) send(to netip.AddrPort, appendTo func([]byte) []byte) {
	if f.lose() {
		return
	}
	d := &f.tx[f.ntx]
	d.Buf = appendTo(d.Buf[:0])
	d.N, d.Addr = len(d.Buf), to
	f.ntx++
	if f.ntx == len(f.tx) {
		f.flush()
	}
}

func (f *fakeSwitch) flush() {
	if f.ntx > 0 {
		f.txMu.Lock()
		_, _ = f.conn.WriteBatch(f.tx[:f.ntx])
		f.txMu.Unlock()
		f.ntx = 0
	}
}

// inject sends pkt to a host from the switch's socket, as a crafted packet
// from the switch's address (or an attacker spoofing it) would come.
func (f *fakeSwitch) inject(t testing.TB, to netip.AddrPort, pkt []byte) {
	t.Helper()
	f.txMu.Lock()
	defer f.txMu.Unlock()
	if _, err := f.conn.WriteBatch([]conn.Datagram{{Buf: pkt, N: len(pkt), Addr: to}}); err != nil {
		t.Fatal(err)
	}
}
