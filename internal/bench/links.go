package bench

import (
	"sync"
	"time"

	swtch "github.com/flare-net/flare/switch"
)

// hostLinkWatch finds the host links of one job on an in-process switch
// while a path runs (the switch forgets a host's link when its job ends,
// which happens inside a rank process): it polls the switch's link
// counters and keeps every child link that appears after it started.
type hostLinkWatch struct {
	sw   *swtch.Switch
	old  map[swtch.LinkCounter]bool
	mu   sync.Mutex
	seen map[swtch.LinkCounter]bool
	stop chan struct{}
	done chan struct{}
}

// watchHostLinks starts watching sw.
func watchHostLinks(sw *swtch.Switch) *hostLinkWatch {
	w := &hostLinkWatch{sw: sw, old: map[swtch.LinkCounter]bool{}, seen: map[swtch.LinkCounter]bool{},
		stop: make(chan struct{}), done: make(chan struct{})}
	for _, c := range sw.LinkCounters() {
		w.old[c] = true
	}
	go func() {
		defer close(w.done)
		t := time.NewTicker(500 * time.Microsecond)
		defer t.Stop()
		for {
			w.poll()
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
		}
	}()
	return w
}

func (w *hostLinkWatch) poll() {
	cs := w.sw.LinkCounters()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range cs {
		if (c.Role() == "child" || c.Role() == "group") && !w.old[c] {
			w.seen[c] = true
		}
	}
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
