package emq

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestChaosEveryJobCompletesOnce runs 10,000 jobs through 8 workers whose
// handler "crashes" 5% of the time (ErrAbandon: the job is left leased,
// neither completed nor retried, so only the reaper brings it back) and
// fails 2% of the time (retried at once). Every job must complete exactly
// once (a Complete that answered 1), none may be lost, and the queue must
// end empty. (It takes about a second; the 60 s bound only stops a hang.)
func TestChaosEveryJobCompletesOnce(t *testing.T) {
	jobs, workers := 10000, 8
	if testing.Short() {
		jobs = 2000
	}
	q := fresh(t, "chaos")
	ctx := tctx(t)
	ids := make(map[string]bool, jobs)
	for start := 0; start < jobs; start += 500 {
		res, err := q.EnqueueBatch(ctx, make([][]byte, min(500, jobs-start)))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			ids[r.ID] = true
		}
	}

	var mu sync.Mutex
	completed := make(map[string]int, jobs)
	var total, crashes, failures, stale int
	allDone := make(chan struct{})
	onEvent := func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		switch e.Kind {
		case EventCompleted:
			completed[e.Job.ID]++
			total++
			if total == jobs {
				close(allDone)
			}
		case EventAbandoned:
			crashes++
		case EventRetried:
			failures++
		case EventStale:
			stale++
		case EventError, EventDead:
			t.Errorf("event %v on %s: %v", e.Kind, e.Job.ID, e.Err)
		}
	}
	handler := HandlerFunc(func(ctx context.Context, j *Job) error {
		switch x := rand.IntN(100); {
		case x < 5:
			return ErrAbandon // the crash
		case x < 7:
			return errors.New("transient failure")
		}
		return nil
	})
	cfg := WorkerConfig{
		Concurrency: 4, Lease: 200 * time.Millisecond, MaxAttempts: 1000,
		Backoff: func(int64, error) time.Duration { return 0 },
		PollMax: 20 * time.Millisecond, ReapInterval: 50 * time.Millisecond,
		PromoteInterval: 50 * time.Millisecond, OnEvent: onEvent,
	}
	var ws []*Worker
	for range workers {
		wq, err := Open(ctx, dial(t), "chaos")
		if err != nil {
			t.Fatal(err)
		}
		w, err := NewWorker(wq, handler, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
		require.NoError(t, w.Start())
	}
	start := time.Now()
	select {
	case <-allDone:
	case <-time.After(60 * time.Second):
		mu.Lock()
		t.Errorf("after 60 s: %d of %d completed", total, jobs)
		mu.Unlock()
	}
	elapsed := time.Since(start)
	// A late duplicate shows itself before the counting: the counting
	// comes after every worker's Shutdown, which returns once its last
	// outcome is settled and its event told.
	for _, w := range ws {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := w.Shutdown(sctx); err != nil {
			t.Error(err)
		}
		cancel()
	}
	mu.Lock()
	defer mu.Unlock()
	for id, n := range completed {
		if !ids[id] {
			t.Fatalf("completed an id never enqueued: %s", id)
		}
		if n != 1 {
			t.Fatalf("%s completed %d times", id, n)
		}
	}
	if len(completed) != jobs {
		t.Fatalf("%d of %d jobs completed", len(completed), jobs)
	}
	cctx := tctx(t) // ctx may have run out during a slow run
	for _, s := range []State{StatePending, StateActive, StateDelayed, StateDead} {
		n, err := q.Count(cctx, s)
		require.NoError(t, err)
		require.Zero(t, n, "ids left in %s", s)
	}
	if n := do(t, "DBSIZE"); n != "1" {
		t.Fatalf("%s keys left, want only the fence", n)
	}
	t.Logf("%d jobs in %v (%.0f jobs/s): %d crashes reaped, %d failures retried, %d stale acks",
		jobs, elapsed.Round(time.Millisecond), float64(jobs)/elapsed.Seconds(), crashes, failures, stale)
}
