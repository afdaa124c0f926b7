package bench

import (
	"sync"
	"time"

	swtch "github.com/flare-net/flare/switch"
)

// hostLinkWatch finds the host links of one job on an in-process switch
// while a path runs (the switch forgets a host's link when its job ends,
// which happens inside a rank process): it polls the switch's link
// counters and keeps every child link that appears after it started, and
// the job's group link, until it has them all. A link's counters stay
// readable after the switch forgets it, so one sight is enough, and the
// polling ends with the joins: it does not run beside the measured calls,
// where its wake-ups and CPU would be charged to the switch's rows alone.
type hostLinkWatch struct {
	sw    *swtch.Switch
	hosts int  // the child links to find
	group bool // and a group link
	old   map[swtch.LinkCounter]bool
	mu    sync.Mutex
	seen  map[swtch.LinkCounter]bool
	// children and groups count seen by role.
	children, groups int
	stop             chan struct{}
	done             chan struct{}
}

// watchHostLinks starts watching sw for the links of a job of hosts
// members, and its multicast group's with group.
func watchHostLinks(sw *swtch.Switch, hosts int, group bool) *hostLinkWatch {
	w := &hostLinkWatch{sw: sw, hosts: hosts, group: group, old: map[swtch.LinkCounter]bool{}, seen: map[swtch.LinkCounter]bool{},
		stop: make(chan struct{}), done: make(chan struct{})}
	for _, c := range sw.LinkCounters() {
		w.old[c] = true
	}
	go func() {
		defer close(w.done)
		t := time.NewTicker(500 * time.Microsecond)
		defer t.Stop()
		for !w.poll() {
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
		}
	}()
	return w
}

// poll takes the new child and group links; it reports whether the job's
// are all seen.
func (w *hostLinkWatch) poll() bool {
	cs := w.sw.LinkCounters()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range cs {
		if (c.Role() == "child" || c.Role() == "group") && !w.old[c] && !w.seen[c] {
			w.seen[c] = true
			if c.Role() == "group" {
				w.groups++
			} else {
				w.children++
			}
		}
	}
	return w.children >= w.hosts && (!w.group || w.groups > 0)
}

// finish stops the watch and sums the bytes the switch received from
// (up) and sent to (down) the host links it found, and how many there
// were. What it sent to the job's multicast group crossed every host's
// link.
func (w *hostLinkWatch) finish() (up, down int64, links int) {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	var group int64
	for c := range w.seen {
		t := c.Load()
		if c.Role() == "group" {
			group += t.TxBytes
			continue
		}
		up += t.RxBytes
		down += t.TxBytes
		links++
	}
	return up, down + group*int64(links), links
}
