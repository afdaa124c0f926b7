package swtch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sync/errgroup"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/wire"
)

// Switch is the daemon: a UDP data port, the job table, the processing
// unit and the egress.
type Switch struct {
	cfg   Config
	log   *slog.Logger
	conns []conn.Conn // the data port's sockets: reader and writer i use conns[i]
	lends []*regions  // reader i's receive regions, nil where its conn cannot lend (region.go)
	steer conn.Steering
	unit  *hpu.HPU
	jobs  *jobTable

	joinLimit rateLimit
	// unknownLimit bounds the answers to data packets of unknown jobs,
	// which anyone can provoke: a few per second tell a host whose switch
	// restarted, and cannot turn the switch into an amplifier.
	unknownLimit rateLimit
	// refusalLimit bounds the answers (and log lines) to refused joins.
	refusalLimit rateLimit
	ioLogLimit   rateLimit // log lines about socket errors
	// Bounded-time jobs get a deadline tick; the ticker sleeps while there
	// are none.
	boundedJobs atomic.Int32
	boundedWake chan struct{}
	drops       dropCounters
	ioErrors    ioErrorCounters
	refusals    *reasonCounters  // refused joins, by refusalReasons
	evictions   *reasonCounters  // pending jobs ended by the limits, by evictionReasons
	budget      memBudget        // host memory of all jobs (Config.MaxMemory)
	pending     pendingJobs      // under jobs.mu
	perReader   []readerCounters // datagrams in and out through each socket of the data port
	// blocks completed by jobs that have ended, and their summed latency
	// (live jobs are read at scrape)
	completedEnded, latencyEnded atomic.Int64

	// Per reader, the free lists its packets recycle through: the packets
	// it receives into, which the cores give back, and its writer's send
	// buffers, which the cores take and the writer gives back. A reader's
	// buffers stay with it and its CPU: through one list for all readers,
	// a packet freed by one reader's cores went to the other reader, and
	// its lines crossed between the CPUs (docs/PERFORMANCE.md).
	inFree    []*freeList[inPacket]
	readerIn  []readerCache // per reader: its end of inFree[rd]
	outFree   []*freeList[outPacket]
	outs      []chan *outPacket // writer i's queue of runs; control packets go to writer 0
	sends     []sendLane        // per reader: its socket's send lock, and the reader's own sender (Config.SharedCPUs)
	cores     [][]coreLane      // per core, per reader: its emits not yet handed on (EmitFrom, Flush)
	wg        sync.WaitGroup    // job teardown goroutines
	admitting sync.WaitGroup    // handlers being built (build)
	bigBuilds chan struct{}     // one large handler built at a time (bigBuild)
	ready     chan struct{}
	admin     net.Addr
	cap       *capture // nil unless --pcap

	parent netip.AddrPort // Config.Parent; invalid at the root or a lone switch
	links  linkTable      // per-peer traffic counters
	groups *groupPool     // Config.Multicast; nil without; under the table lock
	aborts abortLog       // jobs a member aborted lately (abort.go)

	registry *registry // admission mode, admin secret, registered jobs
}

// inPacket is a received datagram as an HPU packet, without a copy: its
// bytes are lent from the reader's receive region (readLent), or, where
// the conn cannot lend, it is the receive buffer the reader swaps out of
// its batch for a fresh one.
type inPacket struct {
	buf    []byte    // the packet's bytes, unless they are lent from a region
	region *inRegion // the region they are lent from, held until done
	pkt    hpu.Packet
	job    *job     // counted in its inflight until done
	live   *liveJob // the job as admitted: where the handler's emits go
	rd     int      // the reader that took it: its results leave through that reader's writer
}

// readerCounters count one socket's datagrams, each on its own cache
// line: a reader and a writer add to them once per batch, on their own CPU.
type readerCounters struct {
	rx, tx atomic.Int64
	_      [48]byte
}

// packets is the datagrams received and sent on the data port so far.
func (s *Switch) packets() (rx, tx int64) {
	for i := range s.perReader {
		rx += s.perReader[i].rx.Load()
		tx += s.perReader[i].tx.Load()
	}
	return rx, tx
}

