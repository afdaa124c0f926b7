package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/flare-net/flare/internal/inproctest"
	swtch "github.com/flare-net/flare/switch"
)

// TestJobsCommand drives `flare jobs register|list|delete` against an
// in-process switch with --admission registered.
func TestJobsCommand(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("jobs-cli-secret-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sw, err := inproctest.Group(t).Switch(swtch.Config{Admin: "127.0.0.1:0", Admission: swtch.AdmissionRegistered, AdminSecretFile: secret})
	if err != nil {
		t.Fatal(err)
	}
	admin := sw.AdminAddr().String()

	jobs := func(args ...string) (string, error) {
		t.Helper()
		var out bytes.Buffer
		err := run(context.Background(), append([]string{"jobs"}, args...), &out, io.Discard)
		return out.String(), err
	}
	ok := func(want string, args ...string) {
		t.Helper()
		out, err := jobs(args...)
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("flare jobs %s: %q, %v; want output containing %q", strings.Join(args, " "), out, err, want)
		}
	}
	fails := func(want string, args ...string) {
		t.Helper()
		_, err := jobs(args...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("flare jobs %s: %v; want an error containing %q", strings.Join(args, " "), err, want)
		}
	}
	conn := []string{"--admin", admin, "--secret-file", secret}
	reg := append([]string{"register"}, conn...)
	reg = append(reg, "--job", "4711", "--token", "12345678901234567890", "--world", "4", "--memory", "64MiB", "--source", "10.0.0.0/24,fd00::/64")

	ok("job 4711 registered: world 4, memory cap 64MiB, sources 10.0.0.0/24,fd00::/64 (registered)", reg...)
	fails("409 Conflict: job 4711 is registered already", reg...)
	ok("job 4711 registered", append(reg, "--replace")...)
	out, err := jobs(append([]string{"list"}, conn...)...)
	if err != nil || !strings.Contains(out, "admission registered, 1 jobs registered") ||
		!regexp.MustCompile(`(?m)^4711\s+4\s+64MiB\s+10\.0\.0\.0/24,fd00::/64\s+registered\s+0\s`).MatchString(out) || strings.Contains(out, "12345678901234567890") {
		t.Fatalf("flare jobs list: %q, %v; want job 4711 registered, without its token", out, err)
	}
	ok(`"memory_cap_bytes": 67108864`, append([]string{"list", "--json"}, conn...)...)
	ok("job 4711 unregistered\n", append([]string{"delete", "--job", "4711"}, conn...)...)
	fails("404 Not Found: job 4711 is not registered", append([]string{"delete", "--job", "4711"}, conn...)...)
	ok("admission registered, 0 jobs registered", append([]string{"list"}, conn...)...)

	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte("not-the-switch-secret-42"), 0o600); err != nil {
		t.Fatal(err)
	}
	fails("401 Unauthorized: wrong bearer secret", "list", "--admin", admin, "--secret-file", other)
	open := filepath.Join(dir, "open")
	if err := os.WriteFile(open, []byte("jobs-cli-secret-0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	fails("--secret-file: "+open+" is readable by every user", "list", "--admin", admin, "--secret-file", open)
	fails("--secret-file is required", "list", "--admin", admin)
	fails("give the job's token with --token or --token-sha256", append([]string{"register"}, append(conn, "--job", "1", "--world", "1", "--memory", "1MiB", "--source", "::/0")...)...)
	fails(`"sources": "10.0.0.1/24" has bits set past the prefix length`, append([]string{"register"}, append(conn, "--job", "1", "--token", "1", "--world", "1", "--memory", "1MiB", "--source", "10.0.0.1/24")...)...)
	fails(`unknown subcommand "lsit"; did you mean "list"?`, "lsit")

	// Each required flag by name, a token given twice, a stray argument;
	// an empty list prints no table; help in each of its forms.
	for _, tc := range []struct {
		want string
		args []string
	}{
		{"--job is required", []string{"register", "--token", "1", "--world", "1", "--memory", "1MiB", "--source", "::/0"}},
		{"--memory is required", []string{"register", "--job", "1", "--token", "1", "--world", "1", "--source", "::/0"}},
		{"give the job's token with --token or --token-sha256 (one of them)", []string{"register", "--job", "1", "--token", "1", "--token-sha256", strings.Repeat("ab", 32), "--world", "1", "--memory", "1MiB", "--source", "::/0"}},
		{"--job is required", []string{"delete"}},
		{`unexpected argument "4711"`, []string{"delete", "4711"}},
	} {
		fails(tc.want, append(tc.args, conn...)...)
	}
	ok("job 5 registered", append([]string{"register", "--job", "5", "--token", "0", "--world", "1", "--memory", "1MiB", "--source", "::/0"}, conn...)...)
	ok("job 5 unregistered", append([]string{"delete", "--job", "5"}, conn...)...)
	if out, err := jobs(append([]string{"list"}, conn...)...); err != nil || strings.Contains(out, "JOB") {
		t.Errorf("flare jobs list of no jobs: %q, %v; want no table", out, err)
	}
	for _, help := range []string{"help", "--help", "-h"} {
		ok("usage: flare jobs <subcommand> [flags]", help)
	}
}

// TestSwitchAdmissionFlags: a registered switch without a usable secret
// file is refused at start, before it binds a port.
func TestSwitchAdmissionFlags(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--admission", "registered"}, "--admission registered needs --admin-secret-file"},
		{[]string{"--admission", "registered", "--admin-secret-file", secret}, "--admin-secret-file: " + secret + " is empty"},
		{[]string{"--admission", "closed"}, `--admission "closed": want open or registered`},
	} {
		err := run(context.Background(), append([]string{"switch", "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0", "--log-level", "error"}, tc.args...), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("flare switch %s: %v, want an error containing %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}
