package emq

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/internal/faultproxy"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/resp"
)

// safety bounds a wait that a broken implementation would make endless;
// reaching it fails the test, and no assertion depends on it.
const safety = 20 * time.Second

// recv returns the next value from ch, failing the test after safety.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(safety):
		t.Fatalf("no %s after %v", what, safety)
		panic("unreachable")
	}
}

// events records a worker's events.
type events struct {
	mu  sync.Mutex
	all []Event
}

func (e *events) add(ev Event) {
	e.mu.Lock()
	e.all = append(e.all, ev)
	e.mu.Unlock()
}

// of returns the events about job id.
func (e *events) of(id string) []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Event
	for _, ev := range e.all {
		if ev.Job.ID == id {
			out = append(out, ev)
		}
	}
	return out
}

// TestWorkerStopsWhenConnFinished: a worker over a bare *conn.Conn stops
// on its own once the connection has died for good: Run, whose ctx never
// ends, returns a terminal error that wraps the connection's own error.
func TestWorkerStopsWhenConnFinished(t *testing.T) {
	for _, tc := range []struct {
		name string
		kill func(t *testing.T, c *conn.Conn)
		want error
	}{
		{"killed by the server", func(t *testing.T, c *conn.Conn) {
			id, err := c.Do(tctx(t), "CLIENT", "ID")
			require.NoError(t, err)
			do(t, "CLIENT", "KILL", "ID", id.String())
		}, conn.ErrBroken},
		{"closed", func(t *testing.T, c *conn.Conn) { require.NoError(t, c.Close()) }, conn.ErrClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := fresh(t, "dies")
			c := q.Sender().(*conn.Conn)
			_, err := q.Enqueue(tctx(t), []byte("x"))
			require.NoError(t, err)
			handled := make(chan struct{}, 1)
			w, err := NewWorker(q, HandlerFunc(func(context.Context, *Job) error {
				handled <- struct{}{}
				return nil
			}), WorkerConfig{PollMax: 10 * time.Millisecond})
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			runErr := make(chan error, 1)
			go func() { runErr <- w.Run(ctx) }()
			recv(t, handled, "job handled")
			select {
			case err := <-runErr:
				t.Fatalf("Run returned %v while the connection was healthy", err)
			default:
			}
			require.NoError(t, w.Err())

			tc.kill(t, c)
			err = recv(t, runErr, "Run's return after the connection died")
			require.NoError(t, ctx.Err(), "Run's ctx never ended: the connection's death stopped it")
			require.ErrorIs(t, err, ErrSenderDone)
			require.ErrorIs(t, err, tc.want)
			require.ErrorIs(t, err, c.Err(), "the terminal error wraps the connection's")
			require.Equal(t, err, w.Err())
			recv(t, w.Done(), "Done")
			require.NoError(t, w.Shutdown(tctx(t)), "Shutdown after the worker stopped")
		})
	}
}

// TestWorkerJobContextEndsWithHandler: a job's ctx, leaked by its handler
// to a goroutine, is Done (context.Canceled) once the handler has
// returned, and stays so while the worker runs later jobs.
func TestWorkerJobContextEndsWithHandler(t *testing.T) {
	q := fresh(t, "jobctx")
	ctx := tctx(t)
	leaked := make(chan context.Context, 2)
	causes := make(chan error, 2)
	startWorker(t, q, HandlerFunc(func(ctx context.Context, j *Job) error {
		leaked <- ctx
		go func() {
			<-ctx.Done()
			causes <- context.Cause(ctx)
		}()
		return nil
	}), WorkerConfig{Concurrency: 1, PollMax: 10 * time.Millisecond})

	_, err := q.Enqueue(ctx, []byte("first"))
	require.NoError(t, err)
	first := recv(t, leaked, "the first job")
	require.ErrorIs(t, recv(t, causes, "the first job's ctx to end"), context.Canceled)

	_, err = q.Enqueue(ctx, []byte("second"))
	require.NoError(t, err)
	second := recv(t, leaked, "the second job")
	require.ErrorIs(t, recv(t, causes, "the second job's ctx to end"), context.Canceled)
	require.NotSame(t, first, second)
	require.ErrorIs(t, first.Err(), context.Canceled, "the first job's ctx stays done")
}

