package hostlib

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// waitNotes gathers the switch's CodeWaiting answers during one call. Each
// names the ranks one stuck block waits for; a rank that every answer
// names is the one holding the call up (others appear only while the
// window keeps them from sending), so that is what a timeout reports.
// Noting an answer allocates nothing once warm: answers come once per
// retransmission, on the packet path.
type waitNotes struct {
	reports int
	named   map[int]int // rank → answers naming it
	last    []byte      // the latest answer's text, reused
}

// noteWaiting records one answer: "block B of allreduce G waits for rank(s)
// R1, R2[ and N more]: ...". An answer whose list is cut short counts for
// the last text only.
func (s *Session) noteWaiting(text []byte) {
	w := &s.wait
	w.last = append(w.last[:0], text...)
	_, rest, ok := bytes.Cut(text, []byte("waits for "))
	list, _, ok2 := bytes.Cut(rest, []byte(":"))
	if !ok || !ok2 || bytes.Contains(list, []byte("more")) {
		return
	}
	list = bytes.TrimPrefix(bytes.TrimPrefix(list, []byte("ranks ")), []byte("rank "))
	if w.named == nil {
		w.named = map[int]int{}
	}
	w.reports++
	for len(list) > 0 {
		var f []byte
		f, list, _ = bytes.Cut(list, []byte(","))
		if r, ok := atoi(bytes.TrimSpace(f)); ok {
			w.named[r]++
		}
	}
}

// reset forgets the previous call's answers, keeping the storage.
func (w *waitNotes) reset() {
	w.reports, w.last = 0, w.last[:0]
	clear(w.named)
}

// atoi parses a small non-negative decimal without allocating.
func atoi(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// waitingSummary is what a timeout says of the switch's answers: the
// rank(s) named by the most answers, or else the latest answer; "" without
// any. A live rank can be named too, for blocks past where its window
// stopped it (or that the dead rank sent before it died), so the rank
// named most is the one holding the call up, and the counts say how sure
// that is.
func (s *Session) waitingSummary() string {
	w := &s.wait
	var top []int
	best := 0
	for r, n := range w.named {
		switch {
		case n > best:
			top, best = append(top[:0], r), n
		case n == best:
			top = append(top, r)
		}
	}
	if best == 0 {
		return string(w.last)
	}
	slices.Sort(top)
	names := make([]string, len(top))
	for i, r := range top {
		names[i] = strconv.Itoa(r)
	}
	who, verb := "rank "+names[0], "waits"
	if len(top) > 1 {
		who = "ranks " + strings.Join(names, ", ")
	}
	if best == w.reports {
		return fmt.Sprintf("every stuck block %s for %s (%d answers; last: %s)", verb, who, w.reports, w.last)
	}
	return fmt.Sprintf("most stuck blocks wait for %s (named in %d of %d answers; last: %s)", who, best, w.reports, w.last)
}
