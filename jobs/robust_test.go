package jobs

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/emq"
)

// waitFor polls cond, a real condition of the system under test, every
// millisecond until it holds, failing the test after 20 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	waitUntil(t, ctx, what, time.Millisecond, cond)
}

// waitUntil polls cond every interval until it holds, failing the test
// when ctx ends first. No sleep: a ticker paces it and ctx cuts it short.
func waitUntil(t testing.TB, ctx context.Context, what string, every time.Duration, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// pause waits d, or less when ctx ends first: a handler's simulated work
// or a consumer's backoff, which its context cuts short.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// waitSubscribed waits until channel ch has a subscriber (a Wait's).
func waitSubscribed(t testing.TB, c conn.Sender, ch string) {
	t.Helper()
	waitFor(t, "a subscriber of "+ch, func() bool {
		v, err := c.Do(tctx(t), "PUBSUB", "NUMSUB", ch)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := v.Elems[1].AsInt()
		return n >= 1
	})
}

// TestWaitHearsReapedDeath: a job whose lease ran out past its attempts
// is ended dead by a Server's reaper, and a Wait begun before hears it
// at once (every recheck is an hour): the Server reaps with reap_announce,
// which publishes the death on the job's done channel. Before, the
// reaper announced nothing and the Wait slept until its recheck.
func TestWaitHearsReapedDeath(t *testing.T) {
	c := fresh(t)
	cl := newClient(t, c)
	ctx := tctx(t)
	onlyHeard(t)
	info, err := cl.Enqueue(ctx, NewTask("slow", nil), Retention(time.Minute), MaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	// A peer claims it with a lease of 1 ms and is never heard of again.
	q := openQueue(t, c, DefaultQueue)
	if j, ok, err := q.Claim(ctx, time.Millisecond); err != nil || !ok || j.ID != info.ID {
		t.Fatalf("claim: %+v, %v, %v", j, ok, err)
	}
	errs := make(chan error, 1)
	go func() {
		_, err := cl.Wait(ctx, DefaultQueue, info.ID)
		errs <- err
	}()
	waitSubscribed(t, c, q.Keys().DoneChannel(info.ID))
	start(t, c, HandlerFunc(func(context.Context, *Task) ([]byte, error) { return nil, nil }),
		ServerConfig{Queues: map[string]int{DefaultQueue: 1}, Heartbeat: -1, MaxRetries: -1, ReapInterval: 10 * time.Millisecond})
	err = recv(t, errs)
	var je *JobError
	if !errors.As(err, &je) || !errors.Is(err, ErrDead) || je.ID != info.ID {
		t.Fatalf("Wait: %v, want the job's *JobError", err)
	}
	if r := row(t, q, info.ID); r.State != emq.StateDead {
		t.Fatalf("row %+v", r)
	}
}

// TestServerStopsWhenConnDies: the server's *conn.Conn is killed by the
// server (CLIENT KILL): the Server stops by itself, Health says why
// (Stopped matching ErrSenderGone, not Running), Done closes, Run-style
// Shutdown returns the cause, and every goroutine it started is gone.
// Before, the Server went on failing round after round, for ever.
func TestServerStopsWhenConnDies(t *testing.T) {
	admin := fresh(t)
	before := runtime.NumGoroutine()
	c, err := conn.Dial(tctx(t), conn.Options{Addr: srv.Addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id, err := c.Do(tctx(t), "CLIENT", "ID")
	if err != nil {
		t.Fatal(err)
	}
	fill(t, newClient(t, admin), DefaultQueue, 100)
	ran := make(chan struct{}, 100)
	h := HandlerFunc(func(context.Context, *Task) ([]byte, error) {
		select {
		case ran <- struct{}{}:
		default:
		}
		return nil, nil
	})
	s, err := NewServer(tctx(t), c, h, ServerConfig{Queues: map[string]int{DefaultQueue: 1}, Heartbeat: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	recv(t, ran) // it serves
	if _, err := admin.Do(tctx(t), "CLIENT", "KILL", "ID", id.Int); err != nil {
		t.Fatal(err)
	}
	recv(t, s.Done())
	hl := s.Health()
	if hl.Running || !errors.Is(hl.Stopped, ErrSenderGone) {
		t.Fatalf("health %+v: want stopped with ErrSenderGone", hl)
	}
	if err := s.Shutdown(tctx(t)); !errors.Is(err, ErrSenderGone) {
		t.Fatalf("Shutdown after: %v, want ErrSenderGone", err)
	}
	// The server's goroutines (round loop, handlers, background parts,
	// the cancel listener's subscription, the watcher) and the dead
	// connection's are gone.
	waitFor(t, "the server's goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}

// TestShutdownNotStarted: Shutdown on a server never started is the
// sentinel ErrServerNotStarted, and the server can still start.
func TestShutdownNotStarted(t *testing.T) {
	c := fresh(t)
	s, err := NewServer(tctx(t), c, HandlerFunc(func(context.Context, *Task) ([]byte, error) { return nil, nil }),
		ServerConfig{Queues: map[string]int{DefaultQueue: 1}, Heartbeat: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(tctx(t)); !errors.Is(err, ErrServerNotStarted) {
		t.Fatalf("Shutdown before Start: %v, want ErrServerNotStarted", err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(tctx(t)); err != nil {
		t.Fatal(err)
	}
}