// outPacket is one encoded packet on its way to one or more addresses.
// Packets handed to a writer together are chained by next: a writer's
// channel carries the first of each run.
type outPacket struct {
	buf  []byte
	tail []byte         // a kept payload, sent after buf (EmitKeptFrom); nil once sent
	job  *liveJob       // multicast to the job's members when to is invalid
	to   netip.AddrPort // unicast destination
	next *outPacket
}

// outRun is a chain of outPackets for one writer, collected on a core.

// New checks cfg and builds the daemon; Run starts it.
func New(cfg Config) (*Switch, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	reg, err := newRegistry(cfg)
	if err != nil {
		return nil, err
	}
	s := &Switch{cfg: cfg, log: cfg.Logger, jobs: newJobTable(), drops: newDropCounters(), ioErrors: newIOErrorCounters(), refusals: newReasonCounters("refusal", refusalReasons), evictions: newReasonCounters("eviction", evictionReasons),
		outs: make([]chan *outPacket, cfg.Readers), perReader: make([]readerCounters, cfg.Readers), bigBuilds: make(chan struct{}, 1), ready: make(chan struct{}), boundedWake: make(chan struct{}, 1), registry: reg}
	s.budget.limit = cfg.MaxMemory
	s.groups = newGroupPool(cfg.Multicast, cfg.MulticastPort)
	s.joinLimit = rateLimit{rate: float64(cfg.JoinRate), tokens: float64(cfg.JoinRate), last: time.Now()}
	s.unknownLimit = rateLimit{rate: unknownJobReplies, tokens: unknownJobReplies, last: time.Now()}
	s.refusalLimit = rateLimit{rate: refusalReplies, tokens: refusalReplies, last: time.Now()}
	s.ioLogLimit = rateLimit{rate: 1, tokens: 1, last: time.Now()}
	for i := range s.outs {
		s.outs[i] = make(chan *outPacket, writerQueue)
	}
	cores := cfg.HPU.Clusters * cfg.HPU.CoresPerCluster
	// In flight at once of one reader's packets: what the clusters'
	// queues (all of them, at worst) and its receive batch hold; what its
	// writer's channel and batch hold, and one packet per core blocked on
	// a full channel; and what its cache and the cores' hold.
	s.inFree = make([]*freeList[inPacket], cfg.Readers)
	s.outFree = make([]*freeList[outPacket], cfg.Readers)
	senders := 1 // of a reader's send buffers: its writer's batch, and its own (sendOwn)
	if cfg.SharedCPUs {
		senders = 2
	}
	for rd := range cfg.Readers {
		s.inFree[rd] = newFreeList(cfg.HPU.Clusters*cfg.HPU.QueueDepth+conn.MaxBatchSize+(1+cores)*freeBatch, func() *inPacket {
			ip := &inPacket{rd: rd} // buf: only a reader that does not lend needs one (slot)
			ip.pkt.Ref = ip
			return ip
		})
		s.outFree[rd] = newFreeList(writerQueue+senders*(writerHold+coreRun)+cores*(coreRun+freeBatch), func() *outPacket {
			return &outPacket{buf: make([]byte, 0, cfg.Socket.MaxDatagram)}
		})
	}
	s.cores = make([][]coreLane, cores)
	for i := range s.cores {
		s.cores[i] = make([]coreLane, cfg.Readers)
		for rd := range s.cores[i] {
			s.cores[i][rd] = coreLane{out: s.outFree[rd].cache(), freed: s.inFree[rd].cache()}
		}
	}
	s.readerIn = make([]readerCache, cfg.Readers)
	s.links.readers = cfg.Readers
	for rd := range s.readerIn {
		s.readerIn[rd].in = s.inFree[rd].cache()
	}
	s.sends = make([]sendLane, cfg.Readers)
	if cfg.SharedCPUs {
		for rd := range s.sends {
			s.sends[rd].own, s.sends[rd].run = s.newSender(rd), s.newSender(rd)
		}
	}
	unit, err := hpu.New(cfg.HPU, s, s.done)
	if err != nil {
		return nil, err
	}
	s.unit = unit
	for rd := range s.readerIn {
		s.readerIn[rd].sub = unit.NewSubmitter()
	}
	if cfg.Parent != "" {
		s.parent = netip.MustParseAddrPort(cfg.Parent) // Validate parsed it
		s.links.ref(linkParent, s.parent)
	}
	return s, nil
}

