package main

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flare-net/flare/hostlib"
)

// rankProc is one `flare allreduce --rank` process.
type rankProc struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	done   chan error
}

// startRanks starts world `flare allreduce --rank` processes of job 77,
// calling until they fail, with the job's token in FLARE_TOKEN, as
// separate hosts are told to; and waits until the job has completed 2000
// blocks.
func startRanks(t *testing.T, d *daemon, world int, args ...string) []*rankProc {
	t.Helper()
	token := strconv.FormatUint(hostlib.NewToken(), 10)
	procs := make([]*rankProc, world)
	for r := range procs {
		p := &rankProc{done: make(chan error, 1)}
		p.cmd = exec.Command(flareBin, append([]string{"allreduce", "--switch", d.data, "--job", "77", "--rank", strconv.Itoa(r), "--world", strconv.Itoa(world),
			"--iters", "100000", "--warmup", "0"}, args...)...)
		p.cmd.Env = append(os.Environ(), tokenEnv+"="+token)
		p.cmd.Stderr = &p.stderr
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { p.done <- p.cmd.Wait() }()
		t.Cleanup(func() { p.cmd.Process.Kill() })
		procs[r] = p
	}
	deadline := time.Now().Add(20 * time.Second)
	for d.metric(t, "flare_blocks_completed_total") < 2000 {
		if time.Now().After(deadline) {
			t.Fatalf("the job did not start\n%s", d.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return procs
}

// waitSurvivors waits for every rank but victim to exit with an error
// that says want, and returns when the last one exited. Each gets limit
// from since.
func waitSurvivors(t *testing.T, procs []*rankProc, victim int, since time.Time, limit time.Duration, want string) time.Time {
	t.Helper()
	var last time.Time
	for r, p := range procs {
		if r == victim {
			continue
		}
		select {
		case err := <-p.done:
			now := time.Now()
			last = now
			took := now.Sub(since)
			msg := p.stderr.String()
			if err == nil {
				t.Fatalf("rank %d exited 0 after rank %d went", r, victim)
			}
			if !strings.Contains(msg, want) {
				t.Errorf("rank %d's error does not say %q: %s", r, want, msg)
			}
			if took > limit {
				t.Errorf("rank %d failed %v after rank %d went, more than %v", r, took, victim, limit)
			}
			t.Logf("rank %d after %v: %s", r, took.Round(100*time.Microsecond), strings.TrimSpace(msg))
		case <-time.After(limit + 10*time.Second):
			t.Fatalf("rank %d still running %v after rank %d went", r, limit+10*time.Second, victim)
		}
	}
	return last
}

// waitIdle waits for the daemon to hold no job and its idle number of
// buffers, at most limit after since.
func (d *daemon) waitIdle(t *testing.T, idle float64, since time.Time, limit time.Duration) {
	t.Helper()
	for d.metric(t, "flare_buffers_in_use") != idle || d.metric(t, "flare_jobs_active") != 0 {
		if time.Since(since) > limit {
			t.Fatalf("buffers in use %v (idle %v), jobs %v, %v after the job failed", d.metric(t, "flare_buffers_in_use"), idle,
				d.metric(t, "flare_jobs_active"), time.Since(since).Round(time.Millisecond))
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("buffers back to %v, jobs 0, %v after the last rank failed", idle, time.Since(since).Round(time.Millisecond))
}

// Kill -9 of one of four host processes mid-allreduce, the daemon with its
// default flags: the first survivor to time out aborts the job for all,
// naming the missing rank, so every survivor fails within its timeout plus
// a second with an error naming it, and the switch gives the job's buffers
// back at once (not after --job-idle).
func TestE2EHostDeath(t *testing.T) {
	d := startDaemon(t)
	idle := d.metric(t, "flare_buffers_in_use")
	const world, victim = 4, 2
	timeout := 3 * time.Second
	procs := startRanks(t, d, world, "--bytes", "4MiB", "--timeout", timeout.String())
	killed := time.Now()
	procs[victim].cmd.Process.Kill()
	<-procs[victim].done
	last := waitSurvivors(t, procs, victim, killed, timeout+time.Second, "stuck block")
	for r, p := range procs {
		if msg := p.stderr.String(); r != victim && !strings.Contains(msg, "every stuck block waits for rank "+strconv.Itoa(victim)+" (") &&
			!strings.Contains(msg, "most stuck blocks wait for rank "+strconv.Itoa(victim)+" (") {
			t.Errorf("rank %d's error does not name rank %d: %s", r, victim, msg)
		}
	}
	d.waitIdle(t, idle, last, time.Second)
}

// Ctrl-C of one of four `flare allreduce --rank` processes: its call is
// cancelled and it aborts the job, so the others fail within about a
// round trip (not at their 30 s timeout) with an error naming it, and the
// switch gives the job's buffers back at once.
func TestE2EHostAbort(t *testing.T) {
	d := startDaemon(t)
	idle := d.metric(t, "flare_buffers_in_use")
	const world, victim = 4, 1
	procs := startRanks(t, d, world, "--bytes", "4MiB", "--timeout", "30s")
	interrupted := time.Now()
	if err := procs[victim].cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := <-procs[victim].done; err == nil || !strings.Contains(procs[victim].stderr.String(), "context canceled") {
		t.Errorf("interrupted rank: %v, %s; want its cancelled call", err, procs[victim].stderr.String())
	}
	// The bound is loose for a loaded machine; the log shows the time.
	last := waitSurvivors(t, procs, victim, interrupted, 5*time.Second, "aborted by rank "+strconv.Itoa(victim)+" (rank "+strconv.Itoa(victim)+": allreduce generation ")
	d.waitIdle(t, idle, last, time.Second)
}

// A switch restarted mid-allreduce: the new daemon answers the hosts'
// packets of the job it does not know, and the hosts fail at once with
// that error (not at their timeout); Join again is the remedy.
func TestE2ESwitchRestart(t *testing.T) {
	d := startDaemon(t)
	timeout := 30 * time.Second
	cmd := exec.Command(flareBin, "allreduce", "--switch", d.data, "--job", "5", "--ranks", "2",
		"--bytes", "256KiB", "--iters", "1000000", "--warmup", "0", "--timeout", timeout.String())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	deadline := time.Now().Add(10 * time.Second)
	for d.metric(t, "flare_blocks_completed_total") < 1000 {
		if time.Now().After(deadline) {
			t.Fatalf("the job did not start\n%s", d.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	d.cmd.Process.Kill()
	<-d.done
	d.done <- nil
	restarted := exec.Command(flareBin, "switch", "--listen", d.data, "--admin", "off")
	if err := restarted.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { restarted.Process.Kill(); restarted.Wait() })
	start := time.Now()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(stderr.String(), "unknown-job") {
			t.Fatalf("allreduce after the restart: %v, %s; want the unknown-job error", err, stderr.String())
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("the hosts noticed the restart after %v", took)
		}
		t.Logf("after %v: %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(stderr.String()))
	case <-time.After(timeout):
		t.Fatal("the hosts did not notice the switch's restart before their timeout")
	}
}
