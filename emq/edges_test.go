package emq

import (
	"context"
	"errors"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The longest time.Duration in whole milliseconds, rounded up.
const maxDurationMillis = math.MaxInt64/int64(time.Millisecond) + 1

// TestMillisEdges: every time.Duration converts to its whole milliseconds,
// rounded up, never negative and within the scripts' exact integers; a
// negative one clamps to 0 or is an *ArgError.
func TestMillisEdges(t *testing.T) {
	for _, d := range []time.Duration{0, 1, time.Millisecond - 1, time.Millisecond, time.Millisecond + 1,
		time.Hour, math.MaxInt64 / 2, math.MaxInt64 - time.Millisecond, math.MaxInt64 - 1, math.MaxInt64} {
		want := int64(d / time.Millisecond)
		if d%time.Millisecond != 0 {
			want++
		}
		got, err := millis("delay", d, false)
		require.NoError(t, err, "%d", d)
		require.Equal(t, want, got, "millis(%d)", int64(d))
		require.LessOrEqual(t, got, int64(maxScriptInt))
	}
	got, _ := millis("delay", math.MaxInt64, false)
	require.Equal(t, int64(maxDurationMillis), got)
	for _, d := range []time.Duration{-1, -time.Hour, math.MinInt64} {
		got, err := millis("delay", d, true)
		require.NoError(t, err)
		require.Zero(t, got)
		_, err = millis("retention", d, false)
		var ae *ArgError
		require.ErrorAs(t, err, &ae)
		require.Equal(t, "retention", ae.Arg)
		require.ErrorIs(t, err, ErrArg)
	}
}

// TestDurationEdgesOnServer: the longest durations and the largest counts
// reach the scripts as valid arguments, on a real server: each verb does
// what it says, with due times and deadlines the server's clock plus
// math.MaxInt64 ns; invalid ones are refused before anything is sent.
func TestDurationEdgesOnServer(t *testing.T) {
	q := fresh(t, "edges")
	ctx := tctx(t)
	const huge = time.Duration(math.MaxInt64)
	// around checks that the score of id in key is the server's clock
	// (between before and now) plus ms.
	around := func(key, id string, before, ms int64) {
		t.Helper()
		s := scoreInt(t, key, id)
		require.GreaterOrEqual(t, s, before+ms, "%s %s", key, id)
		require.LessOrEqual(t, s, serverMillis(t)+ms, "%s %s", key, id)
	}

	before := serverMillis(t)
	id, err := q.EnqueueIn(ctx, huge, []byte("far"))
	require.NoError(t, err)
	require.Equal(t, "delayed", row(t, q, id)["state"])
	around(q.keys.Delayed, id, before, maxDurationMillis)
	id, err = q.EnqueueAt(ctx, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), []byte("farther"))
	require.NoError(t, err, "a time past the longest duration saturates")
	around(q.keys.Delayed, id, before, maxDurationMillis)
	for _, at := range []time.Time{{}, time.Unix(0, 0)} {
		id, err = q.EnqueueAt(ctx, at, []byte("past"))
		require.NoError(t, err)
		require.LessOrEqual(t, scoreInt(t, q.keys.Delayed, id), serverMillis(t), "a past time is due at once")
	}
	_, err = q.EnqueueIn(ctx, math.MinInt64, []byte("past"))
	require.NoError(t, err)

	ids := enqueueN(t, q, 6)
	before = serverMillis(t)
	job, ok, err := q.Claim(ctx, huge)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, ids[0], job.ID)
	around(q.keys.Active, job.ID, before, maxDurationMillis)
	require.NoError(t, q.Extend(ctx, job.ID, job.Token, huge))
	jobs, err := q.ClaimBatch(ctx, huge, math.MaxInt)
	require.NoError(t, err)
	require.Len(t, jobs, 5, "a count past 2^53 claims what there is")

	require.NoError(t, q.Complete(ctx, job.ID, job.Token, huge))
	require.Equal(t, "completed", row(t, q, job.ID)["state"])
	pttl, err := strconv.ParseInt(do(t, "PTTL", q.keys.Job(job.ID)), 10, 64)
	require.NoError(t, err)
	require.Greater(t, pttl, int64(maxDurationMillis-60_000), "retention kept to the ms")
	done, err := q.CompleteBatch(ctx, []Ack{{jobs[0].ID, jobs[0].Token}}, huge)
	require.NoError(t, err)
	require.Equal(t, []bool{true}, done)

	before = serverMillis(t)
	out, err := q.Retry(ctx, jobs[1].ID, jobs[1].Token, huge, math.MaxInt, "later")
	require.NoError(t, err)
	require.Equal(t, RetryDelayed, out)
	around(q.keys.Delayed, jobs[1].ID, before, maxDurationMillis)
	out, err = q.Retry(ctx, jobs[2].ID, jobs[2].Token, math.MinInt64, 0, "dead")
	require.NoError(t, err)
	require.Equal(t, RetryDead, out)

	_, err = q.Promote(ctx, math.MaxInt)
	require.NoError(t, err)
	_, err = q.Reap(ctx, math.MaxInt, math.MaxInt)
	require.NoError(t, err)
	n, err := q.TrimDead(ctx, huge, math.MaxInt)
	require.NoError(t, err)
	require.Zero(t, n, "a dead job younger than 292 years stays")
	n, err = q.TrimDead(ctx, -1, math.MaxInt)
	require.NoError(t, err)
	require.Zero(t, n)

	// Refused host-side, each naming its argument: nothing sent.
	sent := sentCommands(t)
	for i, c := range []struct {
		arg string
		err error
	}{
		{"lease", func() error { _, _, err := q.Claim(ctx, 0); return err }()},
		{"lease", func() error { _, err := q.ClaimBatch(ctx, time.Microsecond, 1); return err }()},
		{"lease", q.Extend(ctx, jobs[3].ID, jobs[3].Token, -time.Hour)},
		{"retention", q.Complete(ctx, jobs[3].ID, jobs[3].Token, -1)},
		{"retention", func() error { _, _, err := q.SettleClaim(ctx, nil, math.MinInt64, time.Second, 1); return err }()},
	} {
		var ae *ArgError
		require.ErrorAs(t, c.err, &ae, "case %d", i)
		require.Equal(t, c.arg, ae.Arg, "case %d", i)
	}
	require.Equal(t, sent, sentCommands(t), "nothing sent")
	require.Equal(t, "active", row(t, q, jobs[3].ID)["state"])
}

