package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/hpu"
	swtch "github.com/flare-net/flare/switch"
)

func runSwitch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("switch", "Run the Flare switch daemon: a UDP data port where hosts join jobs and allreduce,\nand an admin HTTP port with /metrics, /healthz and /debug/pprof/.",
		"  flare switch\n  flare switch --listen 0.0.0.0:7470 --admin 127.0.0.1:9470 --clusters 16\n  flare switch --pcap /var/lib/flare-switch/flare.pcap --pcap-max 256MiB\n"+
			"  flare switch --listen 10.0.0.1:7470 --multicast 239.255.70.0/24\n"+
			"  flare switch --listen 10.0.0.1:7470 --children 4                            # root of a tree of 4 leaf switches\n"+
			"  flare switch --listen 10.0.1.1:7470 --parent 10.0.0.1:7470 --child-index 0  # leaf 0 under it\n"+
			"  flare switch --listen 10.0.0.1:7470 --children 4 --local-hosts 2            # a root with 2 hosts of its own as well\n"+
			"  flare switch --admission registered --admin-secret-file /etc/flare/admin-secret  # only jobs registered with flare jobs register\n", stdout)
	var cfg swtch.Config
	sf := addSwitchFlags(fs, &cfg)
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of this process to FILE until it stops (for go tool pprof; make pgo)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(fs, "unexpected argument %q", fs.Arg(0))
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return flagError("--cpuprofile", err)
		}
		defer stop()
	}
	if err := sf.resolve(&cfg, stderr); err != nil {
		return err
	}
	cfg.SettingName = switchFlags.flag
	sw, err := swtch.New(cfg)
	if err != nil {
		return withFlags(err, switchFlags)
	}
	return withFlags(sw.Run(ctx), switchFlags)
}

// switchTextFlags are the flags of `flare switch` that are not a
// swtch.Config field as they are typed.
type switchTextFlags struct {
	l1, packet, maxMemory, pcapMax, level *string
	multicast, multicastIf                *string
}