// Addr is the data port's address once Run has bound it (Ready closed).
func (s *Switch) Addr() netip.AddrPort { return s.conns[0].LocalAddr() }

// Readers is the number of sockets of the data port, each with its reader
// and writer (Config.Readers, defaults applied).
func (s *Switch) Readers() int { return s.cfg.Readers }

// Steering is how the data port's sockets share the datagrams: by block id
// (conn.SteerKey), or by sender (conn.SteerFlow) where the kernel could
// not take the steering program. Conns given in Config.Conn or
// Config.Conns steer as they were made; the switch reports SteerKey for
// them. Valid once Ready is closed.
func (s *Switch) Steering() conn.Steering { return s.steer }

// MulticastPort is the port of the multicast groups (Config.Multicast),
// which the switch holds on its box while it runs; 0 without groups.
// Valid once Ready is closed.
func (s *Switch) MulticastPort() int {
	if s.groups == nil {
		return 0
	}
	return int(s.groups.port)
}

// AdminAddr is the admin HTTP address once bound, or nil.
func (s *Switch) AdminAddr() net.Addr { return s.admin }

// Ready is closed once the sockets are bound.
func (s *Switch) Ready() <-chan struct{} { return s.ready }

// listen sets the data port's sockets: Config.Conns, Config.Conn, or
// Config.Readers UDP sockets on Config.Listen steered by block id.
func (s *Switch) listen() error {
	s.steer = conn.SteerKey
	switch {
	case len(s.cfg.Conns) > 0:
		s.conns = s.cfg.Conns
		return nil
	case s.cfg.Conn != nil:
		s.conns = []conn.Conn{s.cfg.Conn}
		return nil
	}
	cs, steer, err := conn.ListenUDPGroup(s.cfg.Listen, s.cfg.Socket, DataPortGroup(s.cfg.Readers, s.cfg.SteerRun))
	if err != nil {
		return fmt.Errorf("Config.Listen = %s: %w", s.cfg.Listen, err)
	}
	s.conns, s.steer = cs, steer
	if err := s.groups.hold(); err != nil {
		s.closeConns()
		return multicastPortError(&s.cfg, err)
	}
	return nil
}

// multicastPortError is the error of a multicast port the switch or
// relay could not hold.
func multicastPortError(cfg *Config, err error) error {
	return fmt.Errorf("%s = %d, the multicast groups' port, is taken on this box: choose a free one: %w", cfg.setting("MulticastPort"), cfg.MulticastPort, err)
}

// DataPortGroup is how a data port of n sockets spreads the datagrams: the
// per-block packets (data, result, sparse, spill: types 4..7) by block id
// in runs of run blocks (Config.SteerRun, a power of two), so that a
// block's P packets meet on one reader and its result leaves through that
// reader's writer; every other packet (join, leave, abort, the parent's
// acks and errors) on socket 0, where one sender's control packets keep
// their order (a join repeated just before an abort must not be handled
// after it). Tests make a conn.MemNetwork group with it.
func DataPortGroup(n, run int) conn.GroupConfig {
	return conn.GroupConfig{Sockets: n, ByKey: true, KeyOffset: wire.OffBlock, KeyShift: bits.TrailingZeros(uint(max(run, 1))),
		Only: &conn.ByteRange{Offset: wire.OffType, Min: byte(wire.TypeData), Max: byte(wire.TypeSpill)}}
}

