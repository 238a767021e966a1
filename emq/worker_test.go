package emq

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
)

// hangGuard bounds a wait for something that must happen: only a hang
// should reach it. A loaded machine can be slow, so a wait is never a
// bound on how fast the code under test is.
const hangGuard = 30 * time.Second

// waitFor polls cond every 5 ms until it holds, and fails the test after
// d or hangGuard, whichever is longer: d is how long the wait should
// take, never a bound the test's pass depends on.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	d = max(d, hangGuard)
	deadline := time.Now().Add(d)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		<-tick.C
	}
}

// startWorker starts a worker and shuts it down at the test's end.
func startWorker(t *testing.T, q *Queue, h Handler, cfg WorkerConfig) *Worker {
	t.Helper()
	w, err := NewWorker(q, h, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := w.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown at cleanup: %v", err)
		}
	})
	return w
}

func TestChainOrder(t *testing.T) {
	var trace []string
	mw := func(name string) Middleware {
		return func(next Handler) Handler {
			return HandlerFunc(func(ctx context.Context, j *Job) error {
				trace = append(trace, name)
				return next.ProcessJob(ctx, j)
			})
		}
	}
	h := Chain(HandlerFunc(func(context.Context, *Job) error { trace = append(trace, "h"); return nil }), mw("a"), mw("b"))
	require.NoError(t, h.ProcessJob(context.Background(), &Job{}))
	if got := strings.Join(trace, ","); got != "a,b,h" {
		t.Fatalf("order %s", got)
	}
}

func TestBackoff(t *testing.T) {
	c, _ := WorkerConfig{BackoffBase: 100 * time.Millisecond, BackoffMax: time.Second}.withDefaults()
	for attempt, want := range map[int64]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second, 80: time.Second} {
		for range 50 {
			if d := c.defaultBackoff(attempt); d < want/2 || d > want {
				t.Fatalf("backoff(%d) = %v, want in [%v, %v]", attempt, d, want/2, want)
			}
		}
	}
	if _, err := (WorkerConfig{Lease: time.Microsecond}).withDefaults(); !errors.Is(err, ErrArg) {
		t.Fatalf("sub-ms lease accepted: %v", err)
	}
}

func TestWorkerCompletes(t *testing.T) {
	q := fresh(t, "work")
	ctx := tctx(t)
	const n = 300
	payloads := make([][]byte, n)
	for i := range payloads {
		payloads[i] = fmt.Appendf(nil, "p%d", i)
	}
	if _, err := q.EnqueueBatch(ctx, payloads); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var completed atomic.Int64
	before := runtime.NumGoroutine()
	w := startWorker(t, q, HandlerFunc(func(ctx context.Context, j *Job) error {
		mu.Lock()
		seen[string(j.Payload)]++
		mu.Unlock()
		return nil
	}), WorkerConfig{Concurrency: 4, PollMax: 20 * time.Millisecond, OnEvent: func(e Event) {
		if e.Kind == EventCompleted {
			completed.Add(1)
		}
	}})
	waitFor(t, 10*time.Second, "all completed", func() bool { return completed.Load() == n })
	if err := w.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	<-w.Done()
	if len(seen) != n {
		t.Fatalf("handled %d distinct payloads", len(seen))
	}
	for p, c := range seen {
		if c != 1 {
			t.Fatalf("%s handled %d times", p, c)
		}
	}
	if s := w.Stats(); s.Claimed != n || s.Completed != n || s.Errors != 0 {
		t.Fatalf("stats %+v", s)
	}
	if do(t, "DBSIZE") != "1" {
		t.Fatalf("keys left: %s", do(t, "KEYS", "*"))
	}
	waitFor(t, time.Second, "goroutines to stop", func() bool { return runtime.NumGoroutine() <= before })
	if err := w.Start(); !errors.Is(err, ErrWorkerStarted) {
		t.Fatalf("restart = %v", err)
	}
}

