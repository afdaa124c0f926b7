package hostlib

import "testing"

// The timeout names the rank the switch's answers name most: every answer,
// or most of them when a live rank behind its window is named too.
func TestWaitingSummary(t *testing.T) {
	cases := []struct {
		answers []string
		want    string
	}{
		{nil, ""},
		{[]string{"block 3 of allreduce 1 waits for rank 2: nothing from them yet"},
			"every stuck block waits for rank 2 (1 answers; last: block 3 of allreduce 1 waits for rank 2: nothing from them yet)"},
		{[]string{"block 3 of allreduce 1 waits for ranks 1, 2: x", "block 4 of allreduce 1 waits for ranks 1, 2: x"},
			"every stuck block waits for ranks 1, 2 (2 answers; last: block 4 of allreduce 1 waits for ranks 1, 2: x)"},
		{[]string{"block 3 of allreduce 1 waits for ranks 1, 2: x", "block 9 of allreduce 1 waits for rank 1: x", "block 5 of allreduce 1 waits for rank 2: x", "block 6 of allreduce 1 waits for rank 2: x"},
			"most stuck blocks wait for rank 2 (named in 3 of 4 answers; last: block 6 of allreduce 1 waits for rank 2: x)"},
		{[]string{"block 3 of allreduce 1 waits for ranks 1, 2 and 5 more: x"},
			"block 3 of allreduce 1 waits for ranks 1, 2 and 5 more: x"},
	}
	for _, c := range cases {
		var s Session
		for _, a := range c.answers {
			s.noteWaiting([]byte(a))
		}
		if got := s.waitingSummary(); got != c.want {
			t.Errorf("answers %q:\n got %q\nwant %q", c.answers, got, c.want)
		}
	}
}

// Ranks of more than one digit and rank 9 are read; an empty entry names
// nobody; a reset forgets the last call's answers.
func TestWaitingNotes(t *testing.T) {
	var s Session
	s.noteWaiting([]byte("block 1 of allreduce 2 waits for ranks 9, 19: x"))
	s.noteWaiting([]byte("block 2 of allreduce 2 waits for ranks 19, 9: x"))
	if got, want := s.waitingSummary(), "every stuck block waits for ranks 9, 19 (2 answers; last: block 2 of allreduce 2 waits for ranks 19, 9: x)"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	s.wait.reset()
	s.noteWaiting([]byte("block 7 of allreduce 3 waits for rank 4: x"))
	if got, want := s.waitingSummary(), "every stuck block waits for rank 4 (1 answers; last: block 7 of allreduce 3 waits for rank 4: x)"; got != want {
		t.Errorf("after a reset: got %q\nwant %q", got, want)
	}
	var e Session
	e.noteWaiting([]byte("block 5 of allreduce 1 waits for ranks 3, : x"))
	if got, want := e.waitingSummary(), "every stuck block waits for rank 3 (1 answers; last: block 5 of allreduce 1 waits for ranks 3, : x)"; got != want {
		t.Errorf("an empty entry: got %q\nwant %q", got, want)
	}
}
