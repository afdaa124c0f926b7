package main

import "testing"

// A suggestion is the candidate fewest edits away, the first of equals,
// when it is at most a third of the word's length away (and at least 2
// is always near enough); failing that, a candidate the word (3 letters
// or more) begins.
func TestClosest(t *testing.T) {
	for _, tc := range []struct {
		s          string
		candidates []string
		want       string
	}{
		{"hostz", []string{"hosts", "window"}, "hosts"},
		{"ab", []string{"ac"}, "ac"},                        // 1 edit: within the floor of 2
		{"abcdef", []string{"abcdxy"}, "abcdxy"},            // 2 edits of 6: exactly a third
		{"abcdefg", []string{"abcdxyz"}, ""},                // 3 edits of 7: more than a third
		{"cat", []string{"bat", "hat"}, "bat"},              // equals: the first
		{"hos", []string{"hostname-long"}, "hostname-long"}, // a prefix of 3
		{"h", []string{"hosts"}, ""},                        // too short to be a prefix
		{"packets", []string{"packet", "pack"}, "packet"},   // the nearer, not the prefix
	} {
		if got := closest(tc.s, tc.candidates); got != tc.want {
			t.Errorf("closest(%q, %q) = %q, want %q", tc.s, tc.candidates, got, tc.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{
		{"kitten", "sitting", 3}, {"", "abc", 3}, {"abc", "", 3}, {"flaw", "lawn", 2}, {"same", "same", 0}, {"ab", "ba", 2},
	} {
		if d := editDistance(tc.a, tc.b); d != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, d, tc.d)
		}
	}
}
