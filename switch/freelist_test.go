package swtch

import "testing"

// TestFreeCache checks the two ends of a free list: a taking cache refills
// freeBatch at a time and makes a new buffer only when the list is empty;
// a giving cache hands a full batch on, and flush the rest; the list never
// keeps more than its max, whoever gives back.
func TestFreeCache(t *testing.T) {
	made := 0
	f := newFreeList(2*freeBatch+5, func() *int { made++; return new(int) })
	give := f.cache()
	for range 3 * freeBatch {
		give.put(new(int))
	}
	// Three full batches: the third fits only 5 under max.
	if len(f.free) != f.max || len(give.items) != 0 {
		t.Fatalf("after %d puts: list %d (max %d), cache %d", 3*freeBatch, len(f.free), f.max, len(give.items))
	}
	give.put(new(int))
	if len(give.items) != 1 {
		t.Fatalf("one put: cache %d, want 1", len(give.items))
	}
	give.flush()
	if len(f.free) != f.max || len(give.items) != 0 {
		t.Fatalf("after flush: list %d (max %d), cache %d", len(f.free), f.max, len(give.items))
	}
	take := f.cache()
	seen := map[*int]bool{}
	for range f.max {
		x := take.get()
		if seen[x] {
			t.Fatal("a buffer handed out twice")
		}
		seen[x] = true
	}
	if made != 0 || len(f.free) != 0 || len(take.items) != 0 {
		t.Fatalf("taking all %d: made %d, list %d, cache %d", f.max, made, len(f.free), len(take.items))
	}
	if x := take.get(); x == nil || seen[x] || made != 1 {
		t.Fatalf("from an empty list: %p, made %d; want a new buffer", x, made)
	}
	f.putAll([]*int{new(int), new(int)})
	if got := f.take(make([]*int, 0, 8)); len(got) != 2 || len(f.free) != 0 {
		t.Fatalf("take after putAll of 2: got %d, list %d", len(got), len(f.free))
	}
}

// A list's own get, put and take: put keeps at most max, take moves no
// more than dst has room for, and get hands each buffer out once.
func TestFreeListBounds(t *testing.T) {
	f := newFreeList(2, func() *int { return new(int) })
	a, b, c := new(int), new(int), new(int)
	for _, x := range []*int{a, b, c} {
		f.put(x)
	}
	if len(f.free) != 2 {
		t.Fatalf("three puts to a list of max 2: it holds %d", len(f.free))
	}
	if got := f.take(make([]*int, 0, 1)); len(got) != 1 || len(f.free) != 1 {
		t.Fatalf("take into room for 1: got %d, list %d left, want 1 and 1", len(got), len(f.free))
	}
	x, y := f.get(), f.get()
	if x == y || len(f.free) != 0 {
		t.Fatalf("two gets from a list of one: %p and %p, list %d left; want the buffer and a new one", x, y, len(f.free))
	}
}
