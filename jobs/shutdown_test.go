package jobs

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/echomq/echomq-go/emq"
)

// blocking returns a handler that reports each start and returns once
// release closes (or its context ends, with the cause).
func blocking(started chan<- string, release <-chan struct{}) HandlerFunc {
	return func(ctx context.Context, task *Task) ([]byte, error) {
		started <- task.ID
		select {
		case <-release:
			return nil, nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// TestShutdownGraceful: Shutdown with jobs in flight waits for their
// handlers and completes them, releases the jobs claimed ahead to
// pending, and loses none: 4 completed, 46 pending, none active.
func TestShutdownGraceful(t *testing.T) {
	c := fresh(t)
	cl := newClient(t, c)
	ctx := tctx(t)
	fill(t, cl, "q", 50)
	started, release := make(chan string, 64), make(chan struct{})
	s := start(t, c, blocking(started, release), ServerConfig{Queues: map[string]int{"q": 1}, Concurrency: 4, Prefetch: 8, Heartbeat: -1})
	for range 4 {
		recv(t, started)
	}
	q := openQueue(t, c, "q")
	if st, _ := q.Stats(ctx); st.Active != 12 {
		t.Fatalf("active %d before shutdown, want 4 running + 8 claimed ahead", st.Active)
	}
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(ctx) }()
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v with handlers running", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	if err := recv(t, shut); err != nil {
		t.Fatal(err)
	}
	if len(started) != 0 {
		t.Fatalf("%d handlers started after Shutdown", len(started))
	}
	st, _ := q.Stats(ctx)
	if st.Active != 0 || st.Pending != 46 || st.Dead != 0 {
		t.Fatalf("after shutdown %+v, want 46 pending and 4 completed", st)
	}
	<-s.Done()
}

// TestShutdownDeadline: a Shutdown whose ctx ends first ends the running
// handlers (cause emq.ErrShutdown) and leaves their jobs active for the
// reaper; the ones claimed ahead are still released. Nothing is lost.
func TestShutdownDeadline(t *testing.T) {
	c := fresh(t)
	cl := newClient(t, c)
	ctx := tctx(t)
	fill(t, cl, "q", 20)
	started := make(chan string, 64)
	causes := make(chan error, 64)
	s := start(t, c, untilEnd(started, causes), ServerConfig{Queues: map[string]int{"q": 1}, Concurrency: 2, Prefetch: 3, Heartbeat: -1})
	recv(t, started)
	recv(t, started)
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v", err)
	}
	for range 2 {
		if err := recv(t, causes); !errors.Is(err, emq.ErrShutdown) {
			t.Fatalf("cause %v", err)
		}
	}
	<-s.Done()
	st, _ := openQueue(t, c, "q").Stats(ctx)
	if st.Active != 2 || st.Pending != 18 {
		t.Fatalf("after shutdown %+v, want 2 active (for the reaper) and 18 pending", st)
	}
}

// TestServerMaintains: the server's maintainer promotes a due delayed
// job (which then runs), reaps an expired lease back to a handler, and
// trims the dead set to DeadMaxCount.
func TestServerMaintains(t *testing.T) {
	c := fresh(t)
	cl := newClient(t, c)
	ctx := tctx(t)
	q := openQueue(t, c, "q")
	for range 3 {
		q.Enqueue(ctx, []byte("x"))
		j, _, _ := q.Claim(ctx, time.Minute)
		q.Retry(ctx, j.ID, j.Token, 0, 0, "old")
	}
	stale, _ := cl.Enqueue(ctx, NewTask("reaped", nil), Queue("q"))
	if j, _, _ := q.Claim(ctx, time.Millisecond); j.ID != stale.ID {
		t.Fatal("claimed", j.ID)
	}
	later, _ := cl.Enqueue(ctx, NewTask("later", nil), Queue("q"), ProcessIn(time.Millisecond))
	ran := make(chan string, 4)
	h := HandlerFunc(func(_ context.Context, t *Task) ([]byte, error) {
		ran <- t.ID + " " + strconv.FormatInt(t.Attempt, 10)
		return nil, nil
	})
	start(t, c, h, ServerConfig{Queues: map[string]int{"q": 1}, Heartbeat: -1, PromoteInterval: 5 * time.Millisecond,
		ReapInterval: 5 * time.Millisecond, TrimInterval: 5 * time.Millisecond, DeadMaxCount: 1})
	got := map[string]bool{recv(t, ran): true, recv(t, ran): true}
	if !got[stale.ID+" 2"] || !got[later.ID+" 1"] {
		t.Fatalf("ran %v", got)
	}
	waitFor(t, "the dead set trimmed to 1", func() bool {
		st, _ := q.Stats(ctx)
		return st.Dead == 1
	})
}
