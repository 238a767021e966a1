package jobs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/echomq/echomq-go/emq"
)

// TestCancelPendingAndDelayed: a pending and a delayed job end dead with
// "cancelled" in one step, out of their sets; a Wait on them returns an
// error matching ErrCancelled.
func TestCancelPendingAndDelayed(t *testing.T) {
	c := fresh(t)
	cl := newClient(t, c)
	ctx := tctx(t)
	q := openQueue(t, c, DefaultQueue)
	p, err := cl.Enqueue(ctx, NewTask("a", nil), Retention(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	d, err := cl.Enqueue(ctx, NewTask("a", nil), ProcessIn(time.Hour), Retention(time.Minute))
	if err != nil || d.State != emq.StateDelayed {
		t.Fatal(d, err)
	}
	for _, c := range []struct {
		id   string
		want emq.State
	}{{p.ID, emq.StatePending}, {d.ID, emq.StateDelayed}} {
		was, err := cl.Cancel(ctx, DefaultQueue, c.id)
		if err != nil || was != c.want {
			t.Fatalf("Cancel: %v, %v; want %v", was, err, c.want)
		}
		if r := row(t, q, c.id); r.State != emq.StateDead || r.Error != CancelReason {
			t.Fatalf("row %+v", r)
		}
		if _, err := cl.Wait(ctx, DefaultQueue, c.id); !errors.Is(err, ErrCancelled) || !errors.Is(err, ErrDead) {
			t.Fatalf("Wait: %v", err)
		}
	}
	st, _ := q.Stats(ctx)
	if st.Pending != 0 || st.Delayed != 0 || st.Dead != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// TestCancelRunning: a running job's handler context ends with cause
// ErrCancelled (heard on the cancel channel: the lease extension is an
// hour away, so it is not what ended it), and the job stays dead with
// "cancelled" though its handler then returns nil.
func TestCancelRunning(t *testing.T) {
	c := fresh(t)
	cl := newClient(t, c)
	ctx := tctx(t)
	started, cause := make(chan string, 1), make(chan error, 1)
	h := untilEnd(started, cause)
	s := start(t, c, h, ServerConfig{Queues: map[string]int{"q": 1}, Lease: 2 * time.Hour, Heartbeat: -1, PubSub: pubsubOpts()})
	waitListening(t, s)
	info, err := cl.Enqueue(ctx, NewTask("long", nil), Queue("q"), Retention(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if id := recv(t, started); id != info.ID {
		t.Fatalf("started %s", id)
	}
	was, err := cl.Cancel(ctx, "q", info.ID)
	if err != nil || was != emq.StateActive {
		t.Fatalf("Cancel: %v, %v", was, err)
	}
	if err := recv(t, cause); !errors.Is(err, ErrCancelled) {
		t.Fatalf("handler's cause %v, want ErrCancelled", err)
	}
	if _, err := cl.Wait(ctx, "q", info.ID); !errors.Is(err, ErrCancelled) {
		t.Fatalf("Wait: %v", err)
	}
	s.Shutdown(ctx) // every outcome sent
	q := openQueue(t, c, "q")
	if r := row(t, q, info.ID); r.State != emq.StateDead || r.Error != CancelReason {
		t.Fatalf("row %+v", r)
	}
	if st, _ := q.Stats(ctx); st.Active != 0 || st.Dead != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestCancelUnheard: a server that does not hear the cancel (no
// subscription) loses the job at its next lease extension: the handler's
// cause is emq.ErrLeaseLost, and the job stays dead "cancelled".
func TestCancelUnheard(t *testing.T) {
	c := fresh(t)
	cl := newClient(t, c)
	ctx := tctx(t)
	started, cause := make(chan string, 1), make(chan error, 1)
	h := untilEnd(started, cause)
	start(t, c, h, ServerConfig{Queues: map[string]int{"q": 1}, Lease: time.Second, ExtendInterval: 20 * time.Millisecond, Heartbeat: -1})
	info, _ := cl.Enqueue(ctx, NewTask("long", nil), Queue("q"))
	recv(t, started)
	if _, err := cl.Cancel(ctx, "q", info.ID); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, cause); !errors.Is(err, emq.ErrLeaseLost) {
		t.Fatalf("cause %v, want emq.ErrLeaseLost", err)
	}
	if r := row(t, openQueue(t, c, "q"), info.ID); r.State != emq.StateDead || r.Error != CancelReason {
		t.Fatalf("row %+v", r)
	}
}

// TestCancelFinished: cancelling a completed or dead job, or none, is a
// typed error and changes nothing.
func TestCancelFinished(t *testing.T) {
	c := fresh(t)
	cl := newClient(t, c)
	ctx := tctx(t)
	q := openQueue(t, c, "q")
	done := make(chan struct{}, 2)
	h := HandlerFunc(func(_ context.Context, task *Task) ([]byte, error) {
		defer func() { done <- struct{}{} }()
		if task.Type == "fail" {
			return nil, ErrSkipRetry
		}
		return []byte("r"), nil
	})
	start(t, c, h, ServerConfig{Queues: map[string]int{"q": 1}, Heartbeat: -1})
	ok, _ := cl.Enqueue(ctx, NewTask("ok", nil), Queue("q"), Retention(time.Minute))
	bad, _ := cl.Enqueue(ctx, NewTask("fail", nil), Queue("q"), Retention(time.Minute))
	cl.Wait(ctx, "q", ok.ID)
	cl.Wait(ctx, "q", bad.ID)
	before := map[string]emq.JobRow{ok.ID: row(t, q, ok.ID), bad.ID: row(t, q, bad.ID)}
	for id, r := range before {
		was, err := cl.Cancel(ctx, "q", id)
		if !errors.Is(err, emq.ErrFinished) || was != r.State {
			t.Fatalf("Cancel of a %s job: %v, %v", r.State, was, err)
		}
		if after := row(t, q, id); after.State != r.State || after.Error != r.Error || after.Attempts != r.Attempts {
			t.Fatalf("row changed: %+v → %+v", r, after)
		}
	}
	if res, _, _ := q.Result(ctx, ok.ID); string(res) != "r" {
		t.Fatalf("result %q", res)
	}
	if _, err := cl.Cancel(ctx, "q", "JOB0KHTOWnGLuC"); !errors.Is(err, emq.ErrNotFound) {
		t.Fatalf("Cancel of no job: %v", err)
	}
	if _, err := cl.Cancel(ctx, "q", "nope"); !errors.Is(err, emq.ErrInvalidID) {
		t.Fatalf("Cancel of a bad id: %v", err)
	}
}

// waitListening waits until s is subscribed to its cancel channels.
func waitListening(t *testing.T, s *Server) {
	t.Helper()
	waitFor(t, "the server to subscribe", func() bool { return s.Health().Listening })
}

// untilEnd returns a handler that reports its start, runs until its
// context ends, reports the cause and returns nil.
func untilEnd(started chan<- string, cause chan<- error) HandlerFunc {
	return func(ctx context.Context, task *Task) ([]byte, error) {
		started <- task.ID
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return nil, nil
	}
}