// addSwitchFlags registers the flags, the Config's fields in cfg.
func addSwitchFlags(fs *pflag.FlagSet, cfg *swtch.Config) *switchTextFlags {
	sf := &switchTextFlags{}
	fs.StringVar(&cfg.Listen, "listen", swtch.DefaultListen, "UDP data address HOST:PORT")
	fs.StringVar(&cfg.Admin, "admin", swtch.DefaultAdmin, "admin HTTP address HOST:PORT, or off")
	fs.IntVar(&cfg.HPU.Clusters, "clusters", hpu.DefaultClusters, "processing-unit clusters (1..1024)")
	fs.IntVar(&cfg.HPU.CoresPerCluster, "cores", hpu.DefaultCoresPerCluster, "cores per cluster (1..256)")
	sf.l1 = fs.String("l1", "1MiB", "L1 memory per cluster (4KiB..1GiB)")
	fs.IntVar(&cfg.HPU.QueueDepth, "queue", hpu.DefaultQueueDepth, "handler requests a cluster holds, queued and running")
	fs.IntVar(&cfg.HPU.SubsetS, "policy-s", 0, "cores of a cluster that may run one block's packets, 1..cores (0 = cores)")
	fs.BoolVar(&cfg.HPU.Overflow, "overflow", false, "with --policy-s > 1, run a packet whose home cluster is full on the least-loaded\n"+
		"cluster (PsPIN's default) instead of waiting for its home cluster")
	sf.packet = fs.String("packet", "1KiB", "payload bytes per packet")
	fs.IntVar(&cfg.MaxJobs, "max-jobs", swtch.DefaultMaxJobs, "jobs at once, pending or admitted (1.."+strconv.Itoa(swtch.MaxJobsLimit)+")")
	sf.maxMemory = fs.String("max-memory", "auto", "host memory all jobs may hold besides L1 (stored results, block tables, pending joins);\n"+
		"a job that does not fit is refused (auto = 1GiB, at most a quarter of the machine's memory)")
	fs.IntVar(&cfg.MaxPending, "max-pending", 0, "jobs waiting for ranks at once; beyond it the oldest makes room (0 = "+strconv.Itoa(swtch.DefaultMaxPending)+", at most --max-jobs)")
	fs.IntVar(&cfg.MaxPendingPerSource, "max-pending-per-source", 0, "jobs waiting for ranks that one source address created; beyond it its oldest makes room\n"+
		"(0 = "+strconv.Itoa(swtch.DefaultMaxPendingPerSource)+", at most --max-pending)")
	fs.DurationVar(&cfg.JoinTimeout, "join-timeout", swtch.DefaultJoinTimeout, "end a job whose ranks have not all joined this long after the first")
	fs.DurationVar(&cfg.JobIdle, "job-idle", swtch.DefaultJobIdle, "end a job after this long without packets")
	fs.IntVar(&cfg.Window, "window", 0, "target blocks in flight per host (1.."+strconv.Itoa(swtch.MaxWindow)+"; 0, the default: "+strconv.Itoa(swtch.DefaultWindowBytes>>10)+"KiB of blocks a host,\n"+
		"at most "+strconv.Itoa(swtch.DefaultWindowPackets)+" blocks over the job's members, at least "+strconv.Itoa(swtch.DefaultWindow)+")")
	fs.IntVar(&cfg.JoinRate, "join-rate", swtch.DefaultJoinRate, "joins accepted per second (1.."+strconv.Itoa(swtch.MaxJoinRate)+")")
	fs.IntVar(&cfg.Readers, "readers", 0, "sockets on the data port (SO_REUSEPORT), each with its own reader and writer goroutine, a block's\n"+
		"packets steered to one of them by its block id (0 = min(CPUs, --clusters); 1 = one socket)")
	fs.IntVar(&cfg.SteerRun, "steer-run", 1, "with --readers > 1, consecutive blocks steered to one reader, a power of two in 1.."+strconv.Itoa(swtch.MaxSteerRun)+": hosts send\n"+
		"runs of blocks as one GSO datagram, steered by its first block; 64 spreads those runs over the readers (docs/DEPLOY.md)")
	fs.IntVar(&cfg.Socket.BatchSize, "batch", 0, "datagrams per socket call (0 = default)")
	fs.BoolVar(&cfg.Socket.DisableOffload, "no-offload", false, "do not use UDP GSO/GRO")
	fs.DurationVar(&cfg.Socket.BusyPoll, "busy-poll", conn.DefaultBusyPoll, busyPollUsage)
	sf.multicast = fs.String("multicast", "", "IPv4 multicast groups, such as 239.255.70.0/24: a job whose hosts all ask (flare allreduce --multicast,\n"+
		"hostlib Options.Multicast) gets one while it runs, and its results go once to the group instead of once to each host")
	fs.IntVar(&cfg.MulticastPort, "multicast-port", 0, "with --multicast: the groups' UDP port, held while the daemon runs (0 = the data port + 1, or a free one with --listen on port 0)")
	sf.multicastIf = fs.String("multicast-interface", "", "with --multicast: the IPv4 address of the interface toward the hosts, the one they\n"+
		"give as --switch (default: --listen's address)")
	fs.StringVar(&cfg.PcapPath, "pcap", "", "write every Flare packet in and out to this pcap file (read it with flare decode or Wireshark)")
	sf.pcapMax = fs.String("pcap-max", "1GiB", "stop capturing when the pcap file reaches this size")
	fs.StringVar(&cfg.Parent, "parent", "", "tree of switches: the parent switch's data address HOST:PORT (this switch is its child)")
	fs.IntVar(&cfg.ChildIndex, "child-index", 0, "with --parent: this switch's index among the parent's children, 0..N-1 where N is the parent's --children")
	fs.IntVar(&cfg.Children, "children", 0, "tree of switches: this switch aggregates N child switches (0 = hosts join here)")
	fs.IntVar(&cfg.LocalHosts, "local-hosts", 0, "with --children: H hosts also join this switch directly in every job, with ranks 0..H-1 and world H")
	fs.StringVar(&cfg.Admission, "admission", swtch.AdmissionOpen, "open: any host that reaches the data port may create a job by joining it;\n"+
		"registered: only jobs registered over the admin port (flare jobs register)")
	fs.StringVar(&cfg.AdminSecretFile, "admin-secret-file", "", "file with the admin port's bearer secret (not readable by every user): admin writes,\n"+
		"/v1/jobs and /debug/pprof/ need it; required with --admission registered")
	sf.level = fs.String("log-level", "info", "debug, info, warn or error")
	return sf
}

