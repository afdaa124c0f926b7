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

// waitingSummary is what a timeout says of the switch's answers: the ranks
// every answer named, or else the latest answer; "" without any.
func (s *Session) waitingSummary() string {
	w := &s.wait
	var common []int
	for r, n := range w.named {
		if n == w.reports {
			common = append(common, r)
		}
	}
	slices.Sort(common)
	names := make([]string, len(common))
	for i, r := range common {
		names[i] = strconv.Itoa(r)
	}
	switch {
	case len(common) == 1:
		return fmt.Sprintf("every stuck block waits for rank %s (%d answers; last: %s)", names[0], w.reports, w.last)
	case len(common) > 1:
		return fmt.Sprintf("every stuck block waits for ranks %s (%d answers; last: %s)", strings.Join(names, ", "), w.reports, w.last)
	}
	return w.last
}