func TestWorkerRetriesThenDead(t *testing.T) {
	q := fresh(t, "work")
	ctx := tctx(t)
	id, err := q.Enqueue(ctx, []byte("x"))
	require.NoError(t, err)
	var calls atomic.Int64
	var dead atomic.Bool
	startWorker(t, q, HandlerFunc(func(ctx context.Context, j *Job) error {
		return fmt.Errorf("failure %d", calls.Add(1))
	}), WorkerConfig{
		MaxAttempts: 3, Backoff: func(int64, error) time.Duration { return 0 },
		PollMax: 10 * time.Millisecond,
		OnEvent: func(e Event) {
			if e.Kind == EventDead {
				dead.Store(true)
			}
		},
	})
	waitFor(t, 5*time.Second, "dead", dead.Load)
	r := row(t, q, id)
	if r["state"] != "dead" || r["attempts"] != "3" || r["error"] != "failure 3" || calls.Load() != 3 {
		t.Fatalf("row %v after %d calls", r, calls.Load())
	}
}

func TestWorkerBackoffDelays(t *testing.T) {
	q := fresh(t, "work")
	id, err := q.Enqueue(tctx(t), nil)
	require.NoError(t, err)
	var retried atomic.Bool
	startWorker(t, q, HandlerFunc(func(context.Context, *Job) error { return errors.New("no") }),
		WorkerConfig{BackoffBase: time.Hour, BackoffMax: 2 * time.Hour, PromoteInterval: -1, OnEvent: func(e Event) {
			if e.Kind == EventRetried {
				retried.Store(true)
			}
		}})
	waitFor(t, 5*time.Second, "retried", retried.Load)
	if due := scoreInt(t, q.keys.Delayed, id) - serverMillis(t); due < 29*60000 || due > 3600000 {
		t.Fatalf("due in %d ms, want 30..60 min", due)
	}
}

func TestWorkerPanicSkipRetryAbandon(t *testing.T) {
	q := fresh(t, "work")
	ctx := tctx(t)
	panicky, err := q.Enqueue(ctx, []byte("panic"))
	require.NoError(t, err)
	skip, err := q.Enqueue(ctx, []byte("skip"))
	require.NoError(t, err)
	abandon, err := q.Enqueue(ctx, []byte("abandon"))
	require.NoError(t, err)
	var events sync.Map
	w := startWorker(t, q, HandlerFunc(func(ctx context.Context, j *Job) error {
		switch string(j.Payload) {
		case "panic":
			if j.Token == 1 {
				panic("kaboom")
			}
			return nil
		case "skip":
			return fmt.Errorf("bad input: %w", ErrSkipRetry)
		}
		return ErrAbandon
	}), WorkerConfig{
		Backoff: func(int64, error) time.Duration { return 0 }, PollMax: 10 * time.Millisecond,
		ReapInterval: -1,
		OnEvent:      func(e Event) { events.Store(e.Job.ID+" "+e.Kind.String(), e.Err) },
	})
	waitFor(t, 5*time.Second, "outcomes", func() bool {
		_, a := events.Load(panicky + " completed")
		_, b := events.Load(skip + " dead")
		_, c := events.Load(abandon + " abandoned")
		return a && b && c
	})
	perr, _ := events.Load(panicky + " retried")
	var pe *PanicError
	if !errors.As(perr.(error), &pe) || pe.Value != "kaboom" || len(pe.Stack) == 0 {
		t.Fatalf("panic event err %v", perr)
	}
	if s := w.Stats(); s.Panics != 1 || s.Abandoned != 1 || s.Dead != 1 {
		t.Fatalf("stats %+v", s)
	}
	if r := row(t, q, skip); r["state"] != "dead" || r["attempts"] != "1" {
		t.Fatalf("skip row %v", r)
	}
	if r := row(t, q, abandon); r["state"] != "active" || score(t, q.keys.Active, abandon) == "" {
		t.Fatalf("abandoned row %v", r)
	}
}

