package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The hostile-client suite (issue 13, item 7): a `flare switch` process
// per attack, attacked with well-formed packets crafted with the wire
// package from raw loopback sockets, as a stranger or a misbehaving
// member would send them. After each attack: the daemon is alive,
// /healthz answers 200, its peak resident set stays under hostileRSSBound,
// and a normal job then runs, every element checked. Each attack also
// asserts what must hold of the switch's answer (a huge join is refused
// with an error, a wrong token is not answered, a forged result is not
// taken). The suite prints a table (attack, what the switch answered, the
// drop counters that moved, RSS peak, the normal job) with t.Log, and
// writes it as markdown to -hostile.table=PATH or $FLARE_HOSTILE_TABLE.

var hostileTablePath = flag.String("hostile.table", "", "write the hostile suite's table as markdown to this file")

// hostileRSSBound is the peak resident set the daemon may reach under any
// attack. A started daemon with this suite's flags (--l1 4MiB on 4
// clusters) sits at 20-60 MiB (more under -race); the normal job adds a
// few MiB. The issue asks for a memory budget whose default is safe on a
// small box, so no single datagram, and no pile of half-joins, may make
// the daemon hold more than a small VM can spare: 512 MiB leaves room for
// a default budget of a few hundred MiB plus the Go runtime's slack, and
// is well under what today's worst single join takes (1.3 GiB, issue 13).
const hostileRSSBound = 512 << 20

// hostileRSSKill is where the test kills a daemon whose attack worked,
// before it takes the shared test machine's memory with it.
const hostileRSSKill = 2 << 30

// hostileAttack is one row of the suite.
type hostileAttack struct {
	name string
	args []string // extra `flare switch` flags
	run  func(t *testing.T, d *daemon) attackOutcome
}

// attackOutcome is what an attack saw: the switch's answers (or, for an
// attack on a host, the host's view) and the properties that failed.
type attackOutcome struct {
	answered string
	counters string // what the host counted, for attacks on a host (the daemon's drops otherwise)
	failed   []string
}

func (o *attackOutcome) fail(format string, args ...any) {
	o.failed = append(o.failed, fmt.Sprintf(format, args...))
}

// hostileRow is one line of the table.
type hostileRow struct {
	attack, answered, drops, rss, daemon, normal, verdict string
}

func TestHostile(t *testing.T) {
	start := time.Now()
	var mu sync.Mutex
	var rows []hostileRow
	for i, a := range hostileAttacks() {
		t.Run(a.name, func(t *testing.T) {
			row := runAttack(t, a, uint32(7_000_000+i))
			mu.Lock()
			rows = append(rows, row)
			mu.Unlock()
			writeHostileTable(t, rows, time.Since(start)) // after every row: a crash still leaves the ones before
		})
	}
	t.Logf("hostile suite, %v, RSS bound %d MiB:\n%s", time.Since(start).Round(time.Millisecond), hostileRSSBound>>20, hostileTable(rows))
}

// runAttack starts a daemon, runs one attack on it and checks the
// daemon after it.
func runAttack(t *testing.T, a hostileAttack, normalID uint32) hostileRow {
	d := startDaemon(t, a.args...)
	watch := watchMemory(d, hostileRSSKill)
	before := scrape(t, d)
	out := a.run(t, d)
	row := hostileRow{attack: a.name, answered: out.answered, drops: out.counters}
	if row.drops == "" {
		row.drops = settledDrops(d, before)
	}
	failed := out.failed
	row.daemon, failed = checkDaemon(d, failed)
	peak := watch.finish()
	row.rss = fmt.Sprintf("%d MiB", peak>>20)
	switch {
	case watch.killed.Load():
		row.rss = fmt.Sprintf("> %d MiB (killed by the test)", hostileRSSKill>>20)
		failed = append(failed, fmt.Sprintf("resident set passed %d MiB: the test killed the daemon", hostileRSSKill>>20))
	case peak > hostileRSSBound:
		failed = append(failed, fmt.Sprintf("peak resident set %d MiB, over the bound of %d MiB", peak>>20, hostileRSSBound>>20))
	}
	row.normal = "not run (daemon dead)"
	if d.alive() {
		if what, err := normalJob(d, normalID); err != nil {
			row.normal = "FAILED: " + shorten(err.Error(), 160)
			failed = append(failed, "normal job after the attack: "+err.Error())
		} else {
			row.normal = what
		}
	}
	row.verdict = "pass"
	if len(failed) > 0 {
		row.verdict = "FAIL: " + shorten(strings.Join(failed, "; "), 300)
		for _, f := range failed {
			t.Error(f)
		}
		t.Logf("daemon log tail:\n%s", logTail(d.log.String(), 30))
	}
	t.Logf("answered: %s | drops: %s | RSS peak %s | %s | normal job: %s", row.answered, row.drops, row.rss, row.daemon, row.normal)
	return row
}

