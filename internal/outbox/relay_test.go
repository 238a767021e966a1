package outbox

import (
	"sync"
	"testing"
)

// TestRelay: jobs handed over in rounds are each taken once, in order,
// by handlers that leave an outcome with each next take; every outcome
// reaches the taker; Close wakes the parked handlers and Next returns
// false, after leaving the last outcome.
func TestRelay(t *testing.T) {
	r := NewRelay[int, int]()
	const handlers, rounds, per = 8, 50, 37
	var wg sync.WaitGroup
	var mu sync.Mutex
	var taken []int
	for range handlers {
		wg.Go(func() {
			wake := make(chan struct{}, 1)
			v, put := 0, false
			for {
				j, ok := r.Next(wake, v, put)
				if !ok {
					return
				}
				mu.Lock()
				taken = append(taken, j)
				mu.Unlock()
				v, put = j, true
			}
		})
	}
	var got []int
	for i := range rounds {
		js := make([]int, per)
		for k := range js {
			js[k] = i*per + k
		}
		r.Hand(js...)
		// Each job's outcome comes back before the next round.
		for len(got) < (i+1)*per-handlers {
			r.WakeAt((i+1)*per - handlers - len(got))
			<-r.Wake()
			got = r.Take(got)
		}
	}
	if left := r.Close(nil); len(left) != 0 {
		t.Fatalf("Close took back %d jobs, every one was taken", len(left))
	}
	wg.Wait()
	got = r.Take(got)
	if len(got) != rounds*per || len(taken) != rounds*per {
		t.Fatalf("%d outcomes, %d taken, of %d jobs", len(got), len(taken), rounds*per)
	}
	seen := make([]bool, rounds*per)
	for _, v := range got {
		if seen[v] {
			t.Fatalf("outcome %d twice", v)
		}
		seen[v] = true
	}
	if q := r.Queued(); q != 0 {
		t.Fatalf("Queued %d after Close", q)
	}
}

// TestRelayBlockedHandlerStallsNone: a handler that blocks on its job
// does not hold back the jobs queued behind it: the handler it woke (the
// chain) takes them, though the hand-over woke only one.
func TestRelayBlockedHandlerStallsNone(t *testing.T) {
	r := NewRelay[int, int]()
	block, parked := make(chan struct{}), make(chan struct{}, 2)
	var wg sync.WaitGroup
	done := make(chan int, 3)
	for range 2 {
		wg.Go(func() {
			wake := make(chan struct{}, 1)
			parked <- struct{}{}
			for {
				j, ok := r.Next(wake, 0, false)
				if !ok {
					return
				}
				if j == 0 {
					<-block // the first job blocks its handler
				}
				done <- j
			}
		})
	}
	<-parked
	<-parked
	// Both are parked or about to be: a Hand before a handler parks is
	// taken by its first Next all the same.
	r.Hand(0, 1, 2)
	for range 2 {
		if j := <-done; j == 0 {
			t.Fatal("the blocked job finished")
		}
	}
	close(block)
	if j := <-done; j != 0 {
		t.Fatalf("job %d last, want 0", j)
	}
	if left := r.Close(nil); len(left) != 0 {
		t.Fatalf("Close took back %v", left)
	}
	wg.Wait()
}

// TestRelayCloseTakesBack: Close returns the jobs no handler took, in
// order, and a Next after it returns false, leaving its outcome.
func TestRelayCloseTakesBack(t *testing.T) {
	r := NewRelay[int, int]()
	r.Hand(1, 2, 3)
	wake := make(chan struct{}, 1)
	if j, ok := r.Next(wake, 0, false); !ok || j != 1 {
		t.Fatalf("Next %d %v", j, ok)
	}
	if r.Queued() != 2 {
		t.Fatalf("Queued %d", r.Queued())
	}
	left := r.Close(nil)
	if len(left) != 2 || left[0] != 2 || left[1] != 3 {
		t.Fatalf("Close took back %v", left)
	}
	if _, ok := r.Next(wake, 7, true); ok {
		t.Fatal("Next after Close took a job")
	}
	if got := r.Take(nil); len(got) != 1 || got[0] != 7 {
		t.Fatalf("outcomes %v", got)
	}
}