// TestSettleClaimHugeDurations: one settle_claim carries completions, a
// retry whose delay is math.MaxInt64 (and max attempts past 2^53), one
// whose delay is negative, a lease of math.MaxInt64 and a count past 2^53:
// the server takes the whole round, each outcome settled as it says.
func TestSettleClaimHugeDurations(t *testing.T) {
	q := fresh(t, "settle-edges")
	ctx := tctx(t)
	enqueueN(t, q, 6)
	jobs, err := q.ClaimBatch(ctx, time.Minute, 4)
	require.NoError(t, err)
	before := serverMillis(t)
	settled, claimed, err := q.SettleClaim(ctx, []Outcome{
		{Kind: OutcomeComplete, ID: jobs[0].ID, Token: jobs[0].Token},
		{Kind: OutcomeRetry, ID: jobs[1].ID, Token: jobs[1].Token, Delay: math.MaxInt64, MaxAttempts: math.MaxInt, Error: "huge"},
		{Kind: OutcomeComplete, ID: jobs[2].ID, Token: jobs[2].Token},
		{Kind: OutcomeRetry, ID: jobs[3].ID, Token: jobs[3].Token, Delay: math.MinInt64, MaxAttempts: 5, Error: "now"},
	}, 0, math.MaxInt64, math.MaxInt)
	require.NoError(t, err)
	require.Equal(t, []Settled{SettledCompleted, SettledDelayed, SettledCompleted, SettledRequeued}, settled)
	require.Len(t, claimed, 3, "the two left and the one requeued")
	require.Empty(t, row(t, q, jobs[0].ID))
	require.Empty(t, row(t, q, jobs[2].ID))
	require.Equal(t, "delayed", row(t, q, jobs[1].ID)["state"])
	require.Equal(t, "huge", row(t, q, jobs[1].ID)["error"])
	require.GreaterOrEqual(t, scoreInt(t, q.keys.Delayed, jobs[1].ID), before+maxDurationMillis)
	for _, j := range claimed {
		require.GreaterOrEqual(t, scoreInt(t, q.keys.Active, j.ID), before+maxDurationMillis)
	}
}

