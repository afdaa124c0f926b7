package testbed

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Kind is the prefix of every namespace a testbed run makes
// (flaretb-PID-SEQ-LABEL, see RunPrefix).
const Kind = "flaretb-"

// dataPort is every switch daemon's UDP port; ringPort every host's TCP
// port for the ring baseline.
const (
	dataPort = "7470"
	ringPort = "7600"
)

var runSeq atomic.Int64

// The cluster's addresses. Host link g is 10.201.g.0/24 (the host's eth0
// .2, the switch's h<g> .1); leaf j's uplink 10.202.j.0/24 (the leaf's
// "up" .2, the root's l<j> .1); each switch daemon binds an address of its
// own on its lo, 10.203.j.1 for leaf (or the single switch) j and
// 10.203.255.1 for the root, so whichever link a packet comes in on, the
// daemon answers from the address the host sent to.
func hostLinkNet(g int) string { return "10.201." + strconv.Itoa(g) + "." }
func uplinkNet(j int) string   { return "10.202." + strconv.Itoa(j) + "." }
func switchIP(j int) string    { return "10.203." + strconv.Itoa(j) + ".1" }

const rootIP = "10.203.255.1"

// cluster is one run's namespaces, links and daemons.
type cluster struct {
	cfg      Config
	prefix   string
	made     []string // namespaces created, in order
	links    []*link  // host links by rank, then the uplinks by leaf
	hostNS   []string // by rank
	leafNS   []string // the switches hosts join (one without a tree)
	rootNS   string
	daemons  []*exec.Cmd
	switches string // the --switch value every host gets
}

// build makes the namespaces, links, routes and loss rules. It returns
// the cluster even on error, so the caller's deferred teardown removes
// whatever part was built.
func build(cfg Config) (*cluster, error) {
	c := &cluster{cfg: cfg, prefix: RunPrefix(Kind, runSeq.Add(1))}
	leaves, per := 1, cfg.Hosts
	if cfg.Tree() {
		leaves, per = cfg.Leaves, cfg.PerLeaf
		c.rootNS = c.prefix + "root"
		if err := c.addNS(c.rootNS); err != nil {
			return c, err
		}
	}
	var sw []string
	for j := range leaves {
		label := "sw"
		if cfg.Tree() {
			label = "leaf" + strconv.Itoa(j)
		}
		ns := c.prefix + label
		if err := c.addNS(ns); err != nil {
			return c, err
		}
		if err := ipIn(ns, "addr", "add", switchIP(j)+"/32", "dev", "lo"); err != nil {
			return c, err
		}
		c.leafNS = append(c.leafNS, ns)
		sw = append(sw, switchIP(j)+":"+dataPort)
		for k := range per {
			if err := c.addHost(j*per+k, ns); err != nil {
				return c, err
			}
		}
	}
	c.switches = strings.Join(sw, ",")
	if cfg.Tree() {
		for j := range leaves {
			if err := c.addUplink(j, per); err != nil {
				return c, err
			}
		}
	}
	return c, c.addLossRules()
}

