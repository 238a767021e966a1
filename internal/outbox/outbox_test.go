package outbox

import (
	"sync"
	"testing"
)

// TestBox: values put from many goroutines are all taken, each once, in
// each goroutine's order; the first put after a take wakes the taker.
func TestBox(t *testing.T) {
	b := New[[2]int]()
	select {
	case <-b.Wake():
		t.Fatal("woken while empty")
	default:
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 1000 {
				b.Put([2]int{g, i})
			}
		})
	}
	wg.Wait()
	if b.Len() != 4000 {
		t.Fatalf("Len %d", b.Len())
	}
	<-b.Wake()
	got := b.Take(nil)
	next := [4]int{}
	for _, v := range got {
		if v[1] != next[v[0]] {
			t.Fatalf("goroutine %d: %d after %d", v[0], v[1], next[v[0]]-1)
		}
		next[v[0]]++
	}
	if len(got) != 4000 || b.Len() != 0 || len(b.Take(nil)) != 0 {
		t.Fatalf("took %d, %d left", len(got), b.Len())
	}
	b.Put([2]int{9, 9})
	select {
	case <-b.Wake():
	default:
		t.Fatal("a put after a take did not wake")
	}
}

// TestBoxWakeAt: after WakeAt(n) the taker is woken by the n-th value, not
// by the first; WakeAt of a count the box holds already wakes it at once;
// a Take brings back the wake on the first value.
func TestBoxWakeAt(t *testing.T) {
	b := New[int]()
	woken := func() bool {
		select {
		case <-b.Wake():
			return true
		default:
			return false
		}
	}
	b.WakeAt(3)
	b.Put(1)
	b.Put(2)
	if woken() {
		t.Fatal("woken by 2 values of the 3 wanted")
	}
	b.Put(3)
	if !woken() {
		t.Fatal("not woken by the 3rd value")
	}
	b.Put(4)
	if woken() {
		t.Fatal("woken again past the count")
	}
	b.WakeAt(4)
	if !woken() {
		t.Fatal("WakeAt(4) with 4 held: not woken at once")
	}
	if got := b.Take(nil); len(got) != 4 {
		t.Fatalf("took %v", got)
	}
	b.WakeAt(0) // below one: one
	b.Put(5)
	if !woken() {
		t.Fatal("WakeAt(0): the first value did not wake")
	}
	b.Take(nil)
	b.Put(6)
	if !woken() {
		t.Fatal("after Take: the first value did not wake")
	}
}