// closeConns closes the data port's sockets, which unblocks the readers,
// and gives the multicast groups' port back.
func (s *Switch) closeConns() error {
	s.groups.release()
	var first error
	for _, c := range s.conns {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Run binds the ports and serves until ctx is done, then stops reading,
// lets queued packets run, flushes the egress and returns.
func (s *Switch) Run(ctx context.Context) error {
	if err := s.listen(); err != nil {
		return err
	}
	var err error
	if s.cfg.PcapPath != "" {
		if s.cap, err = openCapture(s.cfg.PcapPath, s.cfg.PcapMax, s.Addr(), s.log.Warn); err != nil {
			s.closeConns()
			return fmt.Errorf("Config.PcapPath = %s: %w", s.cfg.PcapPath, err)
		}
	}
	var adminSrv *adminServer
	if s.cfg.Admin != "off" {
		if adminSrv, err = s.startAdmin(); err != nil {
			s.closeConns()
			return fmt.Errorf("Config.Admin = %s: %w", s.cfg.Admin, err)
		}
		s.admin = adminSrv.addr
	}
	s.lends = make([]*regions, len(s.conns))
	for i, c := range s.conns {
		s.lends[i] = newRegions(c, s.cfg.regions)
	}
	off := s.conns[0].Offload()
	admin := s.cfg.Admin // "off", or the address it bound: a port the kernel picked where it asked for 0
	if s.admin != nil {
		admin = s.admin.String()
	}
	s.log.Info("switch listening", "data", s.Addr(), "admin", admin, "clusters", s.cfg.HPU.Clusters,
		"cores", s.cfg.HPU.CoresPerCluster, "l1", s.cfg.HPU.L1Bytes, "packet", s.cfg.PacketBytes, "max_memory", s.cfg.MaxMemory,
		"readers", len(s.conns), "steering", s.steer.String(), "steer_run", s.cfg.SteerRun, "gso", off.GSO, "gro", off.GRO)
	if s.groups != nil {
		s.log.Info("multicast results", "groups", s.cfg.Multicast, "jobs", len(s.groups.used), "port", s.groups.port, "interface", s.cfg.Socket.MulticastInterface)
	}
	close(s.ready)

	unitCtx, stopUnit := context.WithCancel(context.Background())
	unitDone := make(chan struct{})
	go func() { s.unit.Run(unitCtx); close(unitDone) }()
	var writers sync.WaitGroup
	for i := range s.outs {
		writers.Add(1)
		go func() { defer writers.Done(); s.writer(i) }()
	}

	g, gctx := errgroup.WithContext(ctx)
	for i := range s.conns {
		g.Go(func() error { return s.reader(gctx, i) })
	}
	g.Go(func() error { s.reaper(gctx); return nil })
	g.Go(func() error { s.expirer(gctx); return nil })
	if s.hasParent() {
		g.Go(func() error { s.uplinker(gctx); return nil })
	}
	g.Go(func() error {
		<-gctx.Done()
		return s.closeConns() // unblocks the readers
	})
	err = g.Wait()
	// The admin port closes first: once it has, no request (a DELETE that
	// tells a job's members) can queue a packet while the egress drains.
	if adminSrv != nil {
		adminSrv.close()
	}
	// Drain: the readers have stopped; handlers being built finish (and ack
	// their members), queued packets run, their results go out.
	s.settle()
	stopUnit()
	<-unitDone
	for _, out := range s.outs {
		close(out)
	}
	writers.Wait()
	if s.cap != nil {
		if cerr := s.cap.close(); err == nil {
			err = cerr
		}
	}
	rx, tx := s.packets()
	s.log.Info("switch stopped", "rx_packets", rx, "tx_packets", tx)
	if errors.Is(err, net.ErrClosed) || errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

func (s *Switch) reaper(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s.reap(now)
		}
	}
}

// expireEvery is the period of bounded-time jobs' deadline tick: a block
// is released at most this late after its deadline.
const expireEvery = time.Millisecond

// expirer submits each bounded-time job's Expire handler to the processing
// unit every expireEvery, with the time in the packet's Arrival, so that the
// releasing runs on a core like every handler. It sleeps while no such job
// exists. A tick that finds the unit full is skipped; the next comes soon.
func (s *Switch) expirer(ctx context.Context) {
	var t *time.Ticker
	for {
		if s.boundedJobs.Load() == 0 {
			if t != nil {
				t.Stop()
				t = nil
			}
			select {
			case <-ctx.Done():
				return
			case <-s.boundedWake:
			}
			continue
		}
		if t == nil {
			t = time.NewTicker(expireEvery)
		}
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case now := <-t.C:
			for _, j := range s.jobs.all() {
				s.tick(j, now)
			}
		}
	}
}

