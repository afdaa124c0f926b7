// Command flare is the Flare switch emulator's one binary: the switch
// daemon, hosts that allreduce through it, the demo and the benchmarks.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, pflag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "flare:", err)
		os.Exit(1)
	}
}

// command is one subcommand: its one-line summary and its entry point.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() map[string]command {
	return map[string]command{
		"demo":      {"a switch and 8 hosts on loopback: verified allreduce of several sizes, with the speed", runDemo},
		"bench":     {"the switch vs the host ring vs a UDP echo relay (the ceiling), with ratios", runBench},
		"switch":    {"run the switch daemon", runSwitch},
		"allreduce": {"allreduce through a switch (or the host ring) and report the speed", runAllReduce},
		"version":   {"print the version, commit and Go version", runVersion},
		"testbed":   {"an emulated cluster on this box: namespaces, shaped veth links, hosts as processes; vs ideal and the model", runTestbed},
		"token":     {"print a fresh random job token (for allreduce --token or FLARE_TOKEN)", runToken},
		"decode":    {"print a pcap of Flare packets (flare switch --pcap) as a table", runDecode},
		"model":     {"the analytic model: choose, sweep, size, collectives, sparse, calibrate", runModel},
		"sim":       {"allreduces in virtual time on PsPIN cycle costs; --compare against the model", runSim},
		"jobs":      {"register, list and delete jobs on a switch with --admission registered", runJobs},
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmds := commands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout, cmds)
		return nil
	}
	if args[0] == "--version" {
		args[0] = "version"
	}
	c, ok := cmds[args[0]]
	if !ok {
		if s := closest(args[0], sortedKeys(cmds)); s != "" {
			return fmt.Errorf("unknown command %q; did you mean %q? (see 'flare --help')", args[0], s)
		}
		usage(stderr, cmds)
		return fmt.Errorf("unknown command %q (see 'flare --help')", args[0])
	}
	return c.run(ctx, args[1:], stdout, stderr)
}

func usage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, "usage: flare <command> [flags]\n\ncommands:")
	for _, name := range sortedKeys(cmds) {
		fmt.Fprintf(w, "  %-10s %s\n", name, cmds[name].summary)
	}
	fmt.Fprintln(w, "\nRun 'flare <command> --help' for a command's flags.")
}
