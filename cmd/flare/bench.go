package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/sync/errgroup"

	swtch "github.com/flare-net/flare/switch"
	"github.com/flare-net/flare/wire"
)

// benchRow is one line of `flare bench`: an allreduce result, the path it
// took, and its ratios against the other two paths of the same P and size.
type benchRow struct {
	Path string `json:"path"` // switch, ring, relay (the echo relay) or fanout (the fan-out relay); a peer's own (--peers)
	arResult
	// PacketBytes is the payload per packet the hosts were granted: 0 for
	// the ring and the peers, which send no switch packets.
	PacketBytes int `json:"packet_bytes"`
	// OverBestPeer is this row's median time over the faster peer's (the
	// rows of --peers for the same P and size): below 1, faster than the
	// best host-based library measured. 0 without peers.
	OverBestPeer float64 `json:"over_best_peer,omitempty"`
	// VsRing is the ring's median time over this row's: above 1, faster
	// than the host ring baseline.
	VsRing float64 `json:"vs_ring"`
	// OfRelay is the relay's median time over this row's: the fraction of
	// the echo relay's ceiling this path reaches.
	OfRelay float64 `json:"of_relay"`
	// OfFanout is the fan-out relay's median time over this row's: the
	// fraction of the switch's own communication pattern (every block's P
	// arrivals, then one packet to all P) this path reaches, with no
	// processing unit. The fair ceiling for the switch.
	OfFanout float64 `json:"of_fanout"`
	// Bytes per call on one host's link, the mean over the ranks: up
	// (host to switch, or to its ring successor) and down. The switch row
	// reads the embedded switch's link counters (the hosts' own counters
	// with --switch); the ring row the ranks' ring counters, frame headers
	// included. LinkBytesFrom says which; empty for the relay.
	HostUpBytes   float64 `json:"host_link_up_bytes,omitempty"`
	HostDownBytes float64 `json:"host_link_down_bytes,omitempty"`
	LinkBytesFrom string  `json:"link_bytes_from,omitempty"`
}

