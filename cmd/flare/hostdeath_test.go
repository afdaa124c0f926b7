package main

import (
	"bytes"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Kill -9 of one host process mid-allreduce: the others fail within their
// timeout plus a second with an error naming the missing rank, and the
// switch gives the job's buffers back (after --job-idle) to their idle
// value.
func TestE2EHostDeath(t *testing.T) {
	d := startDaemon(t, "--job-idle", "2s")
	idle := d.metric(t, "flare_buffers_in_use")
	const world, victim = 3, 2
	timeout := 3 * time.Second
	type proc struct {
		cmd    *exec.Cmd
		stderr bytes.Buffer
		done   chan error
	}
	procs := make([]*proc, world)
	for r := range procs {
		p := &proc{done: make(chan error, 1)}
		p.cmd = exec.Command(flareBin, "allreduce", "--switch", d.data, "--job", "77", "--rank", strconv.Itoa(r), "--world", strconv.Itoa(world),
			"--bytes", "1MiB", "--iters", "100000", "--warmup", "0", "--timeout", timeout.String())
		p.cmd.Stderr = &p.stderr
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { p.done <- p.cmd.Wait() }()
		t.Cleanup(func() { p.cmd.Process.Kill() })
		procs[r] = p
	}
	// Let the job get going, then kill one rank mid-allreduce.
	deadline := time.Now().Add(10 * time.Second)
	for d.metric(t, "flare_blocks_completed_total") < 2000 {
		if time.Now().After(deadline) {
			t.Fatalf("the job did not start\n%s", d.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	killed := time.Now()
	procs[victim].cmd.Process.Kill()
	<-procs[victim].done
	for r, p := range procs {
		if r == victim {
			continue
		}
		select {
		case err := <-p.done:
			took := time.Since(killed)
			msg := p.stderr.String()
			if err == nil {
				t.Fatalf("rank %d exited 0 after rank %d died", r, victim)
			}
			if !strings.Contains(msg, "every stuck block waits for rank "+strconv.Itoa(victim)+" (") &&
				!strings.Contains(msg, "most stuck blocks wait for rank "+strconv.Itoa(victim)+" (") {
				t.Errorf("rank %d's error does not name rank %d: %s", r, victim, msg)
			}
			if took > timeout+time.Second {
				t.Errorf("rank %d failed %v after the kill, more than the timeout %v plus 1 s", r, took, timeout)
			}
			t.Logf("rank %d after %v: %s", r, took.Round(time.Millisecond), strings.TrimSpace(msg))
		case <-time.After(timeout + 5*time.Second):
			t.Fatalf("rank %d still running %v after rank %d died", r, timeout+5*time.Second, victim)
		}
	}
	deadline = time.Now().Add(10 * time.Second)
	for d.metric(t, "flare_buffers_in_use") != idle || d.metric(t, "flare_jobs_active") != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("buffers in use %v (idle %v), jobs %v, 10 s after the job failed", d.metric(t, "flare_buffers_in_use"), idle, d.metric(t, "flare_jobs_active"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("buffers back to %v, jobs 0, %v after the kill", idle, time.Since(killed).Round(time.Millisecond))
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