// tick submits job j's deadline handler, if it has one.
func (s *Switch) tick(j *job, now time.Time) {
	live := j.live.Load()
	if live == nil || live.expire == nil {
		return
	}
	if !j.enter(0) {
		return // ending
	}
	ip := s.inFree[0].get()
	ip.pkt.Hdr = wire.Header{Job: j.id, Block: uint32(now.UnixNano() / int64(expireEvery))} // spread over clusters
	ip.pkt.Handler, ip.pkt.Arrival, ip.pkt.Payload, ip.job, ip.live, ip.rd = live.expire, now.UnixNano(), nil, j, live, 0
	if s.unit.Submit(&ip.pkt) != nil {
		s.recycle(&ip.pkt)
	}
}

// readerCache is a reader's end of the received packets' free list, its
// tally of the batch it is handling, its last job look-up and its way into
// the processing unit, on lines of their own: its fields take at most 128
// bytes and it is padded to 192, so that in a slice of them, however it
// is aligned, no two readers' fields share a cache line.
type readerCache struct {
	in    freeCache[inPacket]
	tally jobTally
	jobs  jobLookup
	sub   *hpu.Submitter
	_     [192 - unsafe.Sizeof(freeCache[inPacket]{}) - unsafe.Sizeof(jobTally{}) - unsafe.Sizeof(jobLookup{}) - unsafe.Sizeof((*hpu.Submitter)(nil))]byte
}

// reader rd receives batches on its socket and dispatches each datagram:
// data to the HPU, joins and leaves to the control path, everything else
// dropped and counted. The data packets of one batch go to the processing
// unit together, so each core is woken once per batch. The reader never
// blocks on anything but the socket and, for back pressure, a full
// processing unit or, lending, regions all still held by its packets.
// Readers share the job table and the unit; each marks
// its packets with rd, so that their results leave through its writer.
func (s *Switch) reader(ctx context.Context, rd int) error {
	c := s.conns[rd]
	if rd < len(s.lends) && s.lends[rd] != nil { // Run made them
		return s.readLent(ctx, rd, s.lends[rd])
	}
	n := c.BatchSize()
	msgs := make([]conn.Datagram, n)
	slots := make([]*inPacket, n)
	batch := make([]*hpu.Packet, 0, n)
	free := &s.readerIn[rd].in
	for i := range msgs {
		slots[i] = s.withBuf(free.get())
		msgs[i].Buf = slots[i].buf
	}
	var retry readRetry
	for {
		k, err := c.ReadBatch(msgs)
		if err != nil {
			if s.receiveFailed(ctx, &retry, err) {
				return nil
			}
			continue
		}
		retry.ok()
		s.received(rd, msgs[:k])
		now := time.Now().UnixNano()
		for i := 0; i < k; i++ {
			slots[i].rd = rd // the reader's counts of the packet's job
			if s.handle(&msgs[i], slots[i], now) {
				batch = append(batch, &slots[i].pkt)
				slots[i] = s.withBuf(free.get())
				msgs[i].Buf = slots[i].buf
			}
		}
		s.readerIn[rd].tally.flush()
		batch = s.submit(ctx, rd, batch)
		s.sendOwn(rd)
	}
}

// withBuf gives ip a receive buffer if it has none, for a reader that
// receives into packet buffers; a reader that lends takes them bare
// (readLent).
func (s *Switch) withBuf(ip *inPacket) *inPacket {
	if ip.buf == nil {
		ip.buf = make([]byte, s.cfg.Socket.MaxDatagram)
	}
	return ip
}

