package hostlib

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// waitNotes gathers the switch's CodeWaiting answers during one call. Each
// names the ranks one stuck block waits for; a rank that every answer
// names is the one holding the call up (others appear only while the
// window keeps them from sending), so that is what a timeout reports.
type waitNotes struct {
	reports int
	named   map[int]int // rank → answers naming it
	last    string
}

// noteWaiting records one answer: "block B of allreduce G waits for rank(s)
// R1, R2[ and N more]: ...". An answer whose list is cut short counts for
// the last text only.
func (s *Session) noteWaiting(text string) {
	w := &s.wait
	w.last = text
	_, rest, ok := strings.Cut(text, "waits for ")
	list, _, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 || strings.Contains(list, "more") {
		return
	}
	list = strings.TrimPrefix(strings.TrimPrefix(list, "ranks "), "rank ")
	if w.named == nil {
		w.named = map[int]int{}
	}
	w.reports++
	for _, f := range strings.Split(list, ",") {
		if r, err := strconv.Atoi(strings.TrimSpace(f)); err == nil {
			w.named[r]++
		}
	}
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
		return w.last
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
