package emq

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/pipeline"
)

// inState puts a fresh job in state s through the verbs (completed: kept
// for an hour) and returns its id, with its attempts.
func inState(t *testing.T, q *Queue, s State) (string, int64) {
	t.Helper()
	ctx := tctx(t)
	if s == StateDelayed {
		id, err := q.EnqueueIn(ctx, time.Hour, []byte("later"))
		require.NoError(t, err)
		return id, 0
	}
	id, err := q.Enqueue(ctx, []byte(string(s)))
	require.NoError(t, err)
	if s == StatePending {
		return id, 0
	}
	// Claim exactly this job: pause nothing, but move it to the head.
	job := claimID(t, q, id)
	switch s {
	case StateActive:
	case StateDead:
		out, err := q.Retry(ctx, id, job.Token, 0, 1, "boom: "+id)
		require.NoError(t, err)
		require.Equal(t, RetryDead, out)
	case StateCompleted:
		require.NoError(t, q.Complete(ctx, id, job.Token, time.Hour))
	default:
		t.Fatalf("inState(%q)", s)
	}
	return id, job.Token
}

// claimID claims jobs until it gets id, putting the others back in
// pending untouched (they keep their attempts + 1: only id matters).
func claimID(t *testing.T, q *Queue, id string) Job {
	t.Helper()
	ctx := tctx(t)
	var others []Job
	defer func() {
		for _, j := range others {
			_, err := q.Retry(ctx, j.ID, j.Token, 0, 1<<30, "")
			require.NoError(t, err)
		}
	}()
	for {
		job, ok, err := q.Claim(ctx, time.Hour)
		require.NoError(t, err)
		require.True(t, ok, "claimed everything without finding %s", id)
		if job.ID == id {
			return job
		}
		others = append(others, job)
	}
}

// where returns the sets holding id, read with plain commands.
func where(t *testing.T, q *Queue, id string) []State {
	t.Helper()
	var in []State
	for _, s := range []State{StatePending, StateActive, StateDelayed, StateDead} {
		key, _ := q.setKey(s)
		if score(t, key, id) != "" {
			in = append(in, s)
		}
	}
	return in
}

// fillDead writes n dead jobs straight into the keyspace, in one
// pipeline: job i died at at(i) (ms) with error errText(i). It returns
// their ids in mint order.
func fillDead(t *testing.T, q *Queue, n int, at func(i int) int64, errText func(i int) string) []string {
	t.Helper()
	ids := make([]string, n)
	var b pipeline.Batch
	for i := range ids {
		ids[i] = q.ids.Next()
		b.Add("HSET", q.keys.Job(ids[i]), "state", "dead", "attempts", "3", "payload", strconv.Itoa(i), "error", errText(i))
		b.Add("ZADD", q.keys.Dead, strconv.FormatInt(at(i), 10), ids[i])
	}
	require.NoError(t, b.Exec(tctx(t), q.sender))
	for i := range b.Len() {
		require.NoError(t, b.Err(i))
	}
	return ids
}
