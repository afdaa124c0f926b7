package bench

import (
	"context"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/flare-net/flare/hostlib"
	"github.com/flare-net/flare/wire"
)

// ranks is how the local ranks of a measurement reach each other: sessions
// through a switch (or a tree of switches), or the host ring.
type ranks interface {
	// reduce runs local rank i's part of one call on p.
	reduce(ctx context.Context, i int, p *payload) error
	// traffic is each local rank's counters so far.
	traffic() []traffic
	// contributors is rank i's contributor count of every block of the
	// last call and its elements per block (bounded time; nil for the ring).
	contributors(i int) (counts []uint16, pe int)
	// packetBytes is the payload per packet the switch granted (0 for
	// the ring).
	packetBytes(dt wire.DType) int
	// blocks is the blocks of one call.
	blocks() int
	algo() string
	close()
}

// traffic is one rank's counters: payload bytes, datagrams (sessions),
// retransmissions and the pairs a switch spilled to it (sparse).
type traffic struct {
	tx, rx, packetsTx, packetsRx, retransmits, spilled uint64
}

func sum(ts []traffic) traffic {
	var s traffic
	for _, t := range ts {
		s.tx, s.rx, s.packetsTx, s.packetsRx = s.tx+t.tx, s.rx+t.rx, s.packetsTx+t.packetsTx, s.packetsRx+t.packetsRx
		s.retransmits, s.spilled = s.retransmits+t.retransmits, s.spilled+t.spilled
	}
	return s
}

// join connects c's local ranks: the host ring with Algo ring, else a
// session per rank through the switch (or the tree's leaves).
func join(ctx context.Context, c Config) (ranks, error) {
	if c.Algo == "ring" {
		return newRings(ctx, c)
	}
	return joinSessions(ctx, c)
}

// sessions are the local ranks' sessions through a switch.
type sessions []*hostlib.Session

// joinSessions joins the local ranks concurrently (each join waits for
// all), each at the switch of its place in the tree.
func joinSessions(ctx context.Context, c Config) (sessions, error) {
	local, world := c.localRanks()
	ss := make(sessions, len(local))
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	for i, r := range local {
		g.Go(func() error {
			sw, lr, lw := c.place(r, world)
			s, err := hostlib.Join(gctx, sessionOptions(c, sw, lr, lw))
			mu.Lock()
			ss[i] = s
			mu.Unlock()
			return err
		})
	}
	err := g.Wait()
	if err == nil && c.Multicast && !ss[0].Group().IsValid() {
		err = fmt.Errorf("--multicast: the switch at %s granted the job no multicast group: it has no pool (flare switch --multicast), or every group of it is in use", c.Switch)
	}
	if err != nil {
		for _, s := range ss {
			if s != nil {
				s.Close()
			}
		}
		return nil, err
	}
	return ss, nil
}

// sessionOptions is the options of c's session that joins the switch at
// sw as its rank lr of lw.
func sessionOptions(c Config, sw string, lr, lw int) hostlib.Options {
	algo, b, _ := parseAlgo(c.Algo)
	return hostlib.Options{
		Switch: sw, Job: c.Job, Token: c.Token, Rank: lr, World: lw, DType: c.DType, Op: c.Op,
		Elements: c.Count, Algo: algo, Buffers: b, Reproducible: c.Reproducible, Timeout: c.Timeout,
		Sparse: c.Sparse, Storage: c.Storage, BlockElems: c.BlockElems, DisableOffload: c.NoOffload, BlockDeadline: c.Deadline,
		Multicast: c.Multicast, BusyPoll: c.BusyPoll,
	}
}

func (ss sessions) reduce(ctx context.Context, i int, p *payload) (err error) {
	if p.c.Sparse {
		p.results[i], err = ss[i].SparseAllReduceBytes(ctx, p.inputs[i])
		return err
	}
	return ss[i].AllReduceBytes(ctx, p.bufs[i])
}

func (ss sessions) traffic() []traffic {
	t := make([]traffic, len(ss))
	for i, s := range ss {
		t[i] = sessionTraffic(s.Stats())
	}
	return t
}

// sessionTraffic is a session's counters as a rank's traffic.
func sessionTraffic(st hostlib.Stats) traffic {
	return traffic{tx: st.BytesSent, rx: st.BytesReceived, packetsTx: st.PacketsSent, packetsRx: st.PacketsReceived,
		retransmits: st.Retransmits, spilled: st.SpilledPairs}
}

func (ss sessions) contributors(i int) ([]uint16, int) {
	return ss[i].Contributors(), ss[i].PacketElems()
}
func (ss sessions) blocks() int                   { return ss[0].Blocks() }
func (ss sessions) packetBytes(dt wire.DType) int { return ss[0].PacketElems() * dt.Size() }
func (ss sessions) algo() string                  { return algoName(ss[0].Algo(), ss[0].Buffers()) }

func (ss sessions) close() {
	for _, s := range ss {
		s.Close()
	}
}

// rings are the local ranks' host rings: this process's one rank of a
// ring over Config.Peers, or every rank's, in this process on loopback.
// A ring is built once and carries every call.
type rings []*hostlib.Ring

func newRings(ctx context.Context, c Config) (rings, error) {
	if c.Ranks == 0 {
		r, err := hostlib.NewRing(ctx, hostlib.RingConfig{Rank: c.Rank, Peers: c.Peers, DialTimeout: c.Timeout})
		if err != nil {
			return nil, err
		}
		return rings{r}, nil
	}
	return hostlib.NewLocalRings(ctx, c.Ranks, nil)
}

func (rs rings) reduce(ctx context.Context, i int, p *payload) (err error) {
	c := p.c
	if c.Sparse {
		p.results[i], err = rs[i].SparseAllReduce(ctx, p.inputs[i], c.DType, c.Op)
		return err
	}
	return rs[i].AllReduce(ctx, p.bufs[i], c.DType, c.Op)
}

func (rs rings) traffic() []traffic {
	t := make([]traffic, len(rs))
	for i, r := range rs {
		st := r.Stats()
		t[i] = traffic{tx: st.BytesSent, rx: st.BytesReceived}
	}
	return t
}

func (rings) contributors(int) ([]uint16, int) { return nil, 0 }
func (rings) blocks() int                      { return 1 }
func (rings) packetBytes(wire.DType) int       { return 0 }
func (rings) algo() string                     { return "ring" }

func (rs rings) close() {
	for _, r := range rs {
		r.Close()
	}
}