type benchConfig struct {
	arConfig
	procs    bool   // one process per rank
	exe      string // the flare binary the rank processes run
	out      io.Writer
	embedded *swtch.Switch // the switch run in this process, nil with --switch
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench", "Allreduce through the switch, the host ring baseline and two UDP relays (the ceilings:\n"+
		"the same datagrams through the kernel with no aggregation), for every P and size given, in\n"+
		"one run, and print the times with their ratios. The echo relay answers each packet to its\n"+
		"sender at once; the fan-out relay has the switch's pattern: it counts a block's P arrivals\n"+
		"and sends the last to all P, so hosts wait for the slowest rank, as in every allreduce.\n"+
		"The switch and the relays run in this process unless --switch names a daemon; each rank is\n"+
		"a process of its own unless --procs=false.",
		"  flare bench                                    # P = 8, 1 MiB and 16 MiB float32\n"+
			"  flare bench --ranks 2,8 --bytes 64KiB,1MiB --json\n"+
			"  flare bench --switch 10.0.0.1:7470 --paths switch,ring\n"+
			"  flare bench --paths switch,fanout --procs=false  # the switch against its own pattern's ceiling\n"+
			"  flare bench --packet 1KiB,8KiB --peers bin/peers.jsonl  # beside Open MPI and Gloo (make bench-peers)\n"+
			"  flare bench --tree 4x4 --bytes 1MiB --sparse --densities 0.01   # Figure 15 analogue on a tree of switches\n", stdout)
	var c benchConfig
	ranks := fs.IntSlice("ranks", []int{8}, "world sizes P, comma-separated (1..1024)")
	sizes := fs.StringSlice("bytes", []string{"1MiB", "16MiB"}, "vector sizes per rank, comma-separated")
	paths := fs.StringSlice("paths", []string{"switch", "ring", "relay", "fanout"}, "what to measure: switch, ring, relay (echo), fanout")
	packets := fs.StringSlice("packet", []string{"1KiB"}, "payload bytes per packet, comma-separated (8..8KiB): the switch and the relays run once per size")
	peersFile := fs.String("peers", "", "a file of --json rows from host-based libraries measured apart (make bench-peers: mpi-tcp,\n"+
		"gloo-ring) to print in the same table, with ratios, beside the rows of the same P and size")
	fs.StringVar(&c.sw, "switch", "", "a running switch daemon HOST:PORT (default: one embedded in this process)")
	dtype := fs.String("dtype", "float32", "int8, int16, int32, int64, float32, float64, bfloat16 or float16")
	op := fs.String("op", "sum", "sum, min, max, prod, and, or or xor")
	fs.StringVar(&c.algo, "algo", "auto", "the switch's design: auto, single, multi2, multi4 or tree")
	fs.IntVar(&c.iters, "iters", 5, "measured calls per row")
	fs.IntVar(&c.warmup, "warmup", 1, "unmeasured calls first")
	fs.BoolVar(&c.verify, "verify", true, "check every element of the switch and ring results")
	fs.DurationVar(&c.timeout, "timeout", 60*time.Second, "limit of one allreduce call")
	fs.BoolVar(&c.procs, "procs", true, "run each rank as its own process (false: all ranks in this process)")
	asJSON := fs.Bool("json", false, "print one JSON object per row")
	sparse := fs.Bool("sparse", false, "compare sparse in-network (hash, array), dense in-network and the host sparse baseline")
	densities := fs.Float64Slice("densities", []float64{0.001, 0.01, 0.1, 0.2}, "with --sparse: fractions of non-zeros per rank")
	fs.Float64Var(&c.overlap, "overlap", 0.5, "with --sparse: fraction of a rank's indices drawn from a set all ranks share")
	tree := fs.String("tree", "", "LEAVESxHOSTS (e.g. 4x4): a root and LEAVES leaf switches in this process, HOSTS ranks per leaf\n"+
		"(ranks in this process too); in-network dense through the tree vs the host ring, with --sparse also in-network\n"+
		"sparse vs host sparse, with the bytes on every link next to what flare model collectives predicts for the same tree")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *sparse {
		for _, d := range *densities {
			if !(d > 0 && d <= 1) {
				return fmt.Errorf("--densities %v: each must be in (0, 1]", d)
			}
		}
		if !(c.overlap >= 0 && c.overlap <= 1) {
			return fmt.Errorf("--overlap %v: must be in [0, 1]", c.overlap)
		}
		if !fs.Changed("paths") {
			*paths = []string{"switch"}
		}
	}
	var err error
	if c.dtype, err = wire.ParseDType(*dtype); err != nil {
		return flagError("--dtype", err)
	}
	if c.op, err = wire.ParseOp(*op); err != nil {
		return flagError("--op", err)
	}
	if c.algo == "ring" {
		return fmt.Errorf("--algo ring: the ring is measured as its own path; --algo picks the switch's design")
	}
	if _, _, err := parseAlgo(c.algo); err != nil {
		return err
	}
	if c.iters < 1 || c.warmup < 0 {
		return fmt.Errorf("--iters %d --warmup %d: want iters >= 1 and warmup >= 0", c.iters, c.warmup)
	}
	want := map[string]bool{}
	for _, p := range *paths {
		if p != "switch" && p != "ring" && p != "relay" && p != "fanout" {
			return fmt.Errorf("--paths %q: want switch, ring, relay or fanout", p)
		}
		want[p] = true
	}
	var bytesList []int64
	for _, s := range *sizes {
		n, err := parseSize(s)
		if err != nil {
			return flagError("--bytes", err)
		}
		if n < int64(c.dtype.Size()) || n > 1<<30 {
			return fmt.Errorf("--bytes %s: must be in %d..1GiB", s, c.dtype.Size())
		}
		bytesList = append(bytesList, n)
	}
	for _, p := range *ranks {
		if p < 1 || p > 1024 {
			return fmt.Errorf("--ranks %d: must be in 1..1024", p)
		}
	}
	if *tree != "" {
		shape, err := parseTreeShape(*tree)
		if err != nil {
			return err
		}
		for _, f := range []string{"ranks", "switch", "paths", "procs", "packet", "peers"} {
			if fs.Changed(f) && (f != "procs" || c.procs) {
				return fmt.Errorf("--tree with --%s: the tree runs its own switches and ranks, in this process", f)
			}
		}
		return c.benchTree(ctx, shape, bytesList, *sparse, *densities, *asJSON, stdout)
	}
	packetList, err := parsePackets(*packets)
	if err != nil {
		return err
	}
	if *sparse && (len(packetList) > 1 || *peersFile != "") {
		return fmt.Errorf("--sparse with --peers or several --packet sizes: the sparse table compares one switch's paths")
	}
	if c.sw != "" && fs.Changed("packet") && want["switch"] {
		return fmt.Errorf("--switch with --packet: the daemon's own --packet sets its size (--packet sizes the relays alone with --paths relay,fanout)")
	}
	var peers *peerRows
	if *peersFile != "" {
		if peers, err = readPeerRows(*peersFile); err != nil {
			return err
		}
	}
	if c.procs {
		if c.exe, err = os.Executable(); err != nil {
			return fmt.Errorf("--procs: cannot find this binary to start ranks: %w", err)
		}
	}
	c.out = stderr

	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	g, gctx := errgroup.WithContext(ctx)
	stopAll, cancel := context.WithCancel(gctx)
	defer func() { cancel(); _ = g.Wait() }()
	servers, err := c.startBenchServers(g, gctx, stopAll, want, packetList, quiet)
	if err != nil {
		return err
	}
	c.sw, c.embedded = servers[packetList[0]].sw, servers[packetList[0]].embedded // the sparse table's switch
	if *sparse {
		return c.benchSparse(ctx, *ranks, bytesList, *densities, *asJSON, stdout)
	}
	var tw *tabwriter.Writer
	if !*asJSON {
		tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		layout := "in this process"
		if c.procs {
			layout = "one process per rank"
		}
		fmt.Fprintf(stdout, "Flare bench: %s %s, ranks %s; relay = UDP echo of the same datagrams, fanout = the same\n"+
			"datagrams in the switch's pattern (P arrivals, then one to all P): the ceilings\n\n", c.dtype, c.op, layout)
		fmt.Fprintln(tw, benchHeader)
	}
	job := uint32(7000)
	for _, p := range *ranks {
		for _, size := range bytesList {
			rows := map[benchLeg]*arResult{}
			linkRows := map[benchLeg]*benchRow{}
			for _, leg := range measureLegs(want, packetList) {
				path := leg.path
				job++
				rc := c
				rc.arConfig.ranks, rc.world, rc.job, rc.token = p, p, job, randomToken()
				rc.count = int(size) / c.dtype.Size()
				switch srv := servers[leg.packet]; path {
				case "relay", "fanout":
					rc.sw, rc.verify, rc.algo = srv.relays[path], false, "single"
				case "switch":
					rc.sw, rc.embedded = srv.sw, srv.embedded
				case "ring":
					rc.algo = "ring"
				}
				var watch *hostLinkWatch
				if path == "switch" && rc.embedded != nil {
					watch = watchHostLinks(rc.embedded)
				}
				res, err := c.measurePath(ctx, rc)
				var up, down int64
				links := 0
				if watch != nil {
					up, down, links = watch.finish()
				}
				if err == nil {
					err = leg.checkPacket(res, rc.embedded != nil)
				}
				if err != nil {
					return fmt.Errorf("P=%d %s %s: %w", p, formatSize(size), leg, err)
				}
				switch path {
				case "relay":
					res.Algo = "echo"
				case "fanout":
					res.Algo = "fan-out"
				}
				rows[leg] = res
				if link, err := rc.hostLinkBytes(ctx, path, rc, res, up, down, links); err != nil {
					return fmt.Errorf("P=%d %s %s: link bytes: %w", p, formatSize(size), leg, err)
				} else if link != nil {
					linkRows[leg] = link
				}
			}
			for _, row := range groupRows(rows, linkRows, peers.at(p, size, c.dtype.String(), c.op.String()), packetList) {
				if *asJSON {
					if err := json.NewEncoder(stdout).Encode(row); err != nil {
						return err
					}
					continue
				}
				printBenchRow(tw, row)
			}
		}
	}
	if n := peers.unused(); n > 0 {
		fmt.Fprintf(stderr, "flare bench: %d rows of --peers %s are for a P, size, dtype or op this run did not measure; left out\n", n, *peersFile)
	}
	if tw != nil {
		tw.Flush()
		fmt.Fprintln(stdout, "\nvs ring: ring time / this time (above 1 is faster). of relay, of fanout: that relay's time / this time (the\n"+
			"fraction of its ceiling; of fanout on the switch row is the switch of its own pattern's ceiling); the ring and the\n"+
			"peers are compared with the relays of the first packet size. ÷ best peer: this time / the faster --peers row's time\n"+
			"(below 1 is faster than the best host-based library).\n"+
			"host↑/↓: bytes per call on one host's link (mean over the ranks), up and down; switch: the switch's link counters\n"+
			"(join ack and leave spread over the calls), ring: the ranks' ring counters (frame headers included).")
	}
	return nil
}