// addNS makes a namespace with lo up and forwarding on.
func (c *cluster) addNS(ns string) error {
	if err := ipIn("", "netns", "add", ns); err != nil {
		return err
	}
	c.made = append(c.made, ns)
	if err := ipIn(ns, "link", "set", "lo", "up"); err != nil {
		return err
	}
	_, err := execIn(ns, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	return err
}

// addHost makes host g's namespace and its link to the switch in swNS.
func (c *cluster) addHost(g int, swNS string) error {
	ns := c.prefix + "h" + strconv.Itoa(g)
	if err := c.addNS(ns); err != nil {
		return err
	}
	n := hostLinkNet(g)
	l := &link{name: "h" + strconv.Itoa(g), rateBps: c.cfg.LinkBps,
		a: end{ns: ns, dev: "eth0", addr: n + "2"}, b: end{ns: swNS, dev: "h" + strconv.Itoa(g), addr: n + "1"}}
	if err := l.create(c.cfg.MTU); err != nil {
		return err
	}
	c.links = append(c.links, l)
	c.hostNS = append(c.hostNS, ns)
	return ipIn(ns, "route", "add", "default", "via", n+"1")
}

// addUplink links leaf j to the root and routes leaf j's switch address
// and host links through it.
func (c *cluster) addUplink(j, per int) error {
	n := uplinkNet(j)
	l := &link{name: "leaf" + strconv.Itoa(j) + "-root", rateBps: c.cfg.UplinkBps,
		a: end{ns: c.leafNS[j], dev: "uplink", addr: n + "2"}, b: end{ns: c.rootNS, dev: "l" + strconv.Itoa(j), addr: n + "1"}}
	if err := l.create(c.cfg.MTU); err != nil {
		return err
	}
	c.links = append(c.links, l)
	if err := ipIn(c.leafNS[j], "route", "add", "default", "via", n+"1"); err != nil {
		return err
	}
	if j == 0 {
		if err := ipIn(c.rootNS, "addr", "add", rootIP+"/32", "dev", "lo"); err != nil {
			return err
		}
	}
	if err := ipIn(c.rootNS, "route", "add", switchIP(j)+"/32", "via", n+"2"); err != nil {
		return err
	}
	for k := range per {
		if err := ipIn(c.rootNS, "route", "add", hostLinkNet(j*per+k)+"0/24", "via", n+"2"); err != nil {
			return err
		}
	}
	return nil
}

// addLossRules drops cfg.Loss of the packets leaving each end of every link.
func (c *cluster) addLossRules() error {
	ppm := int(c.cfg.Loss*1e6 + 0.5)
	if ppm == 0 {
		return nil
	}
	chains := map[string]bool{}
	for _, l := range c.links {
		for _, e := range []end{l.a, l.b} {
			if err := addLoss(e.ns, e.dev, ppm, chains[e.ns]); err != nil {
				return err
			}
			chains[e.ns] = true
		}
	}
	return nil
}

// startDaemons runs the switch daemon(s): the root first, with
// --children, then every leaf (or the single switch), each bound to its
// switch address, and waits until each listens.
func (c *cluster) startDaemons(ctx context.Context) error {
	common := append([]string{"--admin", "off", "--packet", strconv.Itoa(c.cfg.PacketBytes),
		"--window", strconv.Itoa(c.cfg.Window)}, c.cfg.SwitchArgs...)
	if c.cfg.Loss > 0 {
		common = append(common, "--no-offload") // a loss rule then drops single datagrams
	}
	if c.cfg.Tree() {
		args := append([]string{"--listen", rootIP + ":" + dataPort, "--children", strconv.Itoa(c.cfg.Leaves)}, common...)
		if err := c.startDaemon(ctx, c.rootNS, args); err != nil {
			return err
		}
	}
	for j, ns := range c.leafNS {
		args := append([]string{"--listen", switchIP(j) + ":" + dataPort}, common...)
		if c.cfg.Tree() {
			args = append(args, "--parent", rootIP+":"+dataPort, "--child-index", strconv.Itoa(j))
		}
		if err := c.startDaemon(ctx, ns, args); err != nil {
			return err
		}
	}
	return nil
}

// startDaemon runs `flare switch args...` in ns and waits for its
// "switch listening" line (10 s at most).
func (c *cluster) startDaemon(ctx context.Context, ns string, args []string) error {
	cmd := commandIn(ctx, ns, append([]string{c.cfg.Exe, "switch"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the switch in %s: %w", ns, err)
	}
	c.daemons = append(c.daemons, cmd)
	ready := make(chan bool, 1)
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		said := false
		for sc.Scan() {
			if !said {
				log.WriteString(sc.Text() + "\n")
			}
			if !said && strings.Contains(sc.Text(), "switch listening") {
				said = true
				ready <- true
			}
		}
		if !said {
			close(ready)
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	select {
	case ok := <-ready:
		if !ok {
			return fmt.Errorf("the switch in %s exited before listening: %s", ns, log.String())
		}
	case <-time.After(10 * time.Second):
		return fmt.Errorf("the switch in %s not listening after 10 s", ns)
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// daemonPIDs are the daemons' process ids (ip netns exec execs the
// daemon, so the child is it).
func (c *cluster) daemonPIDs() []int {
	var pids []int
	for _, d := range c.daemons {
		pids = append(pids, d.Process.Pid)
	}
	return pids
}

// teardown stops the daemons and deletes every namespace made, the veths
// with them, whatever part of the cluster was built; it reports what it
// could not delete.
func (c *cluster) teardown() error {
	for _, d := range c.daemons {
		_ = d.Process.Kill()
		_ = d.Wait()
	}
	var errs []error
	for i := len(c.made) - 1; i >= 0; i-- {
		if err := DeleteNamespace(c.made[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
