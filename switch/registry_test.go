package swtch

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flare-net/flare/wire"
)

const testSecret = "0123456789abcdef-test-secret"

// writeSecret writes a secret file of the given mode and returns its path.
func writeSecret(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "admin-secret")
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	return p
}

// registeredSwitch is a switch in registered mode, built but not run: its
// joins and admin requests are driven directly, and what it sends is read
// from its egress queue.
func registeredSwitch(t *testing.T) *Switch {
	t.Helper()
	s, err := New(Config{Listen: "127.0.0.1:0", Admin: "127.0.0.1:0", Admission: AdmissionRegistered,
		AdminSecretFile: writeSecret(t, testSecret+"\n", 0o600), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRegistryParseGrant(t *testing.T) {
	good := func() JobGrant {
		return JobGrant{Job: 7, Token: "4711", World: 2, MemoryCapBytes: 1 << 20, Sources: []string{"10.0.0.0/24"}}
	}
	for _, tc := range []struct {
		name string
		edit func(g *JobGrant)
		want string
	}{
		{"no token", func(g *JobGrant) { g.Token = "" }, `"token" or "token_sha256": the job's token is required`},
		{"both tokens", func(g *JobGrant) { g.TokenSHA256 = TokenSHA256(4711) }, `give one of them, not both`},
		{"token not a number", func(g *JobGrant) { g.Token = "-1" }, `"token" "-1": want the job's token, a decimal integer in 0..18446744073709551615`},
		{"token too big", func(g *JobGrant) { g.Token = "18446744073709551616" }, `"token" "18446744073709551616"`},
		{"hash short", func(g *JobGrant) { g.Token, g.TokenSHA256 = "", "abcd" }, `"token_sha256" "abcd": want 64 hex digits`},
		{"world 0", func(g *JobGrant) { g.World = 0 }, fmt.Sprintf(`"world" 0: must be in 1..%d`, maxGrantWorld)},
		{"world big", func(g *JobGrant) { g.World = maxGrantWorld + 1 }, fmt.Sprintf(`"world" %d: must be in 1..%d`, maxGrantWorld+1, maxGrantWorld)},
		{"no cap", func(g *JobGrant) { g.MemoryCapBytes = 0 }, `"memory_cap_bytes" 0: must be in 1..1099511627776`},
		{"cap past the bound", func(g *JobGrant) { g.MemoryCapBytes = 1<<40 + 1 }, `"memory_cap_bytes" 1099511627777: must be in 1..1099511627776`},
		{"too many sources", func(g *JobGrant) { g.Sources = slices.Repeat([]string{"10.0.0.0/24"}, 257) }, `"sources": 257 prefixes: give 1..256`},
		{"no sources", func(g *JobGrant) { g.Sources = nil }, `"sources": 0 prefixes: give 1..256 (0.0.0.0/0 and ::/0 allow any source)`},
		{"bad source", func(g *JobGrant) { g.Sources = []string{"10.0.0.0/33"} }, `"sources": "10.0.0.0/33": want a CIDR prefix`},
		{"host bits", func(g *JobGrant) { g.Sources = []string{"10.0.0.1/24"} }, `"sources": "10.0.0.1/24" has bits set past the prefix length: did you mean 10.0.0.0/24?`},
		{"zone", func(g *JobGrant) { g.Sources = []string{"fe80::1%eth0"} }, `"sources": "fe80::1%eth0": want a CIDR prefix`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := good()
			tc.edit(&g)
			_, err := parseGrant(&g)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	g := good()
	g.Sources = slices.Repeat([]string{"fd00::/64", "10.0.0.0/24", "192.168.1.7", "::ffff:10.1.0.0/112", "::ffff:10.2.0.1", "10.0.0.0/24"}, 256/6)
	p, err := parseGrant(&g)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(p.sourceStrings(), " "), "10.0.0.0/24 10.1.0.0/16 10.2.0.1/32 192.168.1.7/32 fd00::/64"; got != want {
		t.Errorf("sources %q, want %q (sorted, deduplicated, mapped ones unmapped; 252 given)", got, want)
	}
	for _, tc := range []struct {
		from string
		ok   bool
	}{{"10.0.0.200", true}, {"::ffff:10.0.0.5", true}, {"10.1.255.1", true}, {"192.168.1.7", true}, {"192.168.1.8", false}, {"10.2.0.1", true}, {"10.2.0.2", false},
		{"10.0.1.1", false}, {"fd00::9", true}, {"fd01::9", false}} {
		if got := p.allows(netip.MustParseAddr(tc.from)); got != tc.ok {
			t.Errorf("allows(%s) = %v, want %v", tc.from, got, tc.ok)
		}
	}
	if !p.tokenIs(4711) || p.tokenIs(4712) {
		t.Error("the grant's token check does not tell 4711 from 4712")
	}
	g.Token, g.TokenSHA256 = "", TokenSHA256(4711)
	if q, err := parseGrant(&g); err != nil || !q.equal(p) {
		t.Errorf("a grant by the token's hash differs from the grant by the token (%v)", err)
	}
}

// TestRegistryTokenHash pins the hash a launcher computes without flare:
// printf '%016x' 4711 | xxd -r -p | sha256sum.
func TestRegistryTokenHash(t *testing.T) {
	for tok, want := range map[uint64]string{
		0:    "af5570f5a1810b7af78caf4bc70a660f0df51e42baf91d4de5b2328de0e83dfc",
		4711: "751be304c6e917cb9bd8109f3850a85fc434a4e7379376ff7609ac56c5ba7bfd",
	} {
		if got := TokenSHA256(tok); got != want {
			t.Errorf("TokenSHA256(%d) = %s, want %s", tok, got, want)
		}
	}
}

func TestRegistrySecretFile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		path func() string
		want string
	}{
		{"missing", func() string { return filepath.Join(dir, "nope") }, "does not exist: create it with (umask 077;"},
		{"empty", func() string { return writeSecret(t, " \n", 0o600) }, "is empty"},
		{"short", func() string { return writeSecret(t, "short\n", 0o600) }, "a secret of 5 bytes: use at least 16"},
		{"world-readable", func() string { return writeSecret(t, testSecret, 0o644) }, "is readable by every user (mode 0644): chmod o-rwx"},
		{"long", func() string { return writeSecret(t, strings.Repeat("s", 4097), 0o600) }, "holds 4097 bytes: a secret is at most 4096"},
		{"directory", func() string { return dir }, "is not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadSecretFile(tc.path())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	b, err := ReadSecretFile(writeSecret(t, "  "+testSecret+"\n", 0o640))
	if err != nil || string(b) != testSecret {
		t.Errorf("ReadSecretFile = %q, %v; want the secret without its white space", b, err)
	}
}

func TestAdmissionConfig(t *testing.T) {
	secret := writeSecret(t, testSecret, 0o600)
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"unknown mode", Config{Admission: "closed"}, `Config.Admission = "closed": want open or registered`},
		{"registered without secret", Config{Admission: AdmissionRegistered}, "Config.Admission = registered needs Config.AdminSecretFile"},
		{"registered without admin", Config{Admission: AdmissionRegistered, Admin: "off", AdminSecretFile: secret}, "Config.Admission = registered with Config.Admin = off"},
		{"bad secret file", Config{AdminSecretFile: secret + ".missing"}, "Config.AdminSecretFile: " + secret + ".missing does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Listen = "127.0.0.1:0"
			_, err := New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error containing %q", err, tc.want)
			}
		})
	}
	s, err := New(Config{Listen: "127.0.0.1:0"})
	if err != nil || s.registry.mode != AdmissionOpen || s.registry.secret != nil {
		t.Fatalf("the default: %v, mode %q; want open with no secret", err, s.registry.mode)
	}
}

// joinAs sends s a join of job 7 (float32 sum, 1000 elements) as rank of
// world from from, and returns the answers the switch queued.
func joinAs(t *testing.T, s *Switch, from string, token uint64, rank, world int) []sentPacket {
	t.Helper()
	h := wire.Header{Version: wire.Version, Type: wire.TypeJoin, Job: 7, Token: token, Child: uint16(rank), DType: wire.Float32, Op: wire.OpSum}
	b := wire.AppendJoin(nil, &h, &wire.JoinBody{World: uint16(world), Elements: 1000})
	var got wire.Header
	payload, err := got.Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	s.control(netip.MustParseAddrPort(from), &got, payload)
	s.settle() // a join that completes the job acks once its handler is built
	return drainSent(t, s)
}

// sentPacket is one packet the switch queued, decoded; the payload is a
// copy, the send buffer being back on its free list.
type sentPacket struct {
	to      netip.AddrPort
	hdr     wire.Header
	payload []byte
	code    wire.ErrorCode // an Error's
	text    string
}

func drainSent(t *testing.T, s *Switch) []sentPacket {
	t.Helper()
	var out []sentPacket
	for {
		select {
		case op := <-s.outs[0]:
			out = append(out, decodeSentPacket(t, "switch", op.to, op.buf))
		default:
			return out
		}
	}
}

// decodeSentPacket decodes one packet what sent to to: its header, a copy of
// its payload, and an Error's code and text.
func decodeSentPacket(t *testing.T, what string, to netip.AddrPort, b []byte) sentPacket {
	t.Helper()
	p := sentPacket{to: to}
	payload, err := p.hdr.Unmarshal(b)
	if err != nil {
		t.Fatalf("the %s sent a packet that does not decode: %v", what, err)
	}
	p.payload = append([]byte(nil), payload...)
	if p.hdr.Type == wire.TypeError {
		var e wire.ErrorBody
		if err := e.Unmarshal(payload); err != nil {
			t.Fatal(err)
		}
		p.code, p.text = e.Code, e.Message()
	}
	return p
}

func mustRegister(t *testing.T, s *Switch, g JobGrant) {
	t.Helper()
	p, err := parseGrant(&g)
	if err != nil {
		t.Fatal(err)
	}
	if st, _, err := s.register(p, false); err != nil || st != http.StatusCreated {
		t.Fatalf("register: %d %v", st, err)
	}
}

// TestAdmissionJoin checks each refusal a registered switch gives a join:
// answered with an Error naming the reason, counted, and leaving no job
// behind; then the registered join runs.
func TestAdmissionJoin(t *testing.T) {
	s := registeredSwitch(t)
	const member = "10.0.0.1:5000"
	refusal := func(name, from string, token uint64, world int, code wire.ErrorCode, reason, text string) {
		t.Helper()
		before, jobs := s.registry.refusals.get(reason), len(s.jobs.all())
		sent := joinAs(t, s, from, token, 0, world)
		if len(sent) != 1 || sent[0].hdr.Type != wire.TypeError || sent[0].to != netip.MustParseAddrPort(from) {
			t.Fatalf("%s: sent %+v, want one Error to %s", name, sent, from)
		}
		if sent[0].code != code || !strings.Contains(sent[0].text, text) {
			t.Errorf("%s: answered %v %q, want %v containing %q", name, sent[0].code, sent[0].text, code, text)
		}
		if n := len(s.jobs.all()); n != jobs {
			t.Errorf("%s: the refused join left %d jobs in the table, want %d", name, n, jobs)
		}
		if got := s.registry.refusals.get(reason); got != before+1 {
			t.Errorf("%s: refusals{reason=%q} = %d, want %d", name, reason, got, before+1)
		}
	}
	refusal("unregistered", member, 99, 2, wire.CodeUnknownJob, refusedUnregistered, "job 7 is not registered")
	mustRegister(t, s, JobGrant{Job: 7, Token: "99", World: 2, MemoryCapBytes: 1 << 30, Sources: []string{"10.0.0.0/24"}})
	refusal("source", "10.0.1.1:5000", 99, 2, wire.CodeBadRequest, refusedSource, "joined from 10.0.1.1, outside the sources registered for the job")
	refusal("token", member, 98, 2, wire.CodeJobMismatch, refusedToken, "a token that is not the job's registered token")
	refusal("world", member, 99, 3, wire.CodeJobMismatch, refusedWorld, "joined with world 3; the job is registered with world 2")

	if sent := joinAs(t, s, member, 99, 0, 2); len(sent) != 0 {
		t.Fatalf("rank 0's registered join answered %+v, want nothing until rank 1 joins", sent)
	}
	refusal("token of a pending job", "10.0.0.2:5000", 98, 2, wire.CodeJobMismatch, refusedToken, "not the job's registered token")
	if j := s.jobs.get(7); j == nil || len(j.pend) != 1 {
		t.Fatal("the refused join disturbed the pending job")
	}
	sent := joinAs(t, s, "10.0.0.2:5000", 99, 1, 2)
	if len(sent) != 2 || sent[0].hdr.Type != wire.TypeJoinAck || sent[1].hdr.Type != wire.TypeJoinAck {
		t.Fatalf("the last join answered %+v, want an ack to each member", sent)
	}
	list := s.listJobs()
	if len(list.Jobs) != 1 || list.Jobs[0].State != stateRunning || list.Jobs[0].Joined != 2 || list.Jobs[0].HeldBytes <= 0 {
		t.Errorf("GET /v1/jobs = %+v, want job 7 running with 2 members and its quota", list)
	}
}

// TestAdmissionMemoryCap: a job whose aggregation buffers exceed its
// registration's cap is refused when its last member joins, with the
// numbers, and gives its buffers back.
func TestAdmissionMemoryCap(t *testing.T) {
	s := registeredSwitch(t)
	mustRegister(t, s, JobGrant{Job: 7, Token: "99", World: 2, MemoryCapBytes: 1024, Sources: []string{"10.0.0.0/8"}})
	joinAs(t, s, "10.0.0.1:5000", 99, 0, 2)
	sent := joinAs(t, s, "10.0.0.2:5000", 99, 1, 2)
	if len(sent) != 2 || sent[0].code != wire.CodeRefusedMemory || sent[1].code != wire.CodeRefusedMemory || sent[0].to == sent[1].to {
		t.Fatalf("sent %+v, want a refused-memory Error to each rank", sent)
	}
	// 1000 float32 elements = 4 blocks of 1 KiB: window 4, a quota of 4
	// blocks of 2 buffers (single buffer: the aggregate and the result),
	// and the job's host memory (its stored results and block table).
	want := "bytes of host memory and 8 aggregation buffers of 1024 bytes for a window of 4 blocks); its registration caps it at 1024 bytes (memory_cap_bytes)"
	if !strings.Contains(sent[0].text, want) {
		t.Errorf("refusal %q, want it to contain %q", sent[0].text, want)
	}
	if s.jobs.get(7) != nil {
		t.Error("the refused job is still in the table")
	}
	waitTeardowns(t, s)
	if m := s.unit.Memory(); m.InUse() != 0 || m.Free() != m.Total() {
		t.Errorf("after the refused job ended: %d buffers in use, %d of %d free; want none held", m.InUse(), m.Free(), m.Total())
	}
	if got := s.registry.refusals.get(refusedMemoryCap); got != 1 {
		t.Errorf("refusals{reason=memory-cap} = %d, want 1", got)
	}
}

// adminDo sends one request to s's admin handler.
func adminDo(t *testing.T, h http.Handler, method, path, bearer, body string) (int, string, http.Header) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if bearer != "" {
		req.Header.Set("Authorization", bearer)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String(), rec.Header()
}

func TestAdmissionHTTPAuth(t *testing.T) {
	reg := registeredSwitch(t).adminHandler()
	open, err := New(Config{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	openHandler := open.adminHandler()
	const grant = `{"job": 7, "token": "99", "world": 2, "memory_cap_bytes": 1048576, "sources": ["10.0.0.0/24"]}`
	for _, tc := range []struct {
		name                 string
		h                    http.Handler
		method, path, bearer string
		want                 int
		text                 string
	}{
		{"register without bearer", reg, "POST", "/v1/jobs", "", 401, "missing bearer secret"},
		{"register with a wrong bearer", reg, "POST", "/v1/jobs", "Bearer " + testSecret + "x", 401, "wrong bearer secret"},
		{"register with basic auth", reg, "POST", "/v1/jobs", "Basic " + testSecret, 401, "missing bearer secret"},
		{"register with an empty bearer", reg, "POST", "/v1/jobs", "Bearer  ", 401, "missing bearer secret"},
		{"replace without bearer", reg, "PUT", "/v1/jobs", "", 401, "missing bearer secret"},
		{"delete without bearer", reg, "DELETE", "/v1/jobs/7", "", 401, "missing bearer secret"},
		{"list without bearer", reg, "GET", "/v1/jobs", "", 401, "missing bearer secret"},
		{"a write to /metrics", reg, "POST", "/metrics", "", 401, "missing bearer secret"},
		{"a write to a path that is not there", reg, "PATCH", "/nothing", "", 401, "missing bearer secret"},
		{"pprof once there is a secret", reg, "GET", "/debug/pprof/", "", 401, "missing bearer secret"},
		{"an unclean path to the API", reg, "GET", "/metrics/../v1/jobs", "", 401, "missing bearer secret"},
		{"metrics stay open", reg, "GET", "/metrics", "", 200, "flare_registered_jobs"},
		{"healthz stays open", reg, "GET", "/healthz", "", 200, "ok"},
		{"open mode takes no writes without a secret", openHandler, "POST", "/v1/jobs", "Bearer " + testSecret, 401, "start it with Config.AdminSecretFile"},
		{"open mode keeps pprof open without a secret", openHandler, "GET", "/debug/pprof/", "", 200, "goroutine"},
		{"the CPU profile (go tool pprof's default)", openHandler, "GET", "/debug/pprof/profile?seconds=1", "", 200, ""},
		{"the command line", openHandler, "GET", "/debug/pprof/cmdline", "", 200, ""},
		{"the right bearer", reg, "POST", "/v1/jobs", "bearer " + testSecret, 201, `"state": "registered"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body, hdr := adminDo(t, tc.h, tc.method, tc.path, tc.bearer, grant)
			if code != tc.want || !strings.Contains(body, tc.text) {
				t.Errorf("%s %s: %d %q, want %d containing %q", tc.method, tc.path, code, body, tc.want, tc.text)
			}
			if code == 401 && hdr.Get("WWW-Authenticate") == "" {
				t.Error("a 401 without WWW-Authenticate")
			}
		})
	}
	secret := writeSecret(t, testSecret, 0o600)
	openSecret, err := New(Config{Listen: "127.0.0.1:0", AdminSecretFile: secret})
	if err != nil {
		t.Fatal(err)
	}
	code, body, _ := adminDo(t, openSecret.adminHandler(), "POST", "/v1/jobs", "Bearer "+testSecret, grant)
	if code != http.StatusConflict || !strings.Contains(body, "Config.Admission open") {
		t.Errorf("an authorized registration on an open switch: %d %q, want 409 naming Config.Admission open", code, body)
	}
}

// TestAdmissionHTTPJobs walks the API: register, refuse a duplicate and a
// bad field, list without tokens, replace, delete a running job (it ends
// and its members are told), and 404 for what is not there.
func TestAdmissionHTTPJobs(t *testing.T) {
	s := registeredSwitch(t)
	h := s.adminHandler()
	auth := "Bearer " + testSecret
	do := func(method, path, body string, want int, text string) string {
		t.Helper()
		code, got, _ := adminDo(t, h, method, path, auth, body)
		var e adminErrorBody
		if code >= 400 && json.Unmarshal([]byte(got), &e) == nil {
			got = e.Error
		}
		if code != want || !strings.Contains(got, text) {
			t.Fatalf("%s %s: %d %q, want %d containing %q", method, path, code, got, want, text)
		}
		return got
	}
	const grant = `{"job": 7, "token": "12345678901234567890", "world": 2, "memory_cap_bytes": 1048576, "sources": ["10.0.0.0/24"]}`
	do("POST", "/v1/jobs", grant, 201, `"job": 7`)
	do("POST", "/v1/jobs", grant, 409, "job 7 is registered already: PUT /v1/jobs replaces a registration")
	do("POST", "/v1/jobs", `{"job": 8, "token": "1", "world": 0, "memory_cap_bytes": 1, "sources": ["::/0"]}`, 400, `"world" 0: must be in 1..`)
	do("POST", "/v1/jobs", `{"job": 8, "token": "1", "wrold": 2}`, 400, `unknown field "wrold"`)
	do("POST", "/v1/jobs", `{"job": "8"}`, 400, `"job": a JSON string where a uint32 belongs`)
	do("POST", "/v1/jobs", grant+grant, 400, "want one JSON object")
	do("POST", "/v1/jobs", `{"job": 9, "token": 18446744073709551615, "world": 1, "memory_cap_bytes": 1048576, "sources": ["0.0.0.0/0"]}`, 201, `"job": 9`)

	list := do("GET", "/v1/jobs", "", 200, `"admission": "registered"`)
	for _, secret := range []string{"12345678901234567890", "18446744073709551615", TokenSHA256(12345678901234567890), "token"} {
		if strings.Contains(list, secret) {
			t.Errorf("GET /v1/jobs shows %q: %s", secret, list)
		}
	}
	var jl JobList
	if err := json.Unmarshal([]byte(list), &jl); err != nil || len(jl.Jobs) != 2 || jl.Jobs[0].Job != 7 || jl.Jobs[1].Job != 9 {
		t.Fatalf("GET /v1/jobs = %+v (%v), want jobs 7 and 9 in order", jl, err)
	}

	do("DELETE", "/v1/jobs/4294967303", "", 400, `job id "4294967303": want a decimal integer in 0..4294967295`) // 2^32 + 7: not job 7

	// Job 7 runs; the same grant again leaves it running, another ends it.
	const tok = 12345678901234567890
	joinAs(t, s, "10.0.0.1:5000", tok, 0, 2)
	if sent := joinAs(t, s, "10.0.0.2:5000", tok, 1, 2); len(sent) != 2 {
		t.Fatalf("job 7 was not admitted: %+v", sent)
	}
	do("PUT", "/v1/jobs", grant, 200, `"state": "running"`)
	if s.jobs.get(7) == nil || len(drainSent(t, s)) != 0 {
		t.Fatal("re-registering the same grant disturbed the running job")
	}
	do("PUT", "/v1/jobs", strings.Replace(grant, "1048576", "2097152", 1), 200, `"state": "registered"`)
	checkEnded(t, s, "the operator registered it again with another grant")

	joinAs(t, s, "10.0.0.1:5000", tok, 0, 2)
	joinAs(t, s, "10.0.0.2:5000", tok, 1, 2)
	do("DELETE", "/v1/jobs/7", "", 200, `"ended": true`)
	checkEnded(t, s, "the operator unregistered it (DELETE /v1/jobs/7)")
	if sent := joinAs(t, s, "10.0.0.1:5000", tok, 0, 2); len(sent) != 1 || sent[0].code != wire.CodeUnknownJob {
		t.Errorf("a join after DELETE answered %+v, want not registered", sent)
	}
	do("DELETE", "/v1/jobs/7", "", 404, "job 7 is not registered")
	do("DELETE", "/v1/jobs/9", "", 200, `"ended": false`)
	do("DELETE", "/v1/jobs/x", "", 400, `job id "x": want a decimal integer`)
	if n := s.registry.count.Load(); n != 0 {
		t.Errorf("flare_registered_jobs = %d after deleting both, want 0", n)
	}
}

// The switch holds at most maxGrants registrations: one more is refused,
// by name, while a registered job can still be replaced.
func TestAdmissionRegistrationsBounded(t *testing.T) {
	s := registeredSwitch(t)
	g, err := parseGrant(&JobGrant{Token: "1", World: 2, MemoryCapBytes: 1 << 20, Sources: []string{"10.0.0.0/24"}})
	if err != nil {
		t.Fatal(err)
	}
	for id := range uint32(maxGrants) {
		gi := *g
		gi.job = id
		if st, _, err := s.register(&gi, false); err != nil || st != http.StatusCreated {
			t.Fatalf("registration %d: %d %v", id, st, err)
		}
	}
	gi := *g
	gi.job = maxGrants
	if st, _, err := s.register(&gi, false); st != http.StatusConflict || err == nil || !strings.Contains(err.Error(), "65536 jobs are registered, the most the switch holds") {
		t.Errorf("registration %d: %d %v, want 409 naming the bound", maxGrants, st, err)
	}
	gi.job, gi.world = 7, 3
	if st, _, err := s.register(&gi, true); err != nil || st != http.StatusOK {
		t.Errorf("replacing job 7 at the bound: %d %v", st, err)
	}
}

// checkEnded checks that job 7 has ended, given its buffers back, and
// told both members why.
func checkEnded(t *testing.T, s *Switch, why string) {
	t.Helper()
	if s.jobs.get(7) != nil {
		t.Fatal("job 7 still runs")
	}
	sent := drainSent(t, s)
	if len(sent) != 2 {
		t.Fatalf("sent %+v, want an Error to each member", sent)
	}
	for i, p := range sent {
		to := netip.MustParseAddrPort([]string{"10.0.0.1:5000", "10.0.0.2:5000"}[i])
		if p.to != to || p.code != wire.CodeUnknownJob || !strings.Contains(p.text, why) || p.hdr.Token != 12345678901234567890 ||
			p.hdr.Child != uint16(i) {
			t.Errorf("sent %+v, want unknown-job to %v, its rank %d, saying %q with the job's token", p, to, i, why)
		}
	}
	waitTeardowns(t, s)
	if n := s.unit.Memory().InUse(); n != 0 {
		t.Errorf("%d buffers in use after job 7 ended, want 0", n)
	}
}
