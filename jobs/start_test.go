package jobs

import (
	"context"
	"errors"
	"testing"
	"time"
)

// StartServer returns a running server (it runs a job), or NewServer's
// error and no server; RegisterQueue sends a schedule's jobs to the queue
// it names, which that server serves, and registers nothing when the
// queue cannot be opened.
func TestStartServerAndRegisterQueue(t *testing.T) {
	c := fresh(t)
	ctx := tctx(t)
	if s, err := StartServer(ctx, c, NewMux(), ServerConfig{}); err == nil || s != nil {
		t.Fatalf("StartServer without queues = %v, %v: want an error and no server", s, err)
	}

	ran := make(chan *Task, 16)
	m := NewMux()
	m.HandleFunc("report:", func(_ context.Context, t *Task) ([]byte, error) {
		ran <- &Task{Type: t.Type, Queue: t.Queue, Body: t.Body}
		return nil, nil
	})
	s, err := StartServer(ctx, c, m, ServerConfig{Queues: map[string]int{"reports": 1}, PollMax: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(ctx)
	if _, err := NewClient(c, ClientConfig{}).Enqueue(ctx, NewTask("report:once", nil), Queue("reports")); err != nil {
		t.Fatal(err)
	}
	if got := <-ran; got.Type != "report:once" || got.Queue != "reports" {
		t.Fatalf("ran %s from %s, want report:once from reports", got.Type, got.Queue)
	}

	sc := NewScheduler(SchedulerOptions{})
	bad := Schedule{Name: "x", Spec: "@every 1s", Task: NewTask("report:x", nil)}
	if err := sc.RegisterQueue(ctx, c, "", bad); err == nil {
		t.Fatal("RegisterQueue with an empty queue name: no error")
	}
	err = sc.RegisterQueue(ctx, c, "reports", Schedule{Name: "tick", Spec: "@every 50ms",
		Task: NewTask("report:tick", []byte("periodic"))})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- sc.Run(rctx) }()
	if got := <-ran; got.Type != "report:tick" || got.Queue != "reports" || string(got.Body) != "periodic" {
		t.Fatalf("ran %s from %s (%q), want the periodic report:tick from reports", got.Type, got.Queue, got.Body)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v", err)
	}
}