func ratio(r float64) string {
	if r == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", r)
}

func yesNo(v bool, path string) string {
	switch {
	case path == "relay" || path == "fanout":
		return "n/a"
	case v:
		return "yes"
	}
	return "no"
}

// measurePath measures one path, in this process or with one process per
// rank; with processes the call time of a row is the slowest rank's.
func (c *benchConfig) measurePath(ctx context.Context, rc benchConfig) (*arResult, error) {
	if !c.procs {
		return measure(ctx, rc.arConfig)
	}
	p := rc.world
	var peers []string
	if rc.algo == "ring" && p > 1 {
		var err error
		if peers, err = freeTCPAddrs(p); err != nil {
			return nil, err
		}
	}
	results := make([]arResult, p)
	g, gctx := errgroup.WithContext(ctx)
	for r := range p {
		args := []string{"allreduce", "--switch", rc.sw, "--rank", strconv.Itoa(r), "--world", strconv.Itoa(p),
			"--job", strconv.FormatUint(uint64(rc.job), 10), "--token", strconv.FormatUint(rc.token, 10),
			"--count", strconv.Itoa(rc.count), "--dtype", rc.dtype.String(), "--op", rc.op.String(), "--algo", rc.algo,
			"--iters", strconv.Itoa(rc.iters), "--warmup", strconv.Itoa(rc.warmup), "--timeout", rc.timeout.String(), "--json"}
		if rc.verify {
			args = append(args, "--verify")
		}
		if rc.sparse {
			args = append(args, "--sparse", "--density", strconv.FormatFloat(rc.density, 'g', -1, 64),
				"--overlap", strconv.FormatFloat(rc.overlap, 'g', -1, 64))
			if rc.storage != wire.StorageDense {
				args = append(args, "--storage", rc.storage.String())
			}
		}
		if rc.algo == "ring" && p == 1 {
			args = append(args, "--peers", "127.0.0.1:0")
		} else if peers != nil {
			args = append(args, "--peers", strings.Join(peers, ","))
		}
		g.Go(func() error {
			var out bytes.Buffer
			cmd := exec.CommandContext(gctx, c.exe, args...)
			cmd.Stdout, cmd.Stderr = &out, c.out
			cmd.Env = rankEnv()
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("rank %d: %w", r, err)
			}
			if err := json.Unmarshal(out.Bytes(), &results[r]); err != nil {
				return fmt.Errorf("rank %d: reading its result %q: %w", r, out.String(), err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	agg := results[0]
	for _, r := range results[1:] {
		agg.MedianS = max(agg.MedianS, r.MedianS)
		agg.P99S = max(agg.P99S, r.P99S)
		agg.Retransmits += r.Retransmits
		agg.TxBytes += r.TxBytes
		agg.RxBytes += r.RxBytes
		agg.SpilledPairs += r.SpilledPairs
		agg.Verified = agg.Verified && r.Verified
	}
	agg.AlgbwGBps = float64(agg.Bytes) / agg.MedianS / 1e9
	return &agg, nil
}

// freeTCPAddrs finds n loopback TCP ports free now for the ring's ranks.
func freeTCPAddrs(n int) ([]string, error) {
	addrs := make([]string, n)
	lns := make([]net.Listener, n)
	defer func() {
		for _, ln := range lns {
			if ln != nil {
				ln.Close()
			}
		}
	}()
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("ring ports: %w", err)
		}
		lns[i], addrs[i] = ln, ln.Addr().String()
	}
	return addrs, nil
}

// rankEnv is the environment of a rank process: this one's, with
// GOMAXPROCS=1 unless the user set it. A host process runs one allreduce
// loop; with P of them and a switch sharing a few cores, more threads per
// process only spin and steal each other's time.
func rankEnv() []string {
	env := os.Environ()
	if _, ok := os.LookupEnv("GOMAXPROCS"); !ok {
		env = append(env, "GOMAXPROCS=1")
	}
	return env
}

// hostLinkBytes is a path's bytes per call on one host's link (mean over
// the ranks), or nil where nothing counts them (the relays). The switch
// path reads the embedded switch's link counters (up, down over links
// host links, for warmup + iters calls); with --switch, the hosts' own.
// The ring path takes the ranks' ring counters when they report them, or
// counts one ring call in this process (its bytes depend on P and the
// size alone).
func (c *benchConfig) hostLinkBytes(ctx context.Context, path string, rc benchConfig, res *arResult, up, down int64, links int) (*benchRow, error) {
	p := float64(rc.world)
	calls := float64(rc.warmup + rc.iters)
	switch {
	case path == "switch" && c.embedded != nil:
		if links != rc.world {
			return &benchRow{}, nil // the watch missed a link: no number rather than a wrong one
		}
		return &benchRow{HostUpBytes: float64(up) / p / calls, HostDownBytes: float64(down) / p / calls, LinkBytesFrom: "switch"}, nil
	case path == "switch":
		return &benchRow{HostUpBytes: float64(res.TxBytes) / p, HostDownBytes: float64(res.RxBytes) / p, LinkBytesFrom: "hosts"}, nil
	case path == "ring" && res.TxBytes > 0:
		return &benchRow{HostUpBytes: float64(res.TxBytes) / p, HostDownBytes: float64(res.RxBytes) / p, LinkBytesFrom: "ring"}, nil
	case path == "ring":
		sent, received, err := ringCallTraffic(ctx, rc.world, rc.count, rc.dtype, rc.op)
		if err != nil {
			return nil, err
		}
		return &benchRow{HostUpBytes: sent, HostDownBytes: received, LinkBytesFrom: "ring"}, nil
	}
	return nil, nil
}

// linkCell prints a bytes-per-link cell: "-" where nothing counted it.
func linkCell(n float64, from string) string {
	if from == "" {
		return "-"
	}
	return humanBytes(int64(n))
}
