package drain

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// A retired gate refuses new calls and drains once the calls counted in
// have left; Wait reports a drain, a grace that passed first, or a stop.
func TestGate(t *testing.T) {
	var g Gate
	for i := range 2 {
		if !g.Enter() {
			t.Fatalf("an open gate refused call %d", i+1)
		}
	}
	empty := g.Retire()
	if g.Enter() {
		t.Fatal("a retired gate took a call")
	}
	g.Leave()
	select {
	case <-empty:
		t.Fatal("drained with a call still in")
	default:
	}
	g.Leave()
	<-empty
	if g.Retire() != empty {
		t.Error("a second Retire gave another channel")
	}

	synctest.Test(t, func(t *testing.T) {
		var g Gate
		g.Enter()
		start := time.Now()
		if g.Wait(time.Second, nil) {
			t.Error("Wait reported a drain with a call in")
		}
		if d := time.Since(start); d != time.Second {
			t.Errorf("Wait returned after %v, not the grace", d)
		}
		stop := make(chan struct{})
		close(stop)
		if g.Wait(time.Hour, stop) {
			t.Error("Wait reported a drain at stop")
		}
		go g.Leave()
		if !g.Wait(time.Hour, nil) {
			t.Error("Wait missed the drain")
		}
	})
}

// However calls race the retirement, the gate drains exactly when the
// last call that got in leaves, and none gets in after it drained.
func TestGateRace(t *testing.T) {
	for range 200 {
		var g Gate
		var wg sync.WaitGroup
		var mu sync.Mutex
		in := 0
		for range 8 {
			wg.Go(func() {
				for range 50 {
					if !g.Enter() {
						return
					}
					mu.Lock()
					in++
					mu.Unlock()
					mu.Lock()
					in--
					mu.Unlock()
					g.Leave()
				}
			})
		}
		empty := g.Retire()
		<-empty
		mu.Lock()
		if in != 0 {
			t.Fatalf("drained with %d calls in", in)
		}
		mu.Unlock()
		wg.Wait()
	}
}