// readLent is reader rd where its conn lends datagrams from a region
// (region.go): each data packet is handed to the unit in place, and holds
// its region until its handler returns.
func (s *Switch) readLent(ctx context.Context, rd int, g *regions) error {
	batch := make([]*hpu.Packet, 0, len(g.msgs))
	free := &s.readerIn[rd].in
	var spare *inPacket // taken for a datagram handle refused: the next one's
	var retry readRetry
	for {
		r, k, err := g.read(ctx)
		if err != nil {
			if s.receiveFailed(ctx, &retry, err) {
				return nil
			}
			continue
		}
		retry.ok()
		msgs := g.msgs[:k]
		s.received(rd, msgs)
		now := time.Now().UnixNano()
		lent := int32(0)
		for i := range msgs {
			if spare == nil {
				spare = free.get()
			}
			spare.rd = rd // the reader's counts of the packet's job
			if !s.handle(&msgs[i], spare, now) {
				continue
			}
			ip := spare
			spare = nil
			ip.region = r
			lent++
			batch = append(batch, &ip.pkt)
		}
		r.refs.Add(lent) // before any of them can run and release
		s.readerIn[rd].tally.flush()
		batch = s.submit(ctx, rd, batch)
		r.release()
		s.sendOwn(rd)
	}
}

// receiveFailed counts and logs a reader's receive error, waits out the
// retry's backoff, and reports whether the reader should stop (the socket
// closed or ctx ended).
func (s *Switch) receiveFailed(ctx context.Context, retry *readRetry, err error) (stop bool) {
	if retry.failed(ctx, err) {
		return true
	}
	s.ioErrors.add(dirRx, err)
	s.logIOError("receive", err, retry.consecutive)
	return false
}

// received counts a batch from reader rd and captures it.
func (s *Switch) received(rd int, msgs []conn.Datagram) {
	s.perReader[rd].rx.Add(int64(len(msgs)))
	s.links.countRx(rd, msgs)
	if s.cap != nil {
		s.cap.record(msgs, true)
	}
}

// submit hands reader rd's batch of data packets to the processing unit,
// gives back what a stopping unit refused, and returns the batch emptied.
func (s *Switch) submit(ctx context.Context, rd int, batch []*hpu.Packet) []*hpu.Packet {
	sent, err := s.readerIn[rd].sub.SubmitBatch(ctx, batch)
	if err != nil {
		for _, p := range batch[sent:] {
			s.drops.add(dropShutdown)
			s.recycle(p)
		}
	}
	clear(batch)
	return batch[:0]
}

// handle processes one datagram. It reports whether ip is ready for the
// processing unit (the caller submits it and replaces the buffer).
func (s *Switch) handle(d *conn.Datagram, ip *inPacket, now int64) bool {
	p := &ip.pkt
	payload, err := p.Hdr.Unmarshal(d.Buf[:d.N])
	if err != nil {
		s.drops.addWire(err)
		if err == wire.ErrVersion {
			s.refuseOldJoin(d.Addr, d.Buf[:d.N])
		}
		return false
	}
	fromParent := s.hasParent() && d.Addr == s.parent
	switch p.Hdr.Type {
	case wire.TypeData, wire.TypeSparse:
	case wire.TypeResult, wire.TypeSpill: // a parent's result or spill, for this switch's members
		if !fromParent {
			s.drops.add(dropUnexpected)
			return false
		}
	case wire.TypeJoinAck, wire.TypeError:
		if !fromParent {
			s.drops.add(dropUnexpected)
			return false
		}
		s.fromParent(&p.Hdr, payload)
		return false
	case wire.TypeJoin:
		s.control(d.Addr, &p.Hdr, payload)
		return false
	case wire.TypeLeave:
		s.leave(d.Addr, &p.Hdr)
		return false
	case wire.TypeAbort:
		s.abort(d.Addr, &p.Hdr, payload)
		return false
	default:
		s.drops.add(dropUnexpected)
		return false
	}
	j := s.readerIn[ip.rd].jobs.get(s.jobs, p.Hdr.Job)
	if j == nil {
		s.drops.add(dropUnknownJob)
		if !s.answerAborted(d.Addr, &p.Hdr) {
			s.answerUnknown(d.Addr, &p.Hdr)
		}
		return false
	}
	return s.accept(j, d, ip, payload, fromParent, now)
}