// TestWorkerRoundHugeBackoff: a worker's round settles one retry whose
// backoff is math.MaxInt64 with two completions: the server takes the
// round, the completions complete, the retry waits (its due time the
// server's clock plus 292 years), and nothing is left active to be reaped
// and run again.
func TestWorkerRoundHugeBackoff(t *testing.T) {
	q := fresh(t, "round-edges")
	ctx := tctx(t)
	ids := enqueueN(t, q, 3)
	jobs, err := q.ClaimBatch(ctx, time.Minute, 3)
	require.NoError(t, err)
	var ev events
	w, err := NewWorker(q, HandlerFunc(func(context.Context, *Job) error { return nil }), WorkerConfig{
		Backoff: func(int64, error) time.Duration { return math.MaxInt64 }, OnEvent: ev.add,
	})
	require.NoError(t, err)
	w.life = ctx // one round alone, without starting the worker
	failure := errors.New("failed")
	r := &round{inHand: 3, pending: []done{
		{job: jobs[0], kind: OutcomeComplete},
		{job: jobs[1], kind: OutcomeRetry, err: failure, delay: w.cfg.defaultBackoff(jobs[1].Token), max: w.cfg.MaxAttempts},
		{job: jobs[2], kind: OutcomeComplete},
	}}
	w.exchange(r, 0)
	st := w.Stats()
	require.Zero(t, st.Errors, "%+v", ev.all)
	require.EqualValues(t, 2, st.Completed)
	require.EqualValues(t, 1, st.Retried)
	require.Zero(t, r.inHand)
	require.Empty(t, row(t, q, ids[0]))
	require.Empty(t, row(t, q, ids[2]))
	require.Equal(t, map[string]string{"state": "delayed", "attempts": "1", "payload": "p1", "error": "failed"}, row(t, q, ids[1]))
	require.Equal(t, "0", do(t, "EXISTS", q.keys.Active))
}

// TestWorkerHugeBackoffRunsOnce: a running worker whose handler fails one
// job of five, with a backoff of math.MaxInt64 and a short lease under a
// busy reaper: the four complete, the fifth waits in delayed, none is
// left active (so none can be reaped and run again), and each ran once.
func TestWorkerHugeBackoffRunsOnce(t *testing.T) {
	q := fresh(t, "once")
	ids := enqueueN(t, q, 5)
	var mu sync.Mutex
	runs := map[string]int{}
	started := make(chan struct{}, 100)
	all := make(chan struct{})
	var outcomes atomic.Int64
	finished := make(chan struct{})
	var ev events
	startWorker(t, q, HandlerFunc(func(_ context.Context, j *Job) error {
		mu.Lock()
		runs[j.ID]++
		mu.Unlock()
		started <- struct{}{}
		<-all // the five finish together, to share rounds
		if string(j.Payload) == "p2" {
			return errors.New("failed")
		}
		return nil
	}), WorkerConfig{
		Concurrency: 5, Lease: 300 * time.Millisecond, ReapInterval: 20 * time.Millisecond,
		PollMax: 10 * time.Millisecond, Retention: time.Hour,
		Backoff: func(int64, error) time.Duration { return math.MaxInt64 },
		OnEvent: func(e Event) {
			ev.add(e)
			switch e.Kind {
			case EventCompleted, EventRetried, EventDead, EventError, EventStale:
				if outcomes.Add(1) == 5 {
					close(finished)
				}
			}
		},
	})
	for range 5 {
		recv(t, started, "a handler")
	}
	close(all)
	recv(t, finished, "five outcomes")
	ev.mu.Lock()
	for _, e := range ev.all {
		require.NotEqual(t, EventError, e.Kind, "%+v", e)
	}
	ev.mu.Unlock()
	for i, id := range ids {
		want := "completed"
		if i == 2 {
			want = "delayed"
		}
		require.Equal(t, want, row(t, q, id)["state"], "job %d", i)
	}
	require.Equal(t, "0", do(t, "EXISTS", q.keys.Active), "nothing left to reap")
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		require.Equal(t, 1, runs[id], "%s ran once", id)
	}
}

