package emq

import (
	"context"
	"io"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/internal/servertest"
)

// TestWorkerJobTimeout: a handler that runs past its job's timeout (here
// set by TimeoutFor, the job-by-job override) has its context ended with
// a cause matching ErrJobTimeout, and the job is retried as a failure
// that says it timed out, counted in its attempts: dead after
// MaxAttempts. Another job, under the default Timeout, completes.
func TestWorkerJobTimeout(t *testing.T) {
	q := fresh(t, "timeout")
	ctx := tctx(t)
	hang, err := q.Enqueue(ctx, []byte("hang"))
	require.NoError(t, err)
	fine, err := q.Enqueue(ctx, []byte("fine"))
	require.NoError(t, err)
	causes := make(chan error, 10)
	var ev events
	dead := make(chan struct{})
	w := startWorker(t, q, HandlerFunc(func(ctx context.Context, j *Job) error {
		if string(j.Payload) != "hang" {
			return nil
		}
		<-ctx.Done() // a handler that heeds its context
		causes <- context.Cause(ctx)
		return ctx.Err()
	}), WorkerConfig{
		Timeout: time.Hour, MaxAttempts: 2, PollMax: 10 * time.Millisecond, Retention: time.Hour,
		TimeoutFor: func(j *Job) time.Duration {
			if string(j.Payload) == "hang" {
				return 50 * time.Millisecond
			}
			return 0 // the default
		},
		Backoff: func(int64, error) time.Duration { return 0 },
		OnEvent: func(e Event) {
			ev.add(e)
			if e.Kind == EventDead {
				close(dead)
			}
		},
	})
	recv(t, dead, "the job dead")
	for range 2 {
		require.ErrorIs(t, recv(t, causes, "a handler's cause"), ErrJobTimeout)
	}
	require.Equal(t, map[string]string{
		"state": "dead", "attempts": "2", "payload": "hang", "error": "emq: job timed out after 50ms",
	}, row(t, q, hang))
	var kinds []EventKind
	for _, e := range ev.of(hang) {
		kinds = append(kinds, e.Kind)
		if e.Kind != EventRetried && e.Kind != EventDead && e.Kind != EventTimedOut {
			t.Fatalf("event %+v", e)
		}
		require.ErrorIs(t, e.Err, ErrJobTimeout)
	}
	require.Equal(t, []EventKind{EventTimedOut, EventRetried, EventTimedOut, EventDead}, kinds)
	require.Equal(t, "completed", row(t, q, fine)["state"])
	require.Len(t, ev.of(fine), 1)
	st := w.Stats()
	require.EqualValues(t, 2, st.TimedOut)
	require.EqualValues(t, 1, st.Completed)
	// The handlers returned when told: none hangs.
	waitFor(t, hangGuard, "no handler hung", func() bool { return w.Stats().Hung == 0 })
}

// TestWorkerTimeoutIgnoredContext: a handler that ignores its context and
// runs on past its timeout holds no slot (with Concurrency 1, the job's
// next attempt runs while it hangs) and is counted in Stats().Hung; when
// it returns at last, its success completes nothing (the job's attempts
// moved on: its token is stale), and the job completes once, by the
// attempt that holds it.
func TestWorkerTimeoutIgnoredContext(t *testing.T) {
	q := fresh(t, "ignored")
	ctx := tctx(t)
	id, err := q.Enqueue(ctx, []byte("x"))
	require.NoError(t, err)
	started := []chan struct{}{make(chan struct{}), make(chan struct{})}
	release := []chan struct{}{make(chan struct{}), make(chan struct{})}
	var ev events
	completed := make(chan Event, 2)
	w := startWorker(t, q, HandlerFunc(func(_ context.Context, j *Job) error {
		i := j.Token - 1 // attempt 1, then 2
		close(started[i])
		<-release[i] // the context is ignored
		return nil
	}), WorkerConfig{
		Concurrency: 1, Timeout: 100 * time.Millisecond, PollMax: 10 * time.Millisecond,
		Backoff: func(int64, error) time.Duration { return 0 },
		TimeoutFor: func(j *Job) time.Duration {
			if j.Token == 2 {
				return time.Hour // the second attempt has all the time it needs
			}
			return 0
		},
		OnEvent: func(e Event) {
			ev.add(e)
			if e.Kind == EventCompleted {
				completed <- e
			}
		},
	})
	recv(t, started[0], "attempt 1")
	recv(t, started[1], "attempt 2, while attempt 1 hangs")
	st := w.Stats()
	require.EqualValues(t, 1, st.TimedOut)
	require.EqualValues(t, 1, st.Hung)
	require.Equal(t, "active", row(t, q, id)["state"])
	require.Equal(t, "2", row(t, q, id)["attempts"])

	// The late success of attempt 1 is dropped; its token is stale too.
	close(release[0])
	waitFor(t, hangGuard, "the hung handler returned", func() bool { return w.Stats().Hung == 0 })
	require.Equal(t, map[string]string{"state": "active", "attempts": "2", "payload": "x", "error": "emq: job timed out after 100ms"}, row(t, q, id))
	require.ErrorIs(t, q.Complete(ctx, id, 1, 0), ErrStale, "the fence refuses attempt 1's token")
	require.Equal(t, "active", row(t, q, id)["state"])

	close(release[1])
	e := recv(t, completed, "the completion")
	require.EqualValues(t, 2, e.Job.Token)
	require.NoError(t, w.Shutdown(ctx))
	for _, s := range w.slots {
		require.False(t, s.timer.Stop(), "no timeout timer runs after Done")
	}
	require.Empty(t, row(t, q, id))
	require.Empty(t, completed, "completed once")
	require.EqualValues(t, 1, w.Stats().Completed)
	require.Zero(t, w.Stats().Stale)
}