// accept runs the member checks of a data packet of job j and readies it
// for the processing unit.
func (s *Switch) accept(j *job, d *conn.Datagram, ip *inPacket, payload []byte, fromParent bool, now int64) bool {
	p := &ip.pkt
	if !fromParent {
		member, ok := s.memberIndex(&p.Hdr)
		if !ok {
			s.drops.add(dropNotMember)
			return false
		}
		p.Hdr.Child = member // from here on the member index: the handlers' bitmaps count members
	}
	live := j.live.Load()
	switch {
	case p.Hdr.Token != j.token:
		s.drops.add(dropToken)
		return false
	case live == nil:
		s.drops.add(dropNotAdmitted)
		return false
	case fromParent: // a result on its way down: dense Result, sparse Sparse or Spill
		if live.sparse == (p.Hdr.Type == wire.TypeResult) || p.Hdr.Type == wire.TypeData {
			s.drops.add(dropUnexpected)
			return false
		}
	case int(p.Hdr.Child) >= len(live.addrs) || live.addrs[p.Hdr.Child] != d.Addr:
		s.drops.add(dropNotMember)
		return false
	case live.sparse != (p.Hdr.Type == wire.TypeSparse):
		s.drops.add(dropUnexpected)
		return false
	}
	if !s.readerIn[ip.rd].tally.enter(j, ip.rd, now) {
		s.drops.add(dropUnknownJob) // it ended after the lookup
		return false
	}
	p.Payload = payload
	p.Handler = live.handler
	if fromParent && live.sparse {
		p.Handler = live.down
	}
	p.Arrival = now
	ip.job, ip.live = j, live
	return true
}

// unknownJobReplies is how many unknown-job answers the switch sends per
// second, all senders together; refusalReplies the same for refused joins
// (a job's ranks refused together all hear why; a flood does not).
const (
	unknownJobReplies = 20
	refusalReplies    = 200
)

// answerUnknown tells the sender of a data packet that the switch has no
// such job: after a restart (or once the job ended) its hosts learn it at
// their next packet instead of at their timeout, and Join again. The
// answer echoes the packet's header, so it reaches the call that sent it;
// it is about 100 bytes and rate-limited, so a stranger gains nothing by
// provoking it.
func (s *Switch) answerUnknown(to netip.AddrPort, h *wire.Header) {
	if !s.unknownLimit.allow(time.Now()) {
		return
	}
	reply := *h
	s.send(to, func(b []byte) []byte {
		return wire.AppendError(b, &reply, wire.CodeUnknownJob, "no such job here: the switch restarted or the job ended; join again")
	})
}

// refuseOldJoin answers a join of an earlier protocol version, which the
// decoder dropped (counted under version), with a bad-request Error in the
// joiner's own version, whose Error layout and codes are this one's: a
// host or child switch that was not upgraded fails at once, told both
// versions, instead of at its join timeout. Other packets of an old
// version get no answer. The answer is rate-limited with the other
// refusals.
func (s *Switch) refuseOldJoin(from netip.AddrPort, pkt []byte) {
	var h wire.Header
	if h.UnmarshalOldJoin(pkt) != nil {
		return
	}
	s.refusals.add(refusalVersion)
	if !s.refusalLimit.allow(time.Now()) {
		return
	}
	who := fmt.Sprintf("rank %d", h.Child)
	if h.Flags&wire.FlagFromSwitch != 0 {
		who = fmt.Sprintf("child switch %d", h.Child)
	}
	msg := fmt.Sprintf("job %d: %s joined with protocol version %d, but this switch speaks version %d, whose join body differs: run the same flare release on hosts and switches",
		h.Job, who, h.Version, wire.Version)
	s.log.Warn("join refused", "job", h.Job, "rank", h.Child, "from", from, "error", msg)
	reply := wire.Header{Version: h.Version, Type: wire.TypeError, Job: h.Job, Token: h.Token, Child: h.Child}
	s.send(from, func(b []byte) []byte { return wire.AppendError(b, &reply, wire.CodeBadRequest, msg) })
}

// done is the HPU's hook after a packet's handler, on core `core`: the
// packet goes back to the core's cache, and what it held to the core's
// refs, which Flush empties.
func (s *Switch) done(p *hpu.Packet, core int) {
	l := &s.cores[core][p.Ref.(*inPacket).rd]
	l.freed.put(s.detach(p, &l.held))
}

