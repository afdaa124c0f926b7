package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var soak = flag.Duration("soak", 0, "run TestSoak for this long (make soak: 5m); 0 skips it")

// link joins the namespace to the test's own with a veth pair and returns
// the namespace's address, so the test can reach a daemon's admin port in
// it (the loss rule drops UDP only).
func (ns *lossNS) link(t *testing.T) string {
	t.Helper()
	n := nsSeq.Add(1)
	host, peer := fmt.Sprintf("flv%d%da", os.Getpid()%10000, n), fmt.Sprintf("flv%d%db", os.Getpid()%10000, n)
	subnet := fmt.Sprintf("10.%d.%d", 100+os.Getpid()%100, n%250)
	for _, args := range [][]string{
		{"ip", "link", "add", host, "type", "veth", "peer", "name", peer},
		{"ip", "link", "set", peer, "netns", ns.name},
		{"ip", "addr", "add", subnet + ".1/30", "dev", host},
		{"ip", "link", "set", host, "up"},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	t.Cleanup(func() { exec.Command("ip", "link", "delete", host).Run() })
	ns.must(t, "ip", "addr", "add", subnet+".2/30", "dev", peer)
	ns.must(t, "ip", "link", "set", peer, "up")
	return subnet + ".2"
}

// daemonState reads a daemon's resident memory (after a forced GC) and its
// goroutine count.
func daemonState(t *testing.T, pid int, admin string) (rssKiB, goroutines int) {
	t.Helper()
	get := func(path string) string {
		resp, err := http.Get("http://" + admin + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	get("/debug/pprof/heap?gc=1")
	m := regexp.MustCompile(`goroutine profile: total (\d+)`).FindStringSubmatch(get("/debug/pprof/goroutine?debug=1"))
	if m == nil {
		t.Fatal("no goroutine count in the profile")
	}
	goroutines, _ = strconv.Atoi(m[1])
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	r := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(status)
	if r == nil {
		t.Fatal("no VmRSS")
	}
	rssKiB, _ = strconv.Atoi(string(r[1]))
	return rssKiB, goroutines
}

// TestSoak runs several jobs of mixed sizes and kinds through one daemon
// under 1% kernel-level loss for -soak (make soak: 5 minutes), and checks
// that the daemon's memory stays flat (RSS at the end within 10% of after
// warm-up) and that its goroutines do not grow. Every allreduce verifies.
func TestSoak(t *testing.T) {
	if *soak == 0 {
		t.Skip("a long run: make soak (go test ./cmd/flare -run TestSoak -soak 5m)")
	}
	ns := newLossNS(t, 10)
	nsAddr := ns.link(t)
	admin := nsAddr + ":9470"
	cmd := ns.command(context.Background(), flareBin, "switch", "--listen", "127.0.0.1:7470", "--admin", admin, "--no-offload", "--job-idle", "5s")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		if resp, err := http.Get("http://" + admin + "/healthz"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("daemon not healthy")
		}
		time.Sleep(50 * time.Millisecond)
	}
	workloads := [][]string{
		{"--ranks", "4", "--bytes", "64KiB", "--iters", "50"},
		{"--ranks", "3", "--bytes", "1MiB", "--iters", "10", "--algo", "tree"},
		{"--ranks", "4", "--bytes", "1MiB", "--iters", "10", "--sparse", "--density", "0.01"},
		{"--ranks", "2", "--bytes", "300000", "--iters", "20", "--algo", "multi4", "--dtype", "int32", "--op", "max"},
	}
	end := time.Now().Add(*soak)
	if *soak < time.Minute {
		t.Fatalf("-soak %v: at least 1m, to warm up and then watch", *soak)
	}
	warm := time.Now().Add(min(*soak/5, time.Minute))
	var mu sync.Mutex
	runs := make([]int, len(workloads))
	var failure error
	var wg sync.WaitGroup
	for w, args := range workloads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for job := 1000 * (w + 1); time.Now().Before(end); job++ {
				if _, err := ns.allreduceIn(context.Background(), "127.0.0.1:7470", job, args...); err != nil {
					mu.Lock()
					failure = err
					mu.Unlock()
					return
				}
				mu.Lock()
				runs[w]++
				mu.Unlock()
			}
		}()
	}
	// After warm-up: the working set's high point over 20 s (RSS moves with
	// the jobs' phases and the garbage collector), and the goroutines then.
	time.Sleep(time.Until(warm))
	rss0, g0 := daemonState(t, cmd.Process.Pid, admin)
	for range 2 {
		time.Sleep(10 * time.Second)
		rss, _ := daemonState(t, cmd.Process.Pid, admin)
		rss0 = max(rss0, rss)
	}
	t.Logf("after warm-up: RSS %d KiB, %d goroutines", rss0, g0)
	for time.Until(end) > 30*time.Second {
		time.Sleep(30 * time.Second)
		rss, g := daemonState(t, cmd.Process.Pid, admin)
		t.Logf("%v left: RSS %d KiB, %d goroutines", time.Until(end).Round(time.Second), rss, g)
	}
	wg.Wait()
	if failure != nil {
		t.Fatal(failure)
	}
	time.Sleep(6 * time.Second) // jobs end (--job-idle 5s) and give their memory back
	rss1, g1 := daemonState(t, cmd.Process.Pid, admin)
	t.Logf("at the end: RSS %d KiB, %d goroutines; runs per workload %v; %d datagrams dropped by the kernel", rss1, g1, runs, ns.dropped(t))
	if float64(rss1) > 1.1*float64(rss0) {
		t.Errorf("RSS grew from %d KiB to %d KiB (more than 10%%)", rss0, rss1)
	}
	if g1 > g0 {
		t.Errorf("goroutines grew from %d to %d", g0, g1)
	}
}