// TestWorkerTimeoutCapsExtension: a job's lease is extended while its
// handler runs, and no longer than its timeout: a job whose timeout is
// longer than its lease outlives the lease by extension under a busy
// reaper, then, at the timeout, is retried by the worker (not lost to the
// reaper); the hung handler holds the worker's Done, and Shutdown waits
// for it only until its context ends.
func TestWorkerTimeoutCapsExtension(t *testing.T) {
	q := fresh(t, "cap")
	ctx := tctx(t)
	id, err := q.Enqueue(ctx, []byte("x"))
	require.NoError(t, err)
	release := make(chan struct{})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	retried := make(chan Event, 1)
	var ev events
	w, err := NewWorker(q, HandlerFunc(func(context.Context, *Job) error {
		<-release
		return nil
	}), WorkerConfig{
		Lease: 200 * time.Millisecond, ExtendInterval: 20 * time.Millisecond, Timeout: 600 * time.Millisecond,
		ReapInterval: 20 * time.Millisecond, PollMax: 10 * time.Millisecond,
		Backoff: func(int64, error) time.Duration { return time.Hour },
		OnEvent: func(e Event) {
			ev.add(e)
			if e.Kind == EventRetried {
				retried <- e
			}
		},
	})
	require.NoError(t, err)
	require.NoError(t, w.Start())
	e := recv(t, retried, "the retry at the timeout")
	require.ErrorIs(t, e.Err, ErrJobTimeout)
	require.Equal(t, map[string]string{
		"state": "delayed", "attempts": "1", "payload": "x", "error": "emq: job timed out after 600ms",
	}, row(t, q, id))
	require.Empty(t, score(t, q.keys.Active, id))
	for _, e := range ev.of(id) {
		require.NotEqual(t, EventLeaseLost, e.Kind, "the lease held until the timeout")
		require.NotEqual(t, EventStale, e.Kind)
	}
	require.EqualValues(t, 1, w.Stats().Hung)

	sctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, w.Shutdown(sctx), context.DeadlineExceeded, "a hung handler holds Shutdown until its ctx ends")
	select {
	case <-w.Done():
		t.Fatal("Done before the hung handler returned")
	default:
	}
	close(release)
	recv(t, w.Done(), "Done once it returned")
	require.Zero(t, w.Stats().Hung)
	require.Equal(t, "delayed", row(t, q, id)["state"], "its late success completed nothing")
}

// TestWorkerTimeoutConfig: Timeout defaults to 30 min; a negative one is
// refused.
func TestWorkerTimeoutConfig(t *testing.T) {
	c, err := WorkerConfig{}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, 30*time.Minute, c.Timeout)
	_, err = WorkerConfig{Timeout: -1}.withDefaults()
	var ae *ArgError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, "Timeout", ae.Arg)
	c, err = WorkerConfig{Timeout: math.MaxInt64}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, time.Duration(math.MaxInt64), c.Timeout)
}

