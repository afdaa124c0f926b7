package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/flare-net/flare/internal/units"
	swtch "github.com/flare-net/flare/switch"
)

// jobsCommands are the subcommands of `flare jobs`: a client of a switch's
// job registry (--admission registered) for operators and launchers.
func jobsCommands() map[string]command {
	return map[string]command{
		"register": {"register a job: its id, token, world, memory cap and source prefixes", runJobsRegister},
		"list":     {"list the registered jobs and the state of each (never their tokens)", runJobsList},
		"delete":   {"unregister a job, ending it if it runs", runJobsDelete},
	}
}

func runJobs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmds := jobsCommands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		jobsUsage(stdout, cmds)
		return nil
	}
	c, ok := cmds[args[0]]
	if !ok {
		if s := closest(args[0], sortedKeys(cmds)); s != "" {
			return fmt.Errorf("jobs: unknown subcommand %q; did you mean %q? (see 'flare jobs --help')", args[0], s)
		}
		jobsUsage(stderr, cmds)
		return fmt.Errorf("jobs: unknown subcommand %q (see 'flare jobs --help')", args[0])
	}
	return c.run(ctx, args[1:], stdout, stderr)
}

func jobsUsage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, "usage: flare jobs <subcommand> [flags]\n\n"+
		"Manage the jobs a switch started with --admission registered admits, over its admin port\n"+
		"(docs/SECURITY.md, \"Registered admission\").\n\nsubcommands:")
	for _, name := range sortedKeys(cmds) {
		fmt.Fprintf(w, "  %-10s %s\n", name, cmds[name].summary)
	}
	fmt.Fprint(w, "\nRun 'flare jobs <subcommand> --help' for its flags.\n\nexamples:\n"+
		"  flare jobs register --secret-file /etc/flare/admin-secret --job 4711 --token \"$TOKEN\" --world 4 --memory 64MiB --source 10.0.0.0/24\n"+
		"  flare jobs list --admin 10.0.0.1:9470 --secret-file /etc/flare/admin-secret\n"+
		"  flare jobs delete --secret-file /etc/flare/admin-secret --job 4711\n")
}

// adminFlags are the flags every jobs subcommand takes: where the admin
// port is and the file with its secret.
type adminFlags struct {
	addr, secretFile string
}

func addAdminFlags(fs *pflag.FlagSet) *adminFlags {
	a := &adminFlags{}
	fs.StringVar(&a.addr, "admin", swtch.DefaultAdmin, "the switch's admin address HOST:PORT, or an http:// URL")
	fs.StringVar(&a.secretFile, "secret-file", "", "file with the switch's admin secret (its --admin-secret-file); required")
	return a
}

// client parses the flags and connects to the admin port.
func (a *adminFlags) client(fs *pflag.FlagSet, args []string) (*swtch.AdminClient, error) {
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, usageError(fs, "unexpected argument %q", fs.Arg(0))
	}
	if a.secretFile == "" {
		return nil, usageError(fs, "--secret-file is required: the file with the switch's --admin-secret-file secret")
	}
	secret, err := swtch.ReadSecretFile(a.secretFile)
	if err != nil {
		return nil, flagError("--secret-file", err)
	}
	c, err := swtch.NewAdminClient(a.addr, secret)
	if err != nil {
		return nil, flagError("--admin", err)
	}
	return c, nil
}

func runJobsRegister(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("jobs register", "Register a job on a switch with --admission registered: hosts may then join it with this\n"+
		"id and token, as many as --world, from the --source prefixes, within --memory. The token\n"+
		"is sent as its SHA-256 hash; the switch never stores or shows it.",
		"  flare jobs register --secret-file /etc/flare/admin-secret --job 4711 --token \"$TOKEN\" --world 4 --memory 64MiB --source 10.0.0.0/24\n"+
			"  flare jobs register --secret-file s --job 4711 --token-sha256 \"$HASH\" --world 4 --memory 1GiB --source 10.0.0.0/24,fd00::/64 --replace\n", stdout)
	a := addAdminFlags(fs)
	job := fs.Uint32("job", 0, "job id (required)")
	token := fs.Uint64("token", 0, "the job's token, as its hosts' --token")
	hash := fs.String("token-sha256", "", "instead of --token: the hex SHA-256 of the token's 8 bytes in network byte order")
	world := fs.Int("world", 0, "members that join this switch: the hosts' world (required)")
	memory := fs.String("memory", "", "the most the job may hold on the switch, e.g. 64MiB (required)")
	sources := fs.StringSlice("source", nil, "prefixes the members may join from, CIDR or one address; repeat or comma-separate (required)")
	replace := fs.Bool("replace", false, "replace the job's registration if it has one (a changed grant ends the job if it runs)")
	c, err := a.client(fs, args)
	if err != nil {
		return err
	}
	g := swtch.JobGrant{Job: *job, TokenSHA256: *hash, World: *world, Sources: *sources}
	switch {
	case !fs.Changed("job"):
		return usageError(fs, "--job is required")
	case fs.Changed("token") == (*hash != ""):
		return usageError(fs, "give the job's token with --token or --token-sha256 (one of them)")
	case *memory == "":
		return usageError(fs, "--memory is required: the most the job may hold on the switch, e.g. 64MiB")
	}
	if fs.Changed("token") {
		g.TokenSHA256 = swtch.TokenSHA256(*token)
	}
	if g.MemoryCapBytes, err = parseSize(*memory); err != nil {
		return flagError("--memory", err)
	}
	r, err := c.Register(ctx, g, *replace)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "job %d registered: world %d, memory cap %s, sources %s (%s)\n", r.Job, r.World, units.FormatSize(r.MemoryCapBytes), strings.Join(r.Sources, ","), r.State)
	return nil
}

func runJobsList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("jobs list", "List the jobs registered on a switch and the state of each: registered (nobody joined),\n"+
		"joining (some members joined) or running; never their tokens.", "  flare jobs list --secret-file /etc/flare/admin-secret\n", stdout)
	a := addAdminFlags(fs)
	asJSON := fs.Bool("json", false, "print the switch's JSON answer")
	c, err := a.client(fs, args)
	if err != nil {
		return err
	}
	l, err := c.List(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(l)
	}
	fmt.Fprintf(stdout, "admission %s, %d jobs registered\n", l.Admission, len(l.Jobs))
	if len(l.Jobs) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tWORLD\tMEMORY CAP\tSOURCES\tSTATE\tJOINED\tHELD")
	for _, j := range l.Jobs {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%d\t%s\n", j.Job, j.World, units.FormatSize(j.MemoryCapBytes), strings.Join(j.Sources, ","), j.State, j.Joined, units.HumanBytes(j.HeldBytes))
	}
	return tw.Flush()
}

func runJobsDelete(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("jobs delete", "Unregister a job: it can no longer be joined, and if it runs it ends at once (its\n"+
		"buffers return and its members get an error saying so).", "  flare jobs delete --secret-file /etc/flare/admin-secret --job 4711\n", stdout)
	a := addAdminFlags(fs)
	job := fs.Uint32("job", 0, "job id (required)")
	c, err := a.client(fs, args)
	if err != nil {
		return err
	}
	if !fs.Changed("job") {
		return usageError(fs, "--job is required")
	}
	d, err := c.Delete(ctx, *job)
	if err != nil {
		return err
	}
	if d.Ended {
		fmt.Fprintf(stdout, "job %d unregistered; it was running and has ended\n", d.Job)
	} else {
		fmt.Fprintf(stdout, "job %d unregistered\n", d.Job)
	}
	return nil
}
