package lazytimer

import (
	"sync"
	"testing"
	"time"
)

// TestArmOnlyEarlier: a timer armed for an hour is armed anew for a
// millisecond and fires; one armed for a millisecond is not pushed back
// by a later Arm for an hour, and fires all the same.
func TestArmOnlyEarlier(t *testing.T) {
	var mu sync.Mutex
	fired := make(chan struct{}, 4)
	var tm Timer
	tm = New(func() {
		mu.Lock()
		tm.Fired()
		mu.Unlock()
		fired <- struct{}{}
	})
	now := time.Now()
	mu.Lock()
	tm.Arm(now, time.Hour)
	tm.Arm(now, time.Millisecond)
	mu.Unlock()
	<-fired
	mu.Lock()
	tm.Arm(time.Now(), time.Millisecond)
	tm.Arm(time.Now(), time.Hour) // not later: stays armed for the millisecond
	mu.Unlock()
	select {
	case <-fired:
	case <-time.After(10 * time.Second):
		t.Fatal("a later Arm pushed the timer back")
	}
	mu.Lock()
	defer mu.Unlock()
	if tm.Stop() {
		t.Fatal("Stop found a fired timer running")
	}
}