// stalledQueue opens queue name over a faultproxy in front of srv, on a
// connection without a liveness timeout, so that a stalled server stays
// stalled.
func stalledQueue(t *testing.T, name string) (*Queue, *faultproxy.Proxy) {
	t.Helper()
	servertest.Need(t, srv)
	srv.Flush(t)
	p, err := faultproxy.New(srv.Addr)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	c, err := conn.Dial(tctx(t), conn.Options{Addr: p.Addr(), ReadTimeout: -1})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	q, err := Open(tctx(t), c, name)
	require.NoError(t, err)
	return q, p
}

// shutdownAsync runs w.Shutdown(ctx) and returns its error, failing the
// test if it never returns.
func shutdownAsync(t *testing.T, w *Worker, ctx context.Context) error {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- w.Shutdown(ctx) }()
	return recv(t, errc, "Shutdown's return")
}

// TestWorkerShutdownStalledServer: with the server stalled (replies held
// back by the proxy) while a claim and a completion are in flight,
// Shutdown returns its ctx's error once its ctx has ended.
func TestWorkerShutdownStalledServer(t *testing.T) {
	q, p := stalledQueue(t, "stall")
	_, err := q.Enqueue(tctx(t), []byte("x"))
	require.NoError(t, err)
	running, release := make(chan struct{}, 1), make(chan struct{})
	w, err := NewWorker(q, HandlerFunc(func(context.Context, *Job) error {
		running <- struct{}{}
		<-release
		return nil
	}), WorkerConfig{Concurrency: 1, PollMax: 10 * time.Millisecond, ExtendInterval: -1, PromoteInterval: -1, ReapInterval: -1})
	require.NoError(t, err)
	require.NoError(t, w.Start())
	recv(t, running, "the job running")

	p.Set(faultproxy.Mode{Stall: time.Hour}) // every reply from now on is held back
	close(release)                           // its completion goes out, and the next claim
	waitFor(t, safety, "the completion in flight", func() bool { return w.Stats().AckBatches == 1 })

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err = shutdownAsync(t, w, ctx)
	require.Error(t, ctx.Err(), "Shutdown returned before its ctx ended")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	recv(t, w.Done(), "Done")
}

// TestWorkerShutdownReportsUnsentAcks: completions still waiting for the
// next round when Shutdown gives up are never sent, and each is reported
// as an EventError (Op "complete", Err ErrShutdown); the one in flight is
// reported with its cancelled exchange's error.
func TestWorkerShutdownReportsUnsentAcks(t *testing.T) {
	q, p := stalledQueue(t, "unsent")
	ctx := tctx(t)
	ids := make([]string, 3)
	release := map[string]chan struct{}{}
	for i := range ids {
		id, err := q.Enqueue(ctx, []byte{byte('a' + i)})
		require.NoError(t, err)
		ids[i] = id
		release[id] = make(chan struct{})
	}
	running := make(chan string, 3)
	var ev events
	w, err := NewWorker(q, HandlerFunc(func(_ context.Context, j *Job) error {
		running <- j.ID
		<-release[j.ID]
		return nil
	}), WorkerConfig{Concurrency: 3, ClaimBatch: 3, ExtendInterval: -1, PromoteInterval: -1, ReapInterval: -1, OnEvent: ev.add})
	require.NoError(t, err)
	require.NoError(t, w.Start())
	for range ids {
		recv(t, running, "the jobs running")
	}

	p.Set(faultproxy.Mode{Stall: time.Hour})
	close(release[ids[0]]) // a round sends this one alone, and waits for the stalled reply
	waitFor(t, safety, "the first completion in flight", func() bool { return w.Stats().AckBatches == 1 })
	close(release[ids[1]])
	close(release[ids[2]])
	waitFor(t, safety, "two completions waiting", func() bool { return w.out.Len() == 2 })

	sctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, shutdownAsync(t, w, sctx), context.DeadlineExceeded)
	recv(t, w.Done(), "Done")
	for i, id := range ids {
		got := ev.of(id)
		require.Len(t, got, 1, "job %d: events %v", i, got)
		require.Equal(t, EventError, got[0].Kind)
		require.Equal(t, "complete", got[0].Op)
		if i == 0 {
			require.ErrorIs(t, got[0].Err, context.Canceled, "the completion in flight was cancelled")
		} else {
			require.ErrorIs(t, got[0].Err, ErrShutdown, "a queued completion is reported unsent")
		}
	}
	require.Zero(t, w.Stats().Completed)
}

// flakyExec fails the first fail rounds that settle outcomes (a
// settle_claim with more than its six counts and numbers) with err without
// sending them, and counts every such round asked for.
type flakyExec struct {
	dispatch.Executor
	err   error
	fail  atomic.Int64
	calls atomic.Int64
}