// TestWorkerSkipsUnsettleableJob: a claimed row whose id no transition of
// this package takes (written by another runtime: no branded id) is not
// run, so that its outcome does not refuse the round that carries the
// others: they complete; it is reported and left to the reaper.
func TestWorkerSkipsUnsettleableJob(t *testing.T) {
	q := fresh(t, "unsettleable")
	ctx := tctx(t)
	ids := enqueueN(t, q, 2)
	do(t, "HSET", q.keys.Base+"job:JOBbad", "state", "pending", "attempts", "0", "payload", "x")
	do(t, "ZADD", q.keys.Pending, "0", "JOBbad")
	var ev events
	w, err := NewWorker(q, HandlerFunc(func(context.Context, *Job) error { return nil }), WorkerConfig{OnEvent: ev.add})
	require.NoError(t, err)
	w.life = ctx
	r := &round{}
	w.exchange(r, 3)
	require.EqualValues(t, 3, w.Stats().Claimed)
	// The handlers' part: each job handed over completes.
	for _, c := range w.out.Close(nil) {
		r.pending = append(r.pending, done{job: *c.job, kind: OutcomeComplete})
	}
	w.exchange(r, 0)
	require.Zero(t, r.inHand)
	for _, id := range ids {
		require.Empty(t, row(t, q, id), "%s completed", id)
	}
	bad := ev.of("JOBbad")
	require.Len(t, bad, 1)
	require.Equal(t, EventError, bad[0].Kind)
	require.ErrorIs(t, bad[0].Err, ErrInvalidID)
	require.Equal(t, "active", row(t, q, "JOBbad")["state"], "left to the reaper")
}

// TestWorkerIntervalEdges: the longest intervals never turn into short
// ones: jitter saturates, and the default backoff doubles up to
// BackoffMax without overflowing, whatever the attempt.
func TestWorkerIntervalEdges(t *testing.T) {
	for range 1000 {
		require.GreaterOrEqual(t, jitter(math.MaxInt64), time.Duration(float64(math.MaxInt64)*0.8))
	}
	c, err := WorkerConfig{BackoffMax: math.MaxInt64}.withDefaults()
	require.NoError(t, err)
	for attempt := int64(1); attempt < 200; attempt++ {
		// BackoffBase (1 s) doubled per attempt, at most BackoffMax; at
		// least half of that with the jitter.
		floor := math.Min(1e9*math.Pow(2, float64(attempt-1)), math.MaxInt64) / 2
		d := c.defaultBackoff(attempt)
		require.GreaterOrEqual(t, float64(d), floor*0.999, "attempt %d: %v", attempt, d)
	}
	require.GreaterOrEqual(t, c.defaultBackoff(math.MaxInt64), time.Duration(math.MaxInt64/2))
}

// TestRequeueDeadTimeEdges: the time bounds of a DeadFilter reach the
// script within its range, whatever the times: one past the year 287,396
// (2^53 ms) is no bound, one before 1970 is 0.
func TestRequeueDeadTimeEdges(t *testing.T) {
	q := fresh(t, "requeue-edges")
	ctx := tctx(t)
	ids := enqueueN(t, q, 2)
	jobs, err := q.ClaimBatch(ctx, time.Minute, 2)
	require.NoError(t, err)
	for _, j := range jobs {
		out, err := q.Retry(ctx, j.ID, j.Token, 0, 0, "boom")
		require.NoError(t, err)
		require.Equal(t, RetryDead, out)
	}
	far := time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC)
	n, err := q.RequeueDead(ctx, DeadFilter{Since: far})
	require.NoError(t, err)
	require.Zero(t, n, "nothing died after the year 300,000")
	n, err = q.RequeueDead(ctx, DeadFilter{Since: time.Date(-5000, 1, 1, 0, 0, 0, 0, time.UTC), Before: far, Limit: 1})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	n, err = q.RequeueDead(ctx, DeadFilter{Before: far, Limit: math.MaxInt})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	for _, id := range ids {
		require.Equal(t, "pending", row(t, q, id)["state"])
	}
}
