package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// flare with no command, help, -h or --help lists every command with its
// summary, in name order, on stdout; --version is the version command;
// an unknown command is an error, with a suggestion where one is close
// and the list on stderr where none is.
func TestTopLevel(t *testing.T) {
	var want strings.Builder
	want.WriteString("usage: flare <command> [flags]\n\ncommands:\n")
	cmds := commands()
	for _, name := range []string{"allreduce", "bench", "decode", "demo", "jobs", "model", "sim", "switch", "testbed", "token", "version"} {
		fmt.Fprintf(&want, "  %-10s %s\n", name, cmds[name].summary)
	}
	want.WriteString("\nRun 'flare <command> --help' for a command's flags.\n")
	if len(cmds) != 11 {
		t.Fatalf("%d commands: the list above names 11", len(cmds))
	}
	for _, args := range [][]string{nil, {"help"}, {"-h"}, {"--help"}} {
		var out, errb strings.Builder
		if err := run(context.Background(), args, &out, &errb); err != nil || out.String() != want.String() || errb.Len() > 0 {
			t.Errorf("flare %v: %v, stdout\n%s\nstderr %q", args, err, out.String(), errb.String())
		}
	}
	var out strings.Builder
	if err := run(context.Background(), []string{"--version"}, &out, io.Discard); err != nil || !strings.HasPrefix(out.String(), "flare ") || !strings.Contains(out.String(), "(commit ") {
		t.Errorf("flare --version: %v, %q", err, out.String())
	}
	var errb strings.Builder
	out.Reset()
	err := run(context.Background(), []string{"zzz"}, &out, &errb)
	if err == nil || err.Error() != `unknown command "zzz" (see 'flare --help')` || errb.String() != want.String() || out.Len() > 0 {
		t.Errorf("flare zzz: %v, stdout %q, stderr\n%s", err, out.String(), errb.String())
	}
	errb.Reset()
	err = run(context.Background(), []string{"benhc"}, &out, &errb)
	if err == nil || err.Error() != `unknown command "benhc"; did you mean "bench"? (see 'flare --help')` || errb.Len() > 0 {
		t.Errorf("flare benhc: %v, stderr %q", err, errb.String())
	}
}

// The binary exits 0 on --help and 1 on an error, which it prints after
// "flare:" on stderr.
func TestExitStatus(t *testing.T) {
	if out, err := exec.Command(flareBin, "token", "--help").CombinedOutput(); err != nil || !strings.Contains(string(out), "usage: flare token") {
		t.Errorf("flare token --help: %v\n%s", err, out)
	}
	cmd := exec.Command(flareBin, "token", "extra")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || stderr.String() != "flare: token: takes no arguments (see 'flare token --help')\n" {
		t.Errorf("flare token extra: %v, stderr %q", err, stderr.String())
	}
}