// TestTimeoutRace: handlers that return just as their timeout passes
// leave exactly one outcome per job, whichever wins: every job ends
// completed once (by its first attempt, or by its second after a timeout
// and a retry), and the worker's hand empties. Half the first attempts
// wait for their timeout; the other half race it.
func TestTimeoutRace(t *testing.T) {
	q := fresh(t, "timeout-race")
	const n = 200
	ids := enqueueN(t, q, n)
	var mu sync.Mutex
	outcomes := map[string]int{}
	all := make(chan struct{})
	count := 0
	w := startWorker(t, q, HandlerFunc(func(ctx context.Context, j *Job) error {
		if j.Token > 1 {
			return nil
		}
		var racing <-chan time.Time // the even jobs wait for their timeout
		if j.Payload[len(j.Payload)-1]%2 == 1 {
			racing = time.After(time.Millisecond) // the odd race it
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-racing:
			return nil
		}
	}), WorkerConfig{
		Concurrency: 8, Timeout: time.Millisecond, PollMax: 10 * time.Millisecond,
		Backoff: func(int64, error) time.Duration { return 0 },
		TimeoutFor: func(j *Job) time.Duration {
			if j.Token > 1 {
				return time.Hour
			}
			return 0
		},
		OnEvent: func(e Event) {
			if e.Kind != EventCompleted && e.Kind != EventRetried {
				if e.Kind != EventTimedOut {
					t.Errorf("event %+v", e)
				}
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if e.Kind == EventCompleted {
				outcomes[e.Job.ID]++
				if count++; count == n {
					close(all)
				}
			}
		},
	})
	recv(t, all, "every job completed")
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		require.Equal(t, 1, outcomes[id], id)
	}
	require.NoError(t, w.Shutdown(tctx(t)))
	st := w.Stats()
	t.Logf("%d of %d jobs timed out; %d completed, %d retried", st.TimedOut, n, st.Completed, st.Retried)
	require.Equal(t, st.TimedOut, st.Retried)
	require.GreaterOrEqual(t, st.TimedOut, uint64(n/2), "at least the even jobs")
	require.Zero(t, st.Hung)
	require.Equal(t, "0", do(t, "EXISTS", q.keys.Active))
}

// TestDurationHelpers: twice and scale saturate instead of overflowing.
func TestDurationHelpers(t *testing.T) {
	require.Equal(t, 2*time.Second, twice(time.Second, time.Minute))
	require.Equal(t, time.Minute, twice(40*time.Second, time.Minute))
	require.Equal(t, time.Duration(math.MaxInt64), twice(math.MaxInt64/2+1, math.MaxInt64))
	require.Equal(t, time.Duration(math.MaxInt64), twice(math.MaxInt64, math.MaxInt64))
	require.Equal(t, time.Duration(math.MaxInt64), scale(math.MaxInt64, 1.2))
	require.Equal(t, time.Duration(math.MaxInt64), scale(math.MaxInt64, 1))
	require.Equal(t, 80*time.Millisecond, scale(100*time.Millisecond, 0.8))
	require.Equal(t, int64(maxScriptInt), scriptInt(math.MaxInt))
	require.Equal(t, int64(7), scriptInt(7))
}

// TestWorkerTimeoutLeaseRunsOut: the cap on extension holds even when the
// retry at the timeout cannot be delivered: that round fails (ambiguously,
// so it is never sent again), the hung handler's lease is extended no
// more, it runs out, and the reaper gives the job back: its next attempt
// completes it, while the first still hangs.
func TestWorkerTimeoutLeaseRunsOut(t *testing.T) {
	servertest.Need(t, srv)
	srv.Flush(t)
	c := dial(t)
	x := &flakyExec{Executor: dispatch.NewScripted(c), err: &conn.BrokenError{Cause: io.EOF}}
	x.fail.Store(1) // the round carrying the timeout's retry
	q, err := Open(tctx(t), c, "runs-out", WithExecutor(x))
	require.NoError(t, err)
	id, err := q.Enqueue(tctx(t), []byte("x"))
	require.NoError(t, err)
	release := make(chan struct{})
	defer close(release)
	var ev events
	completed := make(chan Event, 1)
	w := startWorker(t, q, HandlerFunc(func(_ context.Context, j *Job) error {
		if j.Token == 1 {
			<-release // the context is ignored
		}
		return nil
	}), WorkerConfig{
		Lease: 200 * time.Millisecond, ExtendInterval: 20 * time.Millisecond, Timeout: 400 * time.Millisecond,
		ReapInterval: 20 * time.Millisecond, PollMax: 10 * time.Millisecond,
		OnEvent: func(e Event) {
			ev.add(e)
			if e.Kind == EventCompleted {
				completed <- e
			}
		},
	})
	e := recv(t, completed, "the completion by attempt 2")
	require.EqualValues(t, 2, e.Job.Token)
	require.Empty(t, row(t, q, id))
	var kinds []EventKind
	var retry Event
	for _, e := range ev.of(id) {
		kinds = append(kinds, e.Kind)
		if e.Kind == EventError {
			retry = e
		}
	}
	require.Equal(t, []EventKind{EventTimedOut, EventError, EventCompleted}, kinds, "no lease lost before the timeout")
	require.Equal(t, "retry", retry.Op)
	require.ErrorIs(t, retry.Err, conn.ErrBroken)
	require.EqualValues(t, 2, x.calls.Load(), "the failed round and the completion's: the retry was never sent again")
	st := w.Stats()
	require.EqualValues(t, 1, st.Reaped)
	require.EqualValues(t, 1, st.Hung)
}
