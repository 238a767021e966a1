package jobs

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestSchedulerTask: a periodic Task is enqueued in the envelope, so a
// Server over a Mux routes it to its type's handler with its body and
// options; a Task with a Payload, or Options that do not apply, are
// refused at Register.
func TestSchedulerTask(t *testing.T) {
	c := fresh(t)
	ctx := tctx(t)
	q := openQueue(t, c, "periodic")
	got := make(chan *Task, 16)
	m := NewMux()
	m.HandleFunc("report:nightly", func(_ context.Context, t *Task) ([]byte, error) {
		got <- t
		return nil, nil
	})
	m.HandleFunc("report:", func(context.Context, *Task) ([]byte, error) {
		return nil, errors.New("the prefix handler got it")
	})
	m.HandleDefault(HandlerFunc(func(context.Context, *Task) ([]byte, error) {
		return nil, errors.New("the default handler got it")
	}))
	start(t, c, m, ServerConfig{Queues: map[string]int{"periodic": 1}, PollMax: 20 * time.Millisecond})
	sc := NewScheduler(SchedulerOptions{})
	err := sc.Register(Schedule{Name: "nightly", Spec: "@every 50ms", Queue: q,
		Task: NewTask("report:nightly", []byte("all")), Options: []Option{MaxRetries(2), Timeout(time.Minute)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []Schedule{
		{Name: "a", Spec: "@every 1s", Queue: q, Task: NewTask("x", nil), Payload: []byte("p")},
		{Name: "b", Spec: "@every 1s", Queue: q, Options: []Option{MaxRetries(1)}},
		{Name: "c", Spec: "@every 1s", Queue: q, Task: NewTask("x", nil), Options: []Option{Queue("other")}},
		{Name: "d", Spec: "@every 1s", Queue: q, Task: NewTask("x", nil), Options: []Option{Unique("k")}},
	} {
		if err := sc.Register(bad); !errors.Is(err, ErrScheduler) {
			t.Fatalf("%s: %v", bad.Name, err)
		}
	}
	if err := sc.Register(Schedule{Name: "e", Spec: "@every 1s", Queue: q, Task: NewTask("bad type", nil)}); !errors.Is(err, ErrEnvelope) {
		t.Fatalf("bad type: %v", err)
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- sc.Run(rctx) }()
	for range 2 {
		task := recv(t, got)
		if task.Type != "report:nightly" || string(task.Body) != "all" || task.Raw || task.Retries != 2 || task.Timeout != time.Minute {
			t.Fatalf("task %+v", task)
		}
	}
	cancel()
	recv(t, ran)
}
