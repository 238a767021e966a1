package emq

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWorkerFewHandlersShareRounds: eight no-op handlers drain 5,000 jobs
// in rounds that carry more jobs than there are handlers (the prefetch),
// each round settling and claiming in one server call.
func TestWorkerFewHandlersShareRounds(t *testing.T) {
	q := fresh(t, "rounds")
	const n, conc = 5000, 8
	_, err := q.EnqueueBulk(tctx(t), make([][]byte, n))
	require.NoError(t, err)
	var completed atomic.Int64
	w := startWorker(t, q, HandlerFunc(func(context.Context, *Job) error { return nil }), WorkerConfig{
		Concurrency: conc, PollMax: 10 * time.Millisecond,
		OnEvent: func(e Event) {
			if e.Kind == EventCompleted {
				completed.Add(1)
			}
		},
	})
	waitFor(t, hangGuard, "every job completed", func() bool { return completed.Load() == n })
	st := w.Stats()
	t.Logf("%d jobs in %d rounds (%d claiming, %d settling): %.1f jobs per round",
		n, st.Rounds, st.Claims, st.AckBatches, float64(n)/float64(st.Rounds))
	require.EqualValues(t, n, st.Claimed)
	require.Less(t, st.Rounds, uint64(n/conc), "rounds no bigger than the handlers")
	require.Zero(t, st.Errors)
}

// TestWorkerShutdownReleasesPrefetched: jobs claimed ahead and never
// started when Shutdown comes are released, back in pending with their
// attempts kept, and every job is accounted for: completed, or pending.
func TestWorkerShutdownReleasesPrefetched(t *testing.T) {
	q := fresh(t, "release")
	ctx := tctx(t)
	payloads := make([][]byte, 2500)
	for i := range payloads {
		payloads[i] = []byte(strconv.Itoa(i))
	}
	payloads[2000] = []byte("block")
	_, err := q.EnqueueBulk(ctx, payloads)
	require.NoError(t, err)
	blocked, unblock := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	completed := map[string]bool{}
	w := startWorker(t, q, HandlerFunc(func(_ context.Context, j *Job) error {
		if string(j.Payload) == "block" {
			close(blocked)
			<-unblock
		}
		return nil
	}), WorkerConfig{Concurrency: 1, PollMax: 10 * time.Millisecond, OnEvent: func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		if e.Kind == EventCompleted {
			completed[e.Job.ID] = true
		}
	}})
	recv(t, blocked, "the blocking job")
	held := w.out.Queued()
	done := make(chan error, 1)
	go func() { done <- w.Shutdown(context.Background()) }()
	// The handler is held: what it was handed ahead is released (a round
	// in flight when Shutdown came may add to it).
	waitFor(t, hangGuard, "the prefetched jobs released", func() bool { return w.Stats().Released >= uint64(held) })
	close(unblock)
	require.NoError(t, recv(t, done, "Shutdown"))

	st := w.Stats()
	t.Logf("%d completed, %d released", st.Completed, st.Released)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, completed, int(st.Completed))
	pending, err := q.Browse(ctx, StatePending, 0, len(payloads))
	require.NoError(t, err)
	require.Len(t, pending, len(payloads)-len(completed), "every job completed or pending")
	for i, j := range pending {
		require.False(t, completed[j.ID])
		claimed := uint64(i) < st.Released // the released are the oldest pending
		want := int64(0)
		if claimed {
			want = 1 // the claim counted, the release kept it
		}
		require.Equal(t, StatePending, j.State)
		require.Equal(t, want, j.Attempts, "job %d of the pending", i)
	}
	require.Equal(t, "0", do(t, "EXISTS", q.keys.Active))
}

// TestReleaseBuffered: a round releases the jobs left in the jobs channel:
// each back in pending, its attempts kept, and counted as released.
func TestReleaseBuffered(t *testing.T) {
	q := fresh(t, "release")
	ids := enqueueN(t, q, 3)
	jobs, err := q.ClaimBatch(tctx(t), time.Minute, 3)
	require.NoError(t, err)
	w, err := NewWorker(q, HandlerFunc(func(context.Context, *Job) error { return nil }), WorkerConfig{})
	require.NoError(t, err)
	w.life = tctx(t) // one round alone, without starting the worker
	for i := range jobs {
		w.out.Hand(claimed{job: &jobs[i], at: time.Now()})
	}
	r := &round{inHand: 3}
	w.releaseBuffered(r)
	require.Len(t, r.pending, 3)
	w.exchange(r, 0)
	require.EqualValues(t, 3, w.Stats().Released)
	require.Zero(t, r.inHand)
	for _, id := range ids {
		require.Equal(t, map[string]string{"state": "pending", "attempts": "1", "payload": row(t, q, id)["payload"]}, row(t, q, id))
		require.Equal(t, "0", score(t, q.keys.Pending, id))
	}
	require.Equal(t, "0", do(t, "EXISTS", q.keys.Active))
}

