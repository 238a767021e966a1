package emq

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestOpsWithRunningWorker runs every operation against a queue while a
// worker drains it: jobs fail once into dead (ErrSkipRetry), the operator
// requeues dead jobs (by id and by filter), deletes random jobs in
// whatever state they are, trims the dead set and reads Stats, and the
// worker's own trimmer runs too. Nothing is lost: at the end every id is
// completed exactly once, or deleted, or trimmed, and none of those
// twice; the counts add up.
func TestOpsWithRunningWorker(t *testing.T) {
	q := fresh(t, "ops-worker")
	ctx := tctx(t)
	n := 1500
	if testing.Short() {
		n = 400
	}
	res, err := q.EnqueueBulk(ctx, make([][]byte, n))
	require.NoError(t, err)
	all := make([]string, n)
	for i, r := range res {
		require.NoError(t, r.Err)
		all[i] = r.ID
	}

	var mu sync.Mutex
	completed := map[string]int{}
	var stale int
	w := startWorker(t, q, HandlerFunc(func(_ context.Context, j *Job) error {
		if j.Token == 1 && j.ID[IDLen-1]%3 == 0 {
			return ErrSkipRetry // dead at once; an operator requeues it
		}
		return nil
	}), WorkerConfig{
		Concurrency: 8, PollMin: time.Millisecond, PollMax: 5 * time.Millisecond,
		DeadMaxCount: 40, DeadMaxAge: -1, TrimInterval: 3 * time.Millisecond, MaintainLimit: 10,
		OnEvent: func(e Event) {
			mu.Lock()
			defer mu.Unlock()
			switch e.Kind {
			case EventCompleted:
				completed[e.Job.ID]++
			case EventStale:
				stale++
			}
		},
	})

	deleted := map[string]State{}
	opTrimmed := 0
	rng := rand.New(rand.NewPCG(12, 34))
	seen := map[string]int{}
	for round := 0; ; round++ {
		st, err := q.Stats(ctx)
		require.NoError(t, err)
		require.LessOrEqual(t, st.Due, st.Delayed)
		require.LessOrEqual(t, st.Expired, st.Active)
		if st.Pending+st.Active+st.Delayed+st.Dead == 0 {
			break
		}
		require.Less(t, round, 100_000, "the queue never drained: %+v", st)
		switch round % 4 {
		case 0: // requeue the oldest dead jobs by id
			page, err := q.Browse(ctx, StateDead, 0, 5)
			require.NoError(t, err)
			ids := make([]string, len(page))
			for i, j := range page {
				ids[i] = j.ID
			}
			done, err := q.RequeueBatch(ctx, ids)
			require.NoError(t, err)
			for _, ok := range done {
				if ok {
					seen["requeued by id"]++
				}
			}
		case 1: // requeue by filter
			moved, err := q.RequeueDead(ctx, DeadFilter{ErrorPrefix: "emq: skip retry", Limit: 1 + rng.IntN(20)})
			require.NoError(t, err)
			seen["requeued by filter"] += moved
		case 2: // delete random jobs, in whatever state
			ids := make([]string, 3)
			for i := range ids {
				ids[i] = all[rng.IntN(n)]
			}
			was, err := q.DeleteBatch(ctx, ids)
			require.NoError(t, err)
			for i, s := range was {
				if s == "" {
					continue
				}
				_, twice := deleted[ids[i]]
				require.False(t, twice, "%s deleted twice", ids[i])
				require.NotEqual(t, StateCompleted, s, "retention 0 keeps no completed row")
				deleted[ids[i]] = s
				seen["deleted "+string(s)]++
			}
		case 3: // trim
			removed, err := q.TrimDead(ctx, -1, 30+rng.IntN(20))
			require.NoError(t, err)
			opTrimmed += removed
		}
	}
	require.NoError(t, w.Shutdown(ctx))
	t.Logf("%d jobs: %d completed, %d deleted, %d trimmed by the operator, %d by the worker, %d stale; %v",
		n, len(completed), len(deleted), opTrimmed, w.Stats().Trimmed, stale, seen)

	for _, key := range []string{q.keys.Pending, q.keys.Active, q.keys.Delayed, q.keys.Dead} {
		require.Empty(t, do(t, "ZRANGE", key, "0", "-1"), key)
	}
	gone := 0
	for _, id := range all {
		c, wasDeleted := completed[id], deleted[id] != ""
		require.LessOrEqual(t, c, 1, "%s completed %d times", id, c)
		require.False(t, c == 1 && wasDeleted, "%s completed and deleted", id)
		require.Empty(t, row(t, q, id), "%s left a row", id)
		if c == 0 && !wasDeleted {
			gone++ // trimmed from dead
		}
	}
	require.Equal(t, opTrimmed+int(w.Stats().Trimmed), gone, "every other job was trimmed from dead")
	require.Positive(t, seen["requeued by id"]+seen["requeued by filter"])
}
