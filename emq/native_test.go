package emq

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/emqmodule"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/stretchr/testify/require"
)

var (
	modOnce sync.Once
	modSrv  *servertest.Server
	modErr  error
)

// moduleServer starts (once) a server loading the native module, built
// by make -C module; TestMain stops it (stopModuleServer).
func moduleServer(t *testing.T) *servertest.Server {
	t.Helper()
	servertest.Need(t, srv)
	so := emqmodule.Need(t, "")
	modOnce.Do(func() { modSrv, modErr = emqmodule.Start(so, servertest.Options{}) })
	if modErr != nil {
		t.Fatal(modErr)
	}
	return modSrv
}

func dialAddr(t *testing.T, addr string) *conn.Conn {
	t.Helper()
	c, err := conn.Dial(tctx(t), conn.Options{Addr: addr})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func calls(t *testing.T, s *servertest.Server, name string) int64 { return s.CommandCalls(t, name) }

// TestOpenNativeAuto: on a server with the module Open picks the native
// executor by itself, and the verbs run as EMQ.* commands, no EVALSHA; the
// scripted reaper still reaps what they wrote.
func TestOpenNativeAuto(t *testing.T) {
	m := moduleServer(t)
	m.Flush(t)
	m.ResetStats(t)
	ctx := tctx(t)
	q, err := Open(ctx, dialAddr(t, m.Addr), "native-auto")
	require.NoError(t, err)
	require.True(t, q.IsNative(), "auto on a server with the module")

	id, err := q.Enqueue(ctx, []byte("one"))
	require.NoError(t, err)
	_, err = q.EnqueueBulk(ctx, [][]byte{[]byte("two"), []byte("three")})
	require.NoError(t, err)
	job, ok, err := q.Claim(ctx, time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, id, job.ID)
	require.NoError(t, q.Complete(ctx, job.ID, job.Token, 0))
	require.ErrorIs(t, q.Complete(ctx, job.ID, job.Token, 0), ErrStale)
	jobs, err := q.ClaimBatch(ctx, time.Millisecond, 5)
	require.NoError(t, err)
	require.Len(t, jobs, 2)
	settled, next, err := q.SettleClaim(ctx, []Outcome{
		{Kind: OutcomeComplete, ID: jobs[0].ID, Token: jobs[0].Token},
		{Kind: OutcomeRetry, ID: jobs[1].ID, Token: jobs[1].Token, MaxAttempts: 5, Error: "later"},
	}, 0, time.Minute, 1)
	require.NoError(t, err)
	require.Equal(t, []Settled{SettledCompleted, SettledRequeued}, settled)
	require.Len(t, next, 1)
	require.Equal(t, jobs[1].ID, next[0].ID)
	require.Equal(t, jobs[1].Token+1, next[0].Token)
	require.NoError(t, q.Extend(ctx, next[0].ID, next[0].Token, time.Millisecond))
	_, err = q.EnqueueIn(ctx, time.Hour, []byte("later"))
	require.NoError(t, err)

	for _, c := range []string{"emq.enqueue", "emq.enqueue_batch", "emq.claim", "emq.complete", "emq.claim_batch",
		"emq.settle_claim", "emq.extend", "emq.enqueue_at"} {
		require.Positive(t, calls(t, m, c), c)
	}
	require.Zero(t, calls(t, m, "evalsha"), "no script ran for the transitions")

	// The lease of 1 ms lapses; reap (a script) recovers the native claim.
	var n int
	waitFor(t, 0, "the 1 ms lease to lapse", func() bool {
		n, err = q.Reap(ctx, 10, 5)
		require.NoError(t, err)
		return n > 0
	})
	require.Equal(t, 1, n)
	require.Positive(t, calls(t, m, "evalsha"), "reap runs as a script")
}

// TestOpenExecutorChoice: forcing either executor, and auto on a server
// without the module.
func TestOpenExecutorChoice(t *testing.T) {
	m := moduleServer(t)
	ctx := tctx(t)

	q, err := Open(ctx, dialAddr(t, srv.Addr), "choice")
	require.NoError(t, err)
	require.False(t, q.IsNative(), "auto on a server without the module: scripts")
	_, err = Open(ctx, dialAddr(t, srv.Addr), "choice", WithExecutorChoice(ExecutorNative))
	require.ErrorIs(t, err, ErrNoNative)
	require.ErrorContains(t, err, "emq.enqueue")

	m.ResetStats(t)
	q, err = Open(ctx, dialAddr(t, m.Addr), "choice", WithExecutorChoice(ExecutorScript))
	require.NoError(t, err)
	require.False(t, q.IsNative())
	_, err = q.Enqueue(ctx, []byte("x"))
	require.NoError(t, err)
	require.Zero(t, calls(t, m, "emq.enqueue"))
	require.Positive(t, calls(t, m, "evalsha"))

	q, err = Open(ctx, dialAddr(t, m.Addr), "choice", WithExecutorChoice(ExecutorNative))
	require.NoError(t, err)
	require.True(t, q.IsNative())

	for _, s := range []string{"auto", "script", "native"} {
		c, err := ParseExecutorChoice(s)
		require.NoError(t, err)
		require.Equal(t, s, c.String())
	}
	_, err = ParseExecutorChoice("lua")
	require.ErrorIs(t, err, ErrArg)
}

// TestNativeWorker: a Worker over a native queue runs every job once.
func TestNativeWorker(t *testing.T) {
	m := moduleServer(t)
	m.Flush(t)
	ctx := tctx(t)
	q, err := Open(ctx, dialAddr(t, m.Addr), "native-worker")
	require.NoError(t, err)
	require.True(t, q.IsNative())
	const total = 500
	payloads := make([][]byte, total)
	for i := range payloads {
		payloads[i] = []byte(strconv.Itoa(i))
	}
	_, err = q.EnqueueBulk(ctx, payloads)
	require.NoError(t, err)
	var mu sync.Mutex
	seen := map[string]int{}
	done := make(chan struct{})
	w, err := NewWorker(q, HandlerFunc(func(ctx context.Context, job *Job) error {
		mu.Lock()
		defer mu.Unlock()
		seen[string(job.Payload)]++
		if seen[string(job.Payload)] == 1 && job.Token == 1 && len(seen)%50 == 0 {
			return errors.New("fail once")
		}
		if len(seen) == total {
			select {
			case <-done:
			default:
				close(done)
			}
		}
		return nil
	}), WorkerConfig{Concurrency: 4, Lease: time.Minute, MaxAttempts: 3, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
	require.NoError(t, err)
	wctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- w.Run(wctx) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute): // only against a hang
		t.Fatal("worker did not finish")
	}
	// Every job ran; the retried ones drain from pending and delayed.
	require.Eventually(t, func() bool {
		n, _ := q.Count(ctx, StatePending)
		a, _ := q.Count(ctx, StateActive)
		d, _ := q.Count(ctx, StateDelayed)
		return n+a+d == 0
	}, time.Minute, 5*time.Millisecond)
	cancel()
	<-errc
	require.Len(t, seen, total)
	require.Positive(t, calls(t, m, "emq.settle_claim")+calls(t, m, "emq.claim_batch"))
}

// stopModuleServer stops the module server, if one was started.
func stopModuleServer() {
	if modSrv != nil {
		modSrv.Stop()
	}
}