// TestHoldLease: a job claimed ahead that waited ExtendInterval before its
// handler starts is extended first; one whose lease was lost meanwhile is
// not run (EventLeaseLost).
func TestHoldLease(t *testing.T) {
	q := fresh(t, "hold")
	enqueueN(t, q, 2)
	jobs, err := q.ClaimBatch(tctx(t), time.Minute, 2)
	require.NoError(t, err)
	var ev events
	w, err := NewWorker(q, HandlerFunc(func(context.Context, *Job) error { return nil }), WorkerConfig{
		Lease: time.Minute, ExtendInterval: time.Second, OnEvent: ev.add,
	})
	require.NoError(t, err)
	w.life = tctx(t)
	s := new(slot)
	hold := func(j Job, at time.Time) bool {
		now := time.Now()
		return w.holdLease(s, j, at, &now)
	}

	// Claimed just now: nothing to do.
	before := scoreInt(t, q.keys.Active, jobs[0].ID)
	require.True(t, hold(jobs[0], time.Now()))
	require.Equal(t, before, scoreInt(t, q.keys.Active, jobs[0].ID))

	// Claimed long ago (as far as the worker knows): extended.
	do(t, "ZADD", q.keys.Active, "XX", "1000", jobs[0].ID)
	require.True(t, hold(jobs[0], time.Now().Add(-2*time.Second)))
	require.Greater(t, scoreInt(t, q.keys.Active, jobs[0].ID), serverMillis(t)+50000)
	require.False(t, s.since.IsZero())

	// Its lease lost (reaped) while it waited: not run.
	do(t, "ZADD", q.keys.Active, "XX", "1", jobs[1].ID)
	n, err := q.Reap(tctx(t), 10, 5)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.False(t, hold(jobs[1], time.Now().Add(-2*time.Second)))
	got := ev.of(jobs[1].ID)
	require.Len(t, got, 1)
	require.Equal(t, EventLeaseLost, got[0].Kind)
	require.Equal(t, "pending", row(t, q, jobs[1].ID)["state"])
}

// TestAllocWorkerPerJob holds the worker to its allocation budget per job,
// draining a pre-filled queue with a no-op handler: per round, the claimed
// jobs' slab, ids and payloads and their contexts' slab; nothing per job
// (a context.WithCancelCause per job cost 2 before jobCtx).
func TestAllocWorkerPerJob(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts are not meaningful under -race or -short")
	}
	q := fresh(t, "allocs")
	const n = 20000
	_, err := q.EnqueueBulk(tctx(t), make([][]byte, n))
	require.NoError(t, err)
	var completed atomic.Int64
	all := make(chan struct{})
	w, err := NewWorker(q, HandlerFunc(func(context.Context, *Job) error { return nil }), WorkerConfig{
		Concurrency: 8, OnEvent: func(e Event) {
			if e.Kind == EventCompleted && completed.Add(1) == n {
				close(all)
			}
		},
	})
	require.NoError(t, err)
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	require.NoError(t, w.Start())
	recv(t, all, "every job completed")
	runtime.ReadMemStats(&m1)
	require.NoError(t, w.Shutdown(tctx(t)))
	per := float64(m1.Mallocs-m0.Mallocs) / n
	t.Logf("%.2f allocations per job (%d rounds)", per, w.Stats().Rounds)
	if per > 0.25 {
		t.Errorf("%.2f allocations per job, budget 0.25", per)
	}
}