// resolve refuses a 0 that would silently mean the default (refuseZero)
// and sets the Config's fields that flags give as text.
func (sf *switchTextFlags) resolve(cfg *swtch.Config, stderr io.Writer) error {
	n, err := parseSize(*sf.l1)
	if err != nil {
		return flagError("--l1", err)
	}
	cfg.HPU.L1Bytes = int(n)
	if n, err = parseSize(*sf.packet); err != nil {
		return flagError("--packet", err)
	}
	cfg.PacketBytes = int(n)
	if cfg.PcapMax, err = parseSize(*sf.pcapMax); err != nil {
		return flagError("--pcap-max", err)
	}
	if err := refuseZero(cfg, sf); err != nil {
		return err
	}
	if *sf.multicast != "" {
		if cfg.Multicast, err = netip.ParsePrefix(*sf.multicast); err != nil {
			return flagError("--multicast", err)
		}
	}
	if *sf.multicastIf != "" {
		if cfg.Socket.MulticastInterface, err = netip.ParseAddr(*sf.multicastIf); err != nil {
			return flagError("--multicast-interface", err)
		}
	}
	if *sf.maxMemory != "auto" {
		if cfg.MaxMemory, err = parseSize(*sf.maxMemory); err != nil {
			return flagError("--max-memory", err)
		}
		if cfg.MaxMemory == 0 { // 0 would silently mean the default in Config
			return fmt.Errorf("--max-memory 0: must be in 1MiB..1TiB, or auto")
		}
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*sf.level)); err != nil {
		return flagError("--log-level", err)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv}))
	return nil
}

// refuseZero refuses 0 for the flags whose Config field reads 0 as "the
// default": none of these flags defaults to 0, so a 0 on the command line
// is a mistake, not a request for the default, and gets the flag's range.
func refuseZero(cfg *swtch.Config, sf *switchTextFlags) error {
	for _, f := range []struct {
		name   string
		v, max int
	}{{"clusters", cfg.HPU.Clusters, hpu.MaxClusters}, {"cores", cfg.HPU.CoresPerCluster, hpu.MaxCoresPerCluster}, {"queue", cfg.HPU.QueueDepth, hpu.MaxQueueDepth}} {
		if f.v < 1 || f.v > f.max {
			return fmt.Errorf("--%s %d: must be in 1..%d", f.name, f.v, f.max)
		}
	}
	for _, f := range []struct {
		name, value, allowed string
		zero                 bool
	}{
		{"max-jobs", "0", fmt.Sprintf("in 1..%d", swtch.MaxJobsLimit), cfg.MaxJobs == 0},
		{"join-rate", "0", fmt.Sprintf("in 1..%d per second", swtch.MaxJoinRate), cfg.JoinRate == 0},
		{"join-timeout", "0s", "in 100ms..1h", cfg.JoinTimeout == 0},
		{"job-idle", "0s", "in 1s..24h", cfg.JobIdle == 0},
		{"packet", *sf.packet, "a multiple of 8 in 8..8192 bytes", cfg.PacketBytes == 0},
		{"pcap-max", *sf.pcapMax, "in 1KiB..1TiB", cfg.PcapMax == 0},
	} {
		if f.zero {
			return fmt.Errorf("--%s %s: must be %s", f.name, f.value, f.allowed)
		}
	}
	return nil
}
