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
