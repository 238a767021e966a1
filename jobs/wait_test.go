package jobs

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/emq"
)

// onlyHeard sets every pause of Wait to an hour for the test: a Wait
// then ends only on what it hears.
func onlyHeard(t testing.TB) {
	setWaitTimes(t, map[*time.Duration]time.Duration{&WaitRecheck: time.Hour, &WaitPendingRecheck: time.Hour, &WaitReapGrace: time.Hour})
}

// TestWaitResult: a Wait begun before any server runs returns the
// handler's result once the job completes (announced, not polled: every
// recheck is an hour), and a second Wait after the end reads it at once.
func TestWaitResult(t *testing.T) {
	c := fresh(t)
	cl := newClient(t, c)
	ctx := tctx(t)
	onlyHeard(t)
	info, err := cl.Enqueue(ctx, NewTask("upper", []byte("abc")), Retention(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	errs := make(chan error, 1)
	go func() {
		res, err := cl.Wait(ctx, DefaultQueue, info.ID)
		got <- res
		errs <- err
	}()
	// The Wait is subscribed once its channel has a subscriber.
	waitSubscribed(t, c, openQueue(t, c, DefaultQueue).Keys().DoneChannel(info.ID))
	h := HandlerFunc(func(_ context.Context, task *Task) ([]byte, error) {
		return []byte(strings.ToUpper(string(task.Body))), nil
	})
	start(t, c, h, ServerConfig{Queues: map[string]int{DefaultQueue: 1}, Heartbeat: -1})
	if res := recv(t, got); string(res) != "ABC" {
		t.Fatalf("result %q", res)
	}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	res, err := cl.Wait(ctx, DefaultQueue, info.ID)
	if err != nil || string(res) != "ABC" {
		t.Fatalf("second Wait: %q, %v", res, err)
	}
	q := openQueue(t, c, DefaultQueue)
	if ttl, _ := c.Do(ctx, "PTTL", q.Keys().ResultKey(info.ID)); ttl.Int <= 0 || ttl.Int > 60_000 {
		t.Fatalf("result PTTL %d", ttl.Int)
	}
	if r := row(t, q, info.ID); r.State != emq.StateCompleted {
		t.Fatalf("row %+v", r)
	}
}

// TestWaitDead: a job that fails through its retries ends dead, and Wait
// returns its last error; MaxRetries(1) makes two attempts, the first
// retried through settle_claim's retry with the server's backoff.
func TestWaitDead(t *testing.T) {
	c := fresh(t)
	cl := newClient(t, c)
	ctx := tctx(t)
	attempts := make(chan int64, 4)
	h := HandlerFunc(func(_ context.Context, task *Task) ([]byte, error) {
		attempts <- task.Attempt
		return nil, errors.New("boom " + string(rune('0'+task.Attempt)))
	})
	start(t, c, h, ServerConfig{Queues: map[string]int{DefaultQueue: 1}, Heartbeat: -1,
		Backoff: func(int64, error) time.Duration { return 0 }})
	info, _ := cl.Enqueue(ctx, NewTask("x", nil), MaxRetries(1), Retention(time.Minute))
	_, err := cl.Wait(ctx, DefaultQueue, info.ID)
	var je *JobError
	if !errors.As(err, &je) || je.Text != "boom 2" || errors.Is(err, ErrCancelled) {
		t.Fatalf("Wait: %v", err)
	}
	if a, b := <-attempts, <-attempts; a != 1 || b != 2 || len(attempts) != 0 {
		t.Fatalf("attempts %d, %d, then %d more", a, b, len(attempts))
	}
}

// TestWaitRefused: a job enqueued without Retention cannot be waited for
// while it lives, and one that does not exist is emq.ErrNotFound.
func TestWaitRefused(t *testing.T) {
	c := fresh(t)
	cl := newClient(t, c)
	ctx := tctx(t)
	info, _ := cl.Enqueue(ctx, NewTask("x", nil))
	if _, err := cl.Wait(ctx, DefaultQueue, info.ID); !errors.Is(err, ErrNotWaitable) {
		t.Fatalf("Wait: %v", err)
	}
	if _, err := cl.Wait(ctx, DefaultQueue, "JOB0KHTOWnGLuC"); !errors.Is(err, emq.ErrNotFound) {
		t.Fatalf("Wait: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	info, _ = cl.Enqueue(ctx, NewTask("x", nil), Retention(time.Minute))
	if _, err := cl.Wait(short, DefaultQueue, info.ID); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait past ctx: %v", err)
	}
}

// TestTaskTimeout: a task's own timeout ends its handler's context
// (cause matching ErrJobTimeout) and fails the attempt.
func TestTaskTimeout(t *testing.T) {
	c := fresh(t)
	cl := newClient(t, c)
	ctx := tctx(t)
	cause := make(chan error, 1)
	h := HandlerFunc(func(ctx context.Context, _ *Task) ([]byte, error) {
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	start(t, c, h, ServerConfig{Queues: map[string]int{DefaultQueue: 1}, Heartbeat: -1})
	info, _ := cl.Enqueue(ctx, NewTask("x", nil), Timeout(20*time.Millisecond), MaxRetries(0), Retention(time.Minute))
	if err := recv(t, cause); !errors.Is(err, ErrJobTimeout) {
		t.Fatalf("cause %v", err)
	}
	if _, err := cl.Wait(ctx, DefaultQueue, info.ID); !errors.Is(err, ErrDead) {
		t.Fatalf("Wait: %v", err)
	}
}

// TestResultTooLarge: a result over MaxResult ends the job in dead with
// the typed error's text; nothing is kept at the result key.
func TestResultTooLarge(t *testing.T) {
	c := fresh(t)
	cl := newClient(t, c)
	ctx := tctx(t)
	h := HandlerFunc(func(context.Context, *Task) ([]byte, error) { return make([]byte, 2048), nil })
	start(t, c, h, ServerConfig{Queues: map[string]int{DefaultQueue: 1}, Heartbeat: -1, MaxResult: 1024})
	info, _ := cl.Enqueue(ctx, NewTask("x", nil), Retention(time.Minute))
	_, err := cl.Wait(ctx, DefaultQueue, info.ID)
	var je *JobError
	if !errors.As(err, &je) || je.Text != (&ResultTooLargeError{Size: 2048, Max: 1024}).Error() {
		t.Fatalf("Wait: %v", err)
	}
	if _, ok, _ := openQueue(t, c, DefaultQueue).Result(ctx, info.ID); ok {
		t.Fatal("a result was kept")
	}
}