// A handler that runs past its first lease, with the reaper running every
// 20 ms, keeps the job: the worker extends the lease. The handler is held
// until the server's clock has passed the first deadline and the lease
// has been extended beyond it, so the test does not depend on how fast
// the machine is (only the extender must keep within a lease of 1 s).
func TestWorkerExtendsLease(t *testing.T) {
	q := fresh(t, "work")
	id, err := q.Enqueue(tctx(t), nil)
	require.NoError(t, err)
	var done atomic.Bool
	var token atomic.Int64
	running, release := make(chan struct{}, 1), make(chan struct{})
	startWorker(t, q, HandlerFunc(func(ctx context.Context, j *Job) error {
		token.Store(j.Token)
		select {
		case running <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		return nil
	}), WorkerConfig{Lease: time.Second, ReapInterval: 20 * time.Millisecond, OnEvent: func(e Event) {
		if e.Kind == EventCompleted {
			done.Store(true)
		}
	}})
	select {
	case <-running:
	case <-time.After(hangGuard):
		t.Fatal("the handler never ran")
	}
	first := scoreInt(t, q.keys.Active, id) // the first lease's deadline
	waitFor(t, hangGuard, "the first lease to run out and the lease to be extended past it", func() bool {
		s, err := strconv.ParseFloat(score(t, q.keys.Active, id), 64)
		return err == nil && int64(s) > first && serverMillis(t) > first+100
	})
	close(release)
	waitFor(t, hangGuard, "completed", done.Load)
	if token.Load() != 1 || do(t, "EXISTS", q.keys.Job(id)) != "0" {
		t.Fatalf("token %d: the lease was not kept", token.Load())
	}
}

func TestWorkerLeaseLostCancelsHandler(t *testing.T) {
	q := fresh(t, "work")
	id, err := q.Enqueue(tctx(t), nil)
	require.NoError(t, err)
	started := make(chan struct{})
	cause := make(chan error, 1)
	var lost atomic.Bool
	startWorker(t, q, HandlerFunc(func(ctx context.Context, j *Job) error {
		if j.Token > 1 {
			return ErrAbandon // the second claim, after the reap
		}
		close(started)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return nil // would complete, but the lease is gone: nothing is sent
	}), WorkerConfig{Lease: time.Minute, ExtendInterval: 20 * time.Millisecond, ReapInterval: -1, OnEvent: func(e Event) {
		if e.Kind == EventLeaseLost {
			lost.Store(true)
		}
	}})
	<-started
	// Steal the lease: expire it and reap, as another worker's reaper would.
	do(t, "ZADD", q.keys.Active, "1", id)
	n, err := q.Reap(tctx(t), 10, 5)
	require.NoError(t, err)
	require.Equal(t, 1, n, "not reaped")
	select {
	case err := <-cause:
		if !errors.Is(err, ErrLeaseLost) {
			t.Fatalf("cause %v", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("handler not cancelled")
	}
	waitFor(t, time.Second, "lease-lost event", lost.Load)
	if r := row(t, q, id); r["state"] != "pending" && r["state"] != "active" {
		t.Fatalf("row %v", r)
	}
}

func TestWorkerShutdown(t *testing.T) {
	q := fresh(t, "work")
	ctx := tctx(t)
	fast, err := q.Enqueue(ctx, []byte("fast"))
	require.NoError(t, err)
	stuck, err := q.Enqueue(ctx, []byte("stuck"))
	require.NoError(t, err)
	release := make(chan struct{})
	shutting := make(chan struct{}) // closed as Shutdown is called
	running := make(chan string, 2)
	var cause atomic.Value
	w, err := NewWorker(q, HandlerFunc(func(ctx context.Context, j *Job) error {
		running <- string(j.Payload)
		if string(j.Payload) == "fast" {
			<-shutting // still running when the shutdown begins
			return nil
		}
		<-ctx.Done()
		cause.Store(context.Cause(ctx))
		<-release
		return nil
	}), WorkerConfig{Concurrency: 2, ReapInterval: -1})
	require.NoError(t, err)
	require.NoError(t, w.Start())
	<-running
	<-running
	// Shutdown gives up when its ctx ends although the stuck handler has
	// not returned (it cannot: release is still open).
	sctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	close(shutting)
	if err := w.Shutdown(sctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v", err)
	}
	waitFor(t, time.Second, "handler cancelled", func() bool { return cause.Load() != nil })
	if c := cause.Load().(error); !errors.Is(c, ErrShutdown) {
		t.Fatalf("cause %v", c)
	}
	select {
	case <-w.Done():
		t.Fatal("Done before the stuck handler returned")
	default:
	}
	close(release)
	<-w.Done()
	if do(t, "EXISTS", q.keys.Job(fast)) != "0" {
		t.Fatal("the fast job was not completed during shutdown")
	}
	if r := row(t, q, stuck); r["state"] != "active" {
		t.Fatalf("stuck job %v: want it left leased for the reaper", r)
	}
	if err := w.Shutdown(ctx); err != nil {
		t.Fatalf("second Shutdown = %v", err)
	}
}

// Run polls an idle queue with a wait that doubles from PollMin to
// PollMax: each claim after the first comes after one more wait, so the
// claims in a run of a given length are at most what the waits allow. A
// slow machine makes fewer claims, never more.
func TestWorkerRunAndPollBackoff(t *testing.T) {
	q := fresh(t, "idle")
	const pollMin, pollMax = time.Millisecond, 50 * time.Millisecond
	w, err := NewWorker(q, HandlerFunc(func(context.Context, *Job) error { return nil }),
		WorkerConfig{PollMin: pollMin, PollMax: pollMax, PromoteInterval: -1, ReapInterval: -1})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	ran := make(chan error, 1)
	go func() { ran <- w.Run(ctx) }()
	// Let it poll past the doubling (1+2+...+32 = 63 ms) into the steady
	// 50 ms waits: ten claims take at least 213 ms of waits (a worker
	// that did not wait would make them at once, and fail the bound
	// below).
	waitFor(t, hangGuard, "ten claims", func() bool { return w.Stats().Claims >= 10 })
	cancel()
	select {
	case err := <-ran:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(hangGuard):
		t.Fatal("Run did not return after its ctx ended")
	}
	elapsed := time.Since(start)
	// The most claims the waits leave room for in elapsed: about 10 in
	// 250 ms, where polling every PollMin would make hundreds.
	maxClaims, waited := uint64(1), time.Duration(0)
	for poll := pollMin; waited+poll <= elapsed; poll = min(2*poll, pollMax) {
		waited += poll
		maxClaims++
	}
	if n := w.Stats().Claims; n > maxClaims {
		t.Fatalf("%d claims in %v of an idle queue, want at most %d", n, elapsed, maxClaims)
	}
}

func TestWorkerPromotesDelayed(t *testing.T) {
	q := fresh(t, "work")
	id, err := q.EnqueueIn(tctx(t), 30*time.Millisecond, []byte("later"))
	require.NoError(t, err)
	var got atomic.Value
	startWorker(t, q, HandlerFunc(func(ctx context.Context, j *Job) error {
		got.Store(j.ID)
		return nil
	}), WorkerConfig{PromoteInterval: 20 * time.Millisecond, PollMax: 10 * time.Millisecond})
	waitFor(t, 5*time.Second, "the delayed job", func() bool { return got.Load() == id })
}

// TestWorkerOverClientSurvivesRestart runs a worker over a reconnecting
// conn.Client while the server restarts (losing its data and its script
// cache): the worker reports the failed exchanges, keeps polling, and
// handles the jobs enqueued after the restart.
func TestWorkerOverClientSurvivesRestart(t *testing.T) {
	fresh(t, "restart")
	ctx := tctx(t)
	cl, err := conn.NewClient(ctx, conn.Options{Addr: srv.Addr, MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	q, err := Open(ctx, cl, "restart")
	if err != nil {
		t.Fatal(err)
	}
	var completed, errs atomic.Int64
	startWorker(t, q, HandlerFunc(func(context.Context, *Job) error { return nil }), WorkerConfig{
		PollMin: time.Millisecond, PollMax: 20 * time.Millisecond,
		OnEvent: func(e Event) {
			switch e.Kind {
			case EventCompleted:
				completed.Add(1)
			case EventError:
				errs.Add(1)
			}
		},
	})
	if _, err := q.EnqueueBulk(ctx, make([][]byte, 10)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the first jobs", func() bool { return completed.Load() == 10 })
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	// The worker may or may not see the outage: a call that finds the
	// connection closed before anything was written waits for the
	// Client's redial and is sent there (conn's guarantee), so a restart
	// between two polls costs no error at all. Either way it goes on.
	t.Logf("errors reported through the restart: %d", errs.Load())
	waitFor(t, 5*time.Second, "enqueue after the restart", func() bool {
		_, err := q.EnqueueBulk(ctx, make([][]byte, 10))
		return err == nil
	})
	waitFor(t, 5*time.Second, "the jobs after the restart", func() bool { return completed.Load() == 20 })
}