func (f *flakyExec) Eval(ctx context.Context, s *dispatch.Script, a *dispatch.Args, fn func(resp.Value) error) error {
	if s == scriptSettleClaim && a.NumArgs() > 6 {
		f.calls.Add(1)
		if f.fail.Add(-1) >= 0 {
			return f.err
		}
	}
	return f.Executor.Eval(ctx, s, a, fn)
}

// errNotConnected is the error of a conn.Client call made while it had no
// connection: the command was never sent.
var errNotConnected = fmt.Errorf("%w: %w", conn.ErrNotConnected, &conn.BrokenError{Cause: io.EOF})

// TestWorkerResendsUnsentCompletion: a completion that failed without
// being sent (conn.ErrNotConnected) is sent again, at most three times, so
// that the job completes and does not run twice; one that failed
// ambiguously (conn.ErrBroken: it may have run) is never sent again.
func TestWorkerResendsUnsentCompletion(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		fail      int64
		sends     int64
		completed bool
	}{
		{"not connected twice", errNotConnected, 2, 3, true},
		{"not connected for good", errNotConnected, 100, 4, false},
		{"broken", &conn.BrokenError{Cause: io.EOF}, 1, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			servertest.Need(t, srv)
			srv.Flush(t)
			c := dial(t)
			x := &flakyExec{Executor: dispatch.NewScripted(c), err: tc.err}
			x.fail.Store(tc.fail)
			q, err := Open(tctx(t), c, "resend", WithExecutor(x))
			require.NoError(t, err)
			id, err := q.Enqueue(tctx(t), []byte("x"))
			require.NoError(t, err)
			var runs atomic.Int64
			outcome := make(chan Event, 1)
			startWorker(t, q, HandlerFunc(func(context.Context, *Job) error {
				runs.Add(1)
				return nil
			}), WorkerConfig{PollMax: 10 * time.Millisecond, OnEvent: func(e Event) {
				if e.Job.ID == id {
					outcome <- e
				}
			}})
			e := recv(t, outcome, "the completion's outcome")
			require.Equal(t, tc.sends, x.calls.Load(), "completions asked for")
			require.EqualValues(t, 1, runs.Load(), "the handler ran once")
			if tc.completed {
				require.Equal(t, EventCompleted, e.Kind)
				require.Equal(t, "0", do(t, "EXISTS", q.keys.Job(id)))
			} else {
				require.Equal(t, EventError, e.Kind)
				require.Equal(t, "complete", e.Op)
				require.ErrorIs(t, e.Err, tc.err)
				require.Equal(t, "active", row(t, q, id)["state"], "left leased, for the reaper")
			}
		})
	}
}

// TestRoundResendsBatch: a round settling several completions is sent
// again, whole, when it failed without being sent.
func TestRoundResendsBatch(t *testing.T) {
	servertest.Need(t, srv)
	srv.Flush(t)
	c := dial(t)
	x := &flakyExec{Executor: dispatch.NewScripted(c), err: errNotConnected}
	x.fail.Store(2)
	q, err := Open(tctx(t), c, "resend-batch", WithExecutor(x))
	require.NoError(t, err)
	_, err = q.EnqueueBulk(tctx(t), [][]byte{[]byte("a"), []byte("b")})
	require.NoError(t, err)
	jobs, err := q.ClaimBatch(tctx(t), time.Minute, 2)
	require.NoError(t, err)
	require.Len(t, jobs, 2)
	var ev events
	w, err := NewWorker(q, HandlerFunc(func(context.Context, *Job) error { return nil }), WorkerConfig{OnEvent: ev.add})
	require.NoError(t, err)
	w.life = tctx(t) // one round alone, without starting the worker
	r := &round{inHand: len(jobs)}
	for _, j := range jobs {
		r.pending = append(r.pending, done{job: j, kind: OutcomeComplete})
	}
	w.exchange(r, 0)
	require.EqualValues(t, 3, x.calls.Load())
	require.Zero(t, r.inHand)
	require.Empty(t, r.pending)
	for _, j := range jobs {
		got := ev.of(j.ID)
		require.Len(t, got, 1)
		require.Equal(t, EventCompleted, got[0].Kind)
	}
	n, err := q.PendingSize(tctx(t))
	require.NoError(t, err)
	require.Zero(t, n)
	require.Equal(t, "0", do(t, "ZCARD", q.keys.Active))
}
