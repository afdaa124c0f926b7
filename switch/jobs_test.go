package swtch

import "testing"

// A reader's job look-up gives what the table holds now: a job that came,
// went, or came back as a new job under the same id, and never the job of
// a snapshot it last looked in.
func TestJobLookup(t *testing.T) {
	tbl := newJobTable()
	var l jobLookup
	if j := l.get(tbl, 1); j != nil {
		t.Fatalf("an empty table gave %p", j)
	}
	a, b := &job{}, &job{}
	tbl.update(func(m map[uint32]*job) { m[1] = a })
	for range 2 { // the look-up, then the same from the lookup's entry
		if j := l.get(tbl, 1); j != a {
			t.Fatalf("job 1 added: got %p, want %p", j, a)
		}
	}
	if j := l.get(tbl, 2); j != nil {
		t.Fatalf("job 2, never added: got %p", j)
	}
	if j := l.get(tbl, 1); j != a {
		t.Fatalf("job 1 after a look-up of 2: got %p, want %p", j, a)
	}
	tbl.update(func(m map[uint32]*job) { m[1] = b })
	if j := l.get(tbl, 1); j != b {
		t.Fatalf("job 1 replaced: got %p, want the new %p", j, b)
	}
	tbl.update(func(m map[uint32]*job) { delete(m, 1) })
	if j := l.get(tbl, 1); j != nil {
		t.Fatalf("job 1 removed: got %p", j)
	}
}