// settledDrops waits until the daemon's drop counters stop moving (the
// reader may still be taking the attack's last datagrams; at most 2 s)
// and lists the reasons that moved since before.
func settledDrops(d *daemon, before metrics) string {
	last := ""
	waitUntil(2*time.Second, func() bool {
		m, err := tryScrape(d)
		if err != nil {
			return true
		}
		_, moved := m.drops(before)
		same := moved == last
		last = moved
		time.Sleep(20 * time.Millisecond)
		return same
	})
	if _, err := tryScrape(d); err != nil {
		return "— (no /metrics)"
	}
	return orNone(last)
}

// checkDaemon checks that the daemon is alive, answers /healthz and
// logged no crash or race, and describes it.
func checkDaemon(d *daemon, failed []string) (string, []string) {
	code, herr := d.healthz()
	state := "alive, /healthz 200"
	switch {
	case !d.alive():
		state = "dead: " + daemonDeath(d)
	case herr != nil || code != 200:
		state = fmt.Sprintf("alive, /healthz %d %v", code, herr)
	}
	if state != "alive, /healthz 200" {
		failed = append(failed, "daemon: "+state)
	}
	if bad := daemonComplaint(d.log.String()); bad != "" && d.alive() {
		failed = append(failed, "daemon log: "+bad)
		state += "; log: " + shorten(bad, 80)
	}
	return state, failed
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// daemonDeath describes how the daemon process ended: its exit status and
// the first line of a Go crash report in its log.
func daemonDeath(d *daemon) string {
	var status string
	select {
	case err := <-d.done:
		d.done <- err
		status = fmt.Sprint(err)
	case <-time.After(2 * time.Second):
		status = "not exited"
	}
	if c := daemonComplaint(d.log.String()); c != "" {
		return status + ": " + shorten(c, 160)
	}
	return status
}

// daemonComplaint finds the first line of a crash report in the
// daemon's log, else of a race report ("" if none).
func daemonComplaint(log string) string {
	lines := strings.Split(log, "\n")
	for _, prefixes := range [][]string{{"panic: ", "fatal error: "}, {"WARNING: DATA RACE"}} {
		for _, line := range lines {
			for _, p := range prefixes {
				if strings.HasPrefix(line, p) {
					return strings.TrimSpace(line) + crashSite(log, line)
				}
			}
		}
	}
	return ""
}

// crashSite appends the first frame in the project's code after a crash
// line, for the table (" in handlers.(*Dense).multi, dense.go:428").
func crashSite(log, line string) string {
	lines := strings.Split(log[strings.Index(log, line)+len(line):], "\n")
	for i, l := range lines {
		_, fn, ok := strings.Cut(l, "github.com/flare-net/flare/")
		if !ok || i+1 == len(lines) || strings.HasPrefix(l, "\t") {
			continue
		}
		if j := strings.LastIndexByte(fn, '('); j > 0 && strings.HasSuffix(fn, ")") {
			fn = fn[:j]
		}
		at := strings.Fields(lines[i+1])
		if len(at) == 0 {
			return " in " + fn
		}
		return " in " + fn + ", " + filepath.Base(at[0])
	}
	return ""
}

func logTail(log string, n int) string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// hostileTable renders the rows as a markdown table.
func hostileTable(rows []hostileRow) string {
	var b strings.Builder
	b.WriteString("| attack | what the switch answered | drops (/metrics) or the host's counters | RSS peak | daemon | normal job after | verdict |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	cell := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", "\\|"), "\n", " ") }
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", cell(r.attack), cell(r.answered), cell(r.drops), cell(r.rss),
			cell(r.daemon), cell(r.normal), cell(r.verdict))
	}
	return b.String()
}

// writeHostileTable writes the table so far where -hostile.table or
// $FLARE_HOSTILE_TABLE asks.
func writeHostileTable(t *testing.T, rows []hostileRow, took time.Duration) {
	path := *hostileTablePath
	if path == "" {
		path = os.Getenv("FLARE_HOSTILE_TABLE")
	}
	if path == "" {
		return
	}
	head := fmt.Sprintf("Hostile-client suite (cmd/flare TestHostile), %d attacks in %v, RSS bound %d MiB.\n\n", len(rows), took.Round(time.Millisecond), hostileRSSBound>>20)
	if err := os.WriteFile(path, []byte(head+hostileTable(rows)), 0o644); err != nil {
		t.Errorf("writing the table: %v", err)
	}
}
