package main

import (
	"regexp"
)

// The libraries' Config errors name the field that is out of range, as
// Type.Field (Config.Listen = "x": want HOST:PORT, Suite.Ranks 0: must be
// in 1..1024, Config.HPU.SubsetS: ...). A subcommand reports them with the
// flag that set the field instead: --listen "x": want HOST:PORT.

// fields maps the fields of one library type to the flags that set them.
type fields struct {
	typ   string            // the type the errors name: Config, Suite
	flags map[string]string // field path (Listen, HPU.SubsetS) to flag (--listen)
}

// fieldRef is a Type.Field[.Field...] reference, with the " = " that may
// follow it.
var fieldRef = regexp.MustCompile(`\b([A-Z][A-Za-z0-9]*)\.([A-Z][A-Za-z0-9]*(?:\.[A-Z][A-Za-z0-9]*)*)( = )?`)

// flag is the flag that sets field, "" when none does.
func (f fields) flag(field string) string { return f.flags[field] }

// flagNamed is an error whose text names flags where the library's named
// fields; it wraps the library's error.
type flagNamed struct {
	msg string
	err error
}

func (e *flagNamed) Error() string { return e.msg }
func (e *flagNamed) Unwrap() error { return e.err }

// withFlags rewrites every field reference in err's text that one of fs
// maps as its flag: "Config.Listen = x" reads "--listen x",
// "Config.Peers" reads "--peers". Others stay as they are.
func withFlags(err error, fs ...fields) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	out := fieldRef.ReplaceAllStringFunc(msg, func(ref string) string {
		m := fieldRef.FindStringSubmatch(ref)
		for _, f := range fs {
			if flag, ok := f.flags[m[2]]; ok && f.typ == m[1] {
				if m[3] != "" {
					return flag + " "
				}
				return flag
			}
		}
		return ref
	})
	if out == msg {
		return err
	}
	return &flagNamed{msg: out, err: err}
}

// configFlags are `flare allreduce`'s flags for bench.Config's fields.
var configFlags = fields{"Config", map[string]string{
	"Switch": "--switch", "Job": "--job", "Token": "--token", "Ranks": "--ranks", "Rank": "--rank", "World": "--world",
	"Count": "--count", "DType": "--dtype", "Op": "--op", "Algo": "--algo", "Peers": "--peers", "Reproducible": "--reproducible",
	"Iters": "--iters", "Warmup": "--warmup", "Verify": "--verify", "Timeout": "--timeout", "Sparse": "--sparse",
	"Density": "--density", "Overlap": "--overlap", "Storage": "--storage", "BlockElems": "--block-elems",
	"NoOffload": "--no-offload", "BusyPoll": "--busy-poll", "Multicast": "--multicast", "Deadline": "--deadline", "TailMedian": "--tail-median", "TailRatio": "--tail-ratio",
}}

// suiteFlags are `flare bench`'s flags for bench.Suite's fields.
var suiteFlags = fields{"Suite", map[string]string{
	"Switch": "--switch", "Ranks": "--ranks", "Sizes": "--bytes", "Paths": "--paths", "DType": "--dtype", "Op": "--op",
	"Algo": "--algo", "Iters": "--iters", "Warmup": "--warmup", "Verify": "--verify", "Timeout": "--timeout",
	"Sparse": "--sparse", "Densities": "--densities", "Overlap": "--overlap", "Tree": "--tree",
	"Packets": "--packet", "Peers": "--peers", "PeerCmds": "--peer", "Rounds": "--rounds", "Profile": "--profile",
	"BusyPoll": "--busy-poll", "JSON": "--json",
}}

// demoFlags are `flare demo`'s flags for bench.Demo's fields.
var demoFlags = fields{"Demo", map[string]string{"Ranks": "--ranks", "Iters": "--iters"}}

// calibrateFlags are `flare model calibrate`'s flags for
// bench.CalibrateConfig's fields.
var calibrateFlags = fields{"CalibrateConfig", map[string]string{
	"Harness.Hosts": "--hosts", "Runs": "--runs", "RunTime": "--run-time",
}}

// switchFlags are `flare switch`'s flags for swtch.Config's fields.
var switchFlags = fields{"Config", map[string]string{
	"Listen": "--listen", "Admin": "--admin", "PacketBytes": "--packet", "MaxJobs": "--max-jobs", "MaxMemory": "--max-memory",
	"MaxPending": "--max-pending", "MaxPendingPerSource": "--max-pending-per-source", "JoinTimeout": "--join-timeout",
	"JobIdle": "--job-idle", "Window": "--window", "JoinRate": "--join-rate", "PcapPath": "--pcap", "PcapMax": "--pcap-max",
	"Parent": "--parent", "ChildIndex": "--child-index", "Children": "--children", "LocalHosts": "--local-hosts",
	"Admission": "--admission", "AdminSecretFile": "--admin-secret-file",
	"HPU.Clusters": "--clusters", "HPU.CoresPerCluster": "--cores", "HPU.QueueDepth": "--queue", "HPU.SubsetS": "--policy-s",
	"HPU.L1Bytes": "--l1", "HPU.Overflow": "--overflow", "Socket.BatchSize": "--batch", "Socket.DisableOffload": "--no-offload",
	"Socket.BusyPoll": "--busy-poll", "Readers": "--readers", "SteerRun": "--steer-run",
	"Multicast": "--multicast", "MulticastPort": "--multicast-port", "Socket.MulticastInterface": "--multicast-interface",
}}

// testbedFlags are `flare testbed`'s flags for testbed.Config's fields.
var testbedFlags = fields{"Config", map[string]string{
	"Hosts": "--hosts", "LinkBps": "--link", "UplinkBps": "--uplink", "Loss": "--loss", "Bytes": "--bytes",
	"PacketBytes": "--packet", "Iters": "--iters", "Warmup": "--warmup", "Paths": "--paths", "Densities": "--densities",
	"Overlap": "--overlap", "Window": "--window", "Timeout": "--timeout", "Leaves": "--tree LEAVES", "PerLeaf": "--tree HOSTS",
}}

// benchConfigFlags are `flare bench`'s flags for the bench.Config fields
// a row's errors may name.
var benchConfigFlags = fields{"Config", map[string]string{
	"Switch": "--switch", "DType": "--dtype", "Op": "--op", "Algo": "--algo", "Iters": "--iters", "Warmup": "--warmup",
	"Timeout": "--timeout", "Density": "--densities", "Overlap": "--overlap", "Profile": "--profile",
}}