// TestQuietIsALowerBound: the round loop sleeps through quiet(r)-1
// outcomes, so ready must stay false until the quiet-th, however the
// handlers interleave. Two worst cases: the handlers leave outcomes and
// take nothing (every job running ends: the bound by the jobs running),
// or every handler first takes a job with no outcome (its first take since
// the collect) and then takes one after each outcome (the channel drains
// fastest: the bound by half the prefetch). Each bound is tight in one
// case, so one more would fail. The bound is more than one when the
// channel holds well above half the prefetch: the loop is not woken for
// every outcome.
func TestQuietIsALowerBound(t *testing.T) {
	q := fresh(t, "quiet")
	const conc, prefetch = 4, 128
	for _, c := range []struct {
		buffered  int
		takeFirst bool
		want      int
	}{
		{100, false, conc},                  // bound by the jobs running
		{100, true, conc},                   //
		{70, true, 70 - prefetch/2 - conc},  // bound by the channel
		{70, false, 70 - prefetch/2 - conc}, //
		{60, true, 1},                       // below half the prefetch already
	} {
		w, err := NewWorker(q, HandlerFunc(func(context.Context, *Job) error { return nil }), WorkerConfig{Concurrency: conc, Prefetch: prefetch})
		require.NoError(t, err)
		job := &Job{ID: "x", Token: 1}
		for range c.buffered {
			w.out.Hand(claimed{job: job})
		}
		wake := make(chan struct{}, 1) // the handlers' (never parked: jobs are queued)
		r := &round{inHand: conc + c.buffered, prefetch: prefetch}
		k := w.quiet(r)
		require.Equal(t, c.want, k, "%+v", c)
		if c.takeFirst {
			for range conc {
				w.out.Next(wake, done{}, false) // each handler's first take, no outcome before it
			}
		}
		for m := 1; m <= k; m++ {
			if d := (done{job: *job, kind: OutcomeComplete}); c.takeFirst {
				w.out.Next(wake, d, true) // the outcome and the next take in one step
			} else {
				w.out.Put(d)
			}
			probe := *r
			probe.pending = w.out.Take(nil)
			for _, d := range probe.pending {
				w.out.Put(d) // put back: the real loop has not collected
			}
			n := min(conc+prefetch-(probe.inHand-len(probe.pending)), w.cfg.ClaimBatch)
			if m < k {
				require.False(t, w.ready(&probe, n, false), "%+v: ready after %d outcomes of the %d quiet", c, m, k)
			}
		}
	}
}

// TestWorkerOutcomesWaitForThePollsClaim: a round that claims fewer jobs
// than it asked for starts the poll; the outcomes of those jobs, their
// handlers all done, wait for the poll's claim (due within maxHold)
// rather than go in a round of their own: every round claims, and the
// completions are settled all the same. It failed before the hold, when
// each partial claim was followed by a settle-only round (Rounds >
// Claims).
func TestWorkerOutcomesWaitForThePollsClaim(t *testing.T) {
	q := fresh(t, "hold")
	const batches, per = 5, 3
	completed := make(chan struct{}, batches*per)
	w := startWorker(t, q, HandlerFunc(func(context.Context, *Job) error { return nil }), WorkerConfig{
		Concurrency: 8, PollMin: time.Millisecond, PollMax: time.Millisecond,
		OnEvent: func(e Event) {
			if e.Kind == EventCompleted {
				completed <- struct{}{}
			}
		},
	})
	for b := range batches {
		_, err := q.EnqueueBulk(tctx(t), make([][]byte, per))
		require.NoError(t, err)
		for range per {
			recv(t, completed, "batch "+strconv.Itoa(b)+" completed")
		}
	}
	st := w.Stats()
	t.Logf("%d jobs in %d rounds (%d claiming, %d settling)", batches*per, st.Rounds, st.Claims, st.AckBatches)
	require.EqualValues(t, batches*per, st.Completed)
	require.Equal(t, st.Claims, st.Rounds, "a round that only settled")
	require.Zero(t, st.Errors)
}

// TestReadyWaitsForQueuedJobs: a round's jobs just handed over, queued
// while their handlers wake, are not "nothing running": the outcomes
// pending wait for their company (the linger bounds it) instead of a
// settle-only round at once; with nothing queued either, they go.
func TestReadyWaitsForQueuedJobs(t *testing.T) {
	q := fresh(t, "readyqueued")
	const conc, prefetch = 4, 64
	w, err := NewWorker(q, HandlerFunc(func(context.Context, *Job) error { return nil }), WorkerConfig{Concurrency: conc, Prefetch: prefetch})
	require.NoError(t, err)
	job := &Job{ID: "x", Token: 1}
	const handed = 40
	for range handed {
		w.out.Hand(claimed{job: job})
	}
	// Every handler's job is done (its outcome pending); the round's
	// jobs are queued, none taken yet.
	r := &round{inHand: handed + conc, prefetch: prefetch}
	for range conc {
		r.pending = append(r.pending, done{job: *job, kind: OutcomeComplete})
	}
	n := min(conc+prefetch-(r.inHand-len(r.pending)), w.cfg.ClaimBatch)
	require.False(t, w.ready(r, n, false), "a settle-only round while a round's jobs are queued")
	require.True(t, w.ready(r, n, true), "the linger over: it goes")
	w.out.Close(nil)
	r.inHand = conc
	require.True(t, w.ready(r, 0, false), "nothing running, nothing queued: it goes")
}