// recycle gives a packet the unit did not take back to its reader's free
// list, and what it held back at once.
func (s *Switch) recycle(p *hpu.Packet) {
	var r heldRefs
	ip := s.detach(p, &r)
	r.flush()
	s.inFree[ip.rd].put(ip)
}

// detach hands what packet p held (its job's count in flight, its region)
// to r and returns p ready for the free list.
func (s *Switch) detach(p *hpu.Packet, r *heldRefs) *inPacket {
	ip := p.Ref.(*inPacket)
	r.drop(&ip.job.per[ip.rd], ip.region)
	ip.job, ip.live, ip.region = nil, nil, nil
	p.Handler, p.Payload = nil, nil
	return ip
}

// control answers a join: an ack to every member once the job is admitted
// (and to a member that joins again), or an error.
func (s *Switch) control(from netip.AddrPort, h *wire.Header, payload []byte) {
	var body wire.JoinBody
	if err := body.Unmarshal(payload); err != nil {
		s.drops.addWire(err)
		return
	}
	// A child switch's join counts as one member; its World is the number
	// of hosts under it. This switch's fan-in is its Children, and its
	// LocalHosts hosts after them.
	hosts, stream, jerr := 1, 0, (*joinError)(nil)
	member, tree := int(h.Child), s.cfg.Children > 0
	switch fromSwitch := h.Flags&wire.FlagFromSwitch != 0; {
	case fromSwitch && !tree:
		jerr = refuse(wire.CodeBadRequest, "job %d: child switch %d joined, but this switch takes hosts: set its %s to its number of child switches", h.Job, h.Child, s.cfg.setting("Children"))
	case !fromSwitch && tree && s.cfg.LocalHosts == 0:
		jerr = refuse(wire.CodeBadRequest, "job %d: rank %d joined as a host, but this switch aggregates %d child switches (%s): join your leaf switch (or give this one %s)", h.Job, h.Child, s.cfg.Children, s.cfg.setting("Children"), s.cfg.setting("LocalHosts"))
	case !fromSwitch && tree && (int(body.World) != s.cfg.LocalHosts || member >= s.cfg.LocalHosts):
		jerr = refuse(wire.CodeBadRequest, "job %d: rank %d of world %d joined, but this switch takes %d hosts of its own (%s; ranks 0..%d) besides its %d child switches",
			h.Job, h.Child, body.World, s.cfg.LocalHosts, s.cfg.setting("LocalHosts"), s.cfg.LocalHosts-1, s.cfg.Children)
	case !fromSwitch && tree:
		member, body.World = s.cfg.Children+member, uint16(s.cfg.Children+s.cfg.LocalHosts)
	case fromSwitch:
		hosts, body.World = int(body.World), uint16(s.cfg.Children+s.cfg.LocalHosts)
		stream = int(body.StreamPackets) // a sparse job's, see joinParent
	}
	var j *job
	if jerr == nil {
		j, jerr = s.join(from, h, &body, member, hosts, stream)
	}
	if jerr != nil {
		s.refusals.add(jerr.reason)
		if !s.refusalLimit.allow(time.Now()) {
			s.drops.add(dropRefusedJoin) // a flood of bad joins gets neither answers nor log lines
			return
		}
		s.log.Warn("join refused", "job", h.Job, "rank", h.Child, "from", from, "error", jerr.msg)
		reply := wire.Header{Version: wire.Version, Type: wire.TypeError, Job: h.Job, Token: h.Token, Child: h.Child}
		s.send(from, func(b []byte) []byte { return wire.AppendError(b, &reply, jerr.code, jerr.msg) })
		return
	}
	if j != nil {
		s.announce(j, from)
	}
}

// send queues one control packet to one address.
func (s *Switch) send(to netip.AddrPort, encode func([]byte) []byte) {
	op := s.outFree[0].get()
	op.buf = encode(op.buf[:0])
	op.to, op.job = to, nil
	s.outs[0] <- op
}
