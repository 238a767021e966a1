package jobs

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/resp"
)

// A schedule names its queue, by QueueName or by the Queue option a
// Client takes, and the scheduler opens it on its Sender: a server over
// those names runs the periodic jobs, each from its queue. Start returns
// at once (again: ErrSchedulerStarted), a start whose queues cannot be
// opened runs nothing and may be tried again, Shutdown stops the
// goroutine Start owns (no fire after it returns), and Shutdown of a
// scheduler never started is ErrSchedulerNotStarted.
func TestSchedulerQueueByNameStartShutdown(t *testing.T) {
	c := fresh(t)
	ctx := tctx(t)
	ran := make(chan *Task, 16)
	m := NewMux()
	m.HandleFunc("report:", func(_ context.Context, t *Task) ([]byte, error) {
		ran <- &Task{Type: t.Type, Queue: t.Queue}
		return nil, nil
	})
	srv := start(t, c, m, ServerConfig{Queues: map[string]int{"reports": 1, "other": 1}, PollMax: 20 * time.Millisecond})
	defer srv.Shutdown(ctx)

	if err := NewScheduler(SchedulerOptions{}).Register(Schedule{Name: "x", Spec: "@every 1s", QueueName: "reports"}); !errors.Is(err, ErrScheduler) {
		t.Fatalf("QueueName without a Sender: %v", err)
	}
	fired := make(chan string, 64)
	sc := NewScheduler(SchedulerOptions{Sender: c, OnFire: func(s *Schedule, _ time.Time, _ string, _ emq.CronFired) {
		fired <- s.Queue.Name()
	}})
	if err := sc.Register(Schedule{Name: "x", Spec: "@every 1s", QueueName: "reports", Task: NewTask("report:x", nil), Options: []Option{Queue("other")}}); !errors.Is(err, ErrScheduler) {
		t.Fatalf("two queue names: %v", err)
	}
	if err := sc.Register(Schedule{Name: "a", Spec: "@every 50ms", QueueName: "reports", Task: NewTask("report:a", nil)}); err != nil {
		t.Fatal(err)
	}
	if err := sc.Register(Schedule{Name: "b", Spec: "@every 50ms", Task: NewTask("report:b", nil), Options: []Option{Queue("other"), MaxRetries(1)}}); err != nil {
		t.Fatal(err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if err := sc.Start(done); err == nil {
		t.Fatal("Start with an ended ctx opened its queues")
	}
	if err := sc.Start(ctx); err != nil {
		t.Fatalf("Start after a failed start: %v", err)
	}
	if err := sc.Start(ctx); !errors.Is(err, ErrSchedulerStarted) || !errors.Is(err, ErrScheduler) {
		t.Fatalf("second Start: %v", err)
	}
	if err := sc.Run(ctx); !errors.Is(err, ErrSchedulerStarted) {
		t.Fatalf("Run after Start: %v", err)
	}
	want := map[string]string{"report:a": "reports", "report:b": "other"}
	for len(want) > 0 {
		got := recv(t, ran)
		if q, ok := want[got.Type]; ok {
			if got.Queue != q {
				t.Fatalf("%s ran from %s, want %s", got.Type, got.Queue, q)
			}
			delete(want, got.Type)
		}
	}
	if err := sc.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	close(fired) // a fire after Shutdown returned would panic here
	for q := range fired {
		if q != "reports" && q != "other" {
			t.Fatalf("fired into %s", q)
		}
	}
	if err := sc.Start(ctx); !errors.Is(err, ErrSchedulerClosed) {
		t.Fatalf("Start after Shutdown: %v", err)
	}
	if err := NewScheduler(SchedulerOptions{}).Shutdown(ctx); !errors.Is(err, ErrSchedulerNotStarted) {
		t.Fatalf("Shutdown of a scheduler never started: %v", err)
	}
}

// countingSender counts the commands sent through it.
type countingSender struct {
	conn.Sender
	n atomic.Int64
}

func (c *countingSender) Send(ctx context.Context, cmds conn.Cmds, h conn.Handler) error {
	c.n.Add(int64(cmds.Len()))
	return c.Sender.Send(ctx, cmds, h)
}

func (c *countingSender) Do(ctx context.Context, args ...any) (resp.Value, error) {
	c.n.Add(1)
	return c.Sender.Do(ctx, args...)
}

func (c *countingSender) DoFunc(ctx context.Context, cmd resp.Cmd, fn func(resp.Value) error) error {
	c.n.Add(1)
	return c.Sender.DoFunc(ctx, cmd, fn)
}

func (c *countingSender) DoInt(ctx context.Context, cmd resp.Cmd) (int64, error) {
	c.n.Add(1)
	return c.Sender.DoInt(ctx, cmd)
}

// Issue 25's target: a cron tick costs one server call per slot. Every
// command the scheduler sends is counted; between two consecutive fired
// slots of a schedule (after its start-up reads) it sent exactly one.
func TestSchedulerOneCallPerSlot(t *testing.T) {
	c := &countingSender{Sender: fresh(t)}
	ctx := tctx(t)
	at := make(chan int64, 64)
	sc := NewScheduler(SchedulerOptions{Sender: c, OnFire: func(*Schedule, time.Time, string, emq.CronFired) {
		at <- c.n.Load()
	}})
	if err := sc.Register(Schedule{Name: "tick", Spec: "@every 20ms", QueueName: "ticks", Payload: []byte("p")}); err != nil {
		t.Fatal(err)
	}
	if err := sc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer sc.Shutdown(ctx)
	prev := recv(t, at)
	for range 5 {
		n := recv(t, at)
		if n-prev != 1 {
			t.Fatalf("%d server calls for one slot, want 1", n-prev)
		}
		prev = n
	}
}

// StartScheduler returns a started scheduler (its schedule fires into the
// queue it names), or the first error and no scheduler: a schedule
// refused by Register, or a queue that cannot be opened.
func TestStartScheduler(t *testing.T) {
	c := fresh(t)
	ctx := tctx(t)
	tick := Schedule{Name: "tick", Spec: "@every 20ms", QueueName: "ticks", Payload: []byte("p")}
	if sc, err := StartScheduler(ctx, SchedulerOptions{}, tick); !errors.Is(err, ErrScheduler) || sc != nil {
		t.Fatalf("without a Sender: %v, %v", sc, err)
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if sc, err := StartScheduler(ended, SchedulerOptions{Sender: c}, tick); err == nil || sc != nil {
		t.Fatalf("with an ended ctx: %v, %v", sc, err)
	}
	fired := make(chan string, 64)
	sc, err := StartScheduler(ctx, SchedulerOptions{Sender: c, OnFire: func(s *Schedule, _ time.Time, id string, _ emq.CronFired) {
		fired <- id
	}}, tick)
	if err != nil {
		t.Fatal(err)
	}
	id := recv(t, fired)
	if err := sc.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	q := openQueue(t, c, "ticks")
	if r := row(t, q, id); string(r.Payload) != "p" {
		t.Fatalf("job %s in ticks: %+v", id, r)
	}
}
