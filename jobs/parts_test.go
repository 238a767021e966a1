package jobs

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// TestTaskStopWaits: a task's end returns only once its loop returned,
// and a task never begun ends at once.
func TestTaskStopWaits(t *testing.T) {
	var never task
	never.end()
	var tk task
	returned := false
	running := make(chan struct{})
	tk.begin(func(stop <-chan struct{}) {
		close(running)
		<-stop
		returned = true // read after end: end must order it before
	})
	<-running
	tk.end()
	if !returned {
		t.Fatal("end returned before the loop did")
	}
}

// TestServerPartsStop: each component of a started Server stops on its
// own (stop returns once its goroutines did), in any order, and after
// Shutdown no goroutine of the server is left.
func TestServerPartsStop(t *testing.T) {
	c := fresh(t)
	before := runtime.NumGoroutine()
	s, err := NewServer(tctx(t), c, HandlerFunc(func(context.Context, *Task) ([]byte, error) { return nil, nil }), ServerConfig{
		Queues: map[string]int{"a": 2, "b": 1}, PubSub: pubsubOpts(), Heartbeat: 10 * time.Millisecond,
		PromoteInterval: time.Millisecond, ReapInterval: time.Millisecond, TrimInterval: time.Millisecond,
		LimitsInterval: time.Millisecond, ExtendInterval: time.Millisecond, Lease: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the listener to subscribe", func() bool { return s.Health().Listening })
	// Each part but the claimer, stopped alone while the rest run: its
	// goroutines have returned when stop does; started again after.
	for _, p := range s.rest {
		p.stop()
		for _, tk := range p.tasks() {
			if !isClosed(tk.done) {
				t.Errorf("%T.stop returned before its goroutine", p)
			}
		}
		p.start()
	}
	if err := s.Shutdown(tctx(t)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the server's goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}
